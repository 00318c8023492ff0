/* writer_intern.c - interning of strings, frames and stacks for the writer,
 * and the definition chunks that carry them.
 *
 * Same content gives the same id. Stacks are stored as a parent-pointer trie:
 * a node is (parent node, frame id), the root's children are outermost
 * frames, and a stack id names the node of its innermost frame. Nodes and
 * stacks have separate id spaces so that the ids events carry stay small.
 * Everything interned is written before the next events chunk. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "memhist/writer.h"
#include "writer_int.h"

#define DEFS_PER_CHUNK 8192u
#define DEF_BYTES_PER_CHUNK (4u << 20)

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15u ^ n;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        h = (h ^ v) * 0xFF51AFD7ED558CCDu;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t v = 0;
    memcpy(&v, p, n);
    h = (h ^ v) * 0xC4CEB9FE1A85EC53u;
    return h ^ (h >> 29);
}

static int itab_grow_slots(struct mh__itab *t)
{
    uint32_t n = t->nslots ? t->nslots * 2 : 256;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return MH_ENOMEM;
    for (uint32_t id = 1; id <= t->count; id++) {
        uint64_t h = hash_bytes(t->arena + t->off[id - 1], t->len[id - 1]);
        uint32_t i = (uint32_t)h & (n - 1);
        while (slots[i])
            i = (i + 1) & (n - 1);
        slots[i] = id;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
    return 0;
}

static int itab_add(struct mh__itab *t, const void *key, size_t len, uint32_t slot)
{
    if (t->count == MH__MAX_IDS)
        return MH_ELIMIT;
    if (t->count == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 256;
        size_t *off = realloc(t->off, sizeof *off * cap);
        if (off)
            t->off = off;
        uint32_t *ln = realloc(t->len, sizeof *ln * cap);
        if (ln)
            t->len = ln;
        if (!off || !ln)
            return MH_ENOMEM;
        t->cap = cap;
    }
    if (!t->arena || t->alen + len > t->acap) { /* never NULL, even for "" */
        size_t cap = t->acap ? t->acap * 2 : 4096;
        while (cap < t->alen + len)
            cap *= 2;
        uint8_t *a = realloc(t->arena, cap);
        if (!a)
            return MH_ENOMEM;
        t->arena = a;
        t->acap = cap;
    }
    memcpy(t->arena + t->alen, key, len);
    t->off[t->count] = t->alen;
    t->len[t->count] = (uint32_t)len;
    t->alen += len;
    t->slots[slot] = ++t->count;
    return (int)t->count;
}

/* Returns the id of `key`, adding it if new; negative on error. */
static int64_t itab_intern(struct mh__itab *t, const void *key, size_t len)
{
    if ((t->count + 1) * 2 > t->nslots && itab_grow_slots(t))
        return MH_ENOMEM;
    uint32_t i = (uint32_t)hash_bytes(key, len) & (t->nslots - 1);
    for (;; i = (i + 1) & (t->nslots - 1)) {
        uint32_t id = t->slots[i];
        if (!id)
            return itab_add(t, key, len, i);
        if (t->len[id - 1] == len && !memcmp(t->arena + t->off[id - 1], key, len))
            return id;
    }
}

static const uint8_t *itab_key(const struct mh__itab *t, uint32_t id, uint32_t *len)
{
    *len = t->len[id - 1];
    return t->arena + t->off[id - 1];
}

static void itab_free(struct mh__itab *t)
{
    free(t->arena);
    free(t->off);
    free(t->len);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

void mh__w_intern_free(struct mh_writer *w)
{
    itab_free(&w->strings);
    itab_free(&w->frames);
    itab_free(&w->nodes);
    itab_free(&w->stacks);
}

int64_t mh_writer_intern_string(struct mh_writer *w, const char *s, size_t len)
{
    if (!w || (!s && len) || w->closed)
        return MH_EINVAL;
    if (len > MH__MAX_STRING_BYTES)
        return MH_ELIMIT;
    return itab_intern(&w->strings, s ? s : "", len);
}

int64_t mh_writer_intern_frame(struct mh_writer *w, const char *file, const char *func,
                               uint32_t line)
{
    if (!w || w->closed)
        return MH_EINVAL;
    int64_t f = mh_writer_intern_string(w, file ? file : "", file ? strlen(file) : 0);
    if (f < 0)
        return f;
    int64_t g = mh_writer_intern_string(w, func ? func : "", func ? strlen(func) : 0);
    if (g < 0)
        return g;
    uint32_t key[3] = {(uint32_t)f, (uint32_t)g, line};
    return itab_intern(&w->frames, key, sizeof key);
}

int64_t mh_writer_intern_stack(struct mh_writer *w, const uint32_t *frames, size_t nframes)
{
    if (!w || (!frames && nframes) || w->closed)
        return MH_EINVAL;
    if (nframes > MH__MAX_STACK_DEPTH)
        return MH_ELIMIT;
    if (nframes == 0)
        return 0;
    uint32_t node = 0;
    for (size_t i = nframes; i-- > 0;) {
        if (frames[i] == 0 || frames[i] > w->frames.count)
            return MH_EINVAL;
        uint32_t key[2] = {node, frames[i]};
        int64_t id = itab_intern(&w->nodes, key, sizeof key);
        if (id < 0)
            return id;
        node = (uint32_t)id;
    }
    return itab_intern(&w->stacks, &node, sizeof node);
}

/* One definition chunk per table holding ids written+1 .. count, split so
 * no chunk grows past the limits. Payload: [first_id, entries...]. */
static int write_table(struct mh_writer *w, struct mh__itab *t, uint8_t type)
{
    while (t->written < t->count && !w->err) {
        uint32_t first = t->written + 1, n = 0;
        size_t bytes = 0;
        while (first + n <= t->count && n < DEFS_PER_CHUNK && bytes < DEF_BYTES_PER_CHUNK)
            bytes += t->len[first + n++ - 1];
        size_t per = type == MH__CH_STRINGS ? 1 : t->len[0] / 4;
        size_t start = mh__w_begin(w);
        msgpack_pack_array(&w->pk, 1 + n * per);
        msgpack_pack_uint32(&w->pk, first);
        for (uint32_t id = first; id < first + n; id++) {
            uint32_t len;
            const uint8_t *k = itab_key(t, id, &len);
            if (type == MH__CH_STRINGS) {
                msgpack_pack_str(&w->pk, len);
                msgpack_pack_str_body(&w->pk, k, len);
                continue;
            }
            for (size_t j = 0; j < per; j++) {
                uint32_t v;
                memcpy(&v, k + 4 * j, 4);
                msgpack_pack_uint32(&w->pk, v);
            }
        }
        mh__w_end(w, start, type);
        t->written += n;
    }
    return w->err;
}

int mh__w_write_defs(struct mh_writer *w)
{
    write_table(w, &w->strings, MH__CH_STRINGS);
    write_table(w, &w->frames, MH__CH_FRAMES);
    write_table(w, &w->nodes, MH__CH_NODES);
    write_table(w, &w->stacks, MH__CH_STACKS);
    return w->err;
}
