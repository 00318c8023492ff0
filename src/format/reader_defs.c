/* reader_defs.c - definitions kept by the reader (strings, frames, stack
 * trie, stacks, metadata, devices), the header chunk, and the
 * accessors that hand them out.
 *
 * Every pointer handed out points into an arena that lives until
 * mh_reader_close, so it stays valid across later chunks and rewinds.
 * Definitions arrive in id order; a chunk repeating ids already known (after
 * a rewind) is skipped, one that leaves a gap is damage. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "reader_int.h"

struct mh__arena_block {
    struct mh__arena_block *next;
    size_t used, cap;
    _Alignas(8) uint8_t data[];
};

static void *arena_alloc(struct mh__arena *a, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    struct mh__arena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

static char *arena_str(struct mh__arena *a, const char *s, uint32_t len)
{
    char *d = arena_alloc(a, (size_t)len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = 0;
    }
    return d;
}

static void *vec_push(struct mh__vec *v, size_t elem)
{
    if (v->n == v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 64;
        void *p = realloc(v->p, elem * cap);
        if (!p)
            return NULL;
        v->p = p;
        v->cap = cap;
    }
    return (char *)v->p + elem * v->n++;
}

void mh__r_defs_free(struct mh_reader *r)
{
    for (struct mh__arena_block *b = r->arena.head, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    r->arena.head = NULL;
    struct mh__vec *vs[] = {&r->strings, &r->frames, &r->nodes, &r->stacks, &r->meta, &r->devices};
    for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
        free(vs[i]->p);
}

int mh__mp_skip(struct mh__mp *m, int depth)
{
    uint64_t v;
    uint32_t n;
    const char *s;
    if (depth > 32 || m->p >= m->end)
        return -1;
    if (mh__mp_nil(m) || mh__mp_int(m, &v) >= 0 || mh__mp_str(m, &s, &n) == 0)
        return 0;
    uint8_t b = *m->p;
    if (b == 0xc2 || b == 0xc3) {
        m->p++;
        return 0;
    }
    int is_map = mh__mp_map(m, &n) == 0;
    if (!is_map && mh__mp_array(m, &n) != 0)
        return -1;
    for (uint64_t i = 0; i < (uint64_t)n * (is_map ? 2 : 1); i++)
        if (mh__mp_skip(m, depth + 1))
            return -1;
    return 0;
}

static int set_meta(struct mh_reader *r, const char *k, uint32_t kl, const char *v, uint32_t vl)
{
    struct mh__rkv *kv = r->meta.p;
    uint32_t i = 0;
    while (i < r->meta.n && (strlen(kv[i].key) != kl || memcmp(kv[i].key, k, kl)))
        i++;
    if (i == r->meta.n) {
        if (r->meta.n == MH__MAX_META + MH__HEADER_META || !(kv = vec_push(&r->meta, sizeof *kv)))
            return MH_ELIMIT;
        if (!(kv->key = arena_str(&r->arena, k, kl))) {
            r->meta.n--;
            return MH_ENOMEM;
        }
        i = r->meta.n - 1;
    }
    kv = r->meta.p;
    const char *val = arena_str(&r->arena, v, vl);
    kv[i].value = val ? val : "";
    return val ? 0 : MH_ENOMEM;
}

static int set_meta_u64(struct mh_reader *r, const char *k, uint64_t v)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    return set_meta(r, k, (uint32_t)strlen(k), buf, (uint32_t)n);
}

/* Header: a map; known keys become metadata ("source", "library_version",
 * "host", "pid", "start_ns"), unknown keys are skipped. */
int mh__r_header(struct mh_reader *r, const uint8_t *p, size_t len, uint64_t off)
{
    struct mh__mp m = {p, p + len};
    uint32_t n, kl, vl;
    const char *k, *v;
    uint64_t u;
    if (mh__mp_map(&m, &n))
        return mh__r_fail(r, MH_EFORMAT, off, "header is not a map");
    for (uint32_t i = 0; i < n; i++) {
        if (mh__mp_str(&m, &k, &kl))
            return mh__r_fail(r, MH_EFORMAT, off, "header key is not a string");
        int rc = 0;
        if (kl == 3 && !memcmp(k, "pid", 3) && mh__mp_uint(&m, &u) == 0)
            rc = set_meta_u64(r, "pid", u);
        else if (kl == 6 && !memcmp(k, "format", 6) && mh__mp_uint(&m, &u) == 0) {
            if (u != r->sum.format_version)
                return mh__r_fail(r, MH_EFORMAT, off,
                                  "the header says format %llu but the preamble says %u",
                                  (unsigned long long)u, r->sum.format_version);
        } else if (kl == 8 && !memcmp(k, "start_ns", 8) && mh__mp_uint(&m, &u) == 0)
            rc = set_meta_u64(r, "start_ns", u);
        else if (kl == 7 && !memcmp(k, "library", 7) && mh__mp_str(&m, &v, &vl) == 0)
            rc = set_meta(r, "library_version", 15, v, vl);
        else if (((kl == 6 && !memcmp(k, "source", 6)) || (kl == 4 && !memcmp(k, "host", 4))) &&
                 mh__mp_str(&m, &v, &vl) == 0)
            rc = set_meta(r, k, kl, v, vl);
        else if (mh__mp_skip(&m, 0))
            return mh__r_fail(r, MH_EFORMAT, off, "malformed header value");
        if (rc)
            return mh__r_fail(r, rc, off, "header metadata");
    }
    return 0;
}

/* Reads [first_id, ...] and returns how many leading entries of `per`
 * integers to skip because their ids are already known; -1 on a gap. */
static int64_t defs_start(struct mh__mp *m, uint32_t *n, uint32_t per, uint32_t known)
{
    uint64_t first;
    if (mh__mp_array(m, n) || *n < 1 || (*n - 1) % per || mh__mp_uint(m, &first) || first == 0 ||
        first > (uint64_t)known + 1)
        return -1;
    *n = (*n - 1) / per;
    uint64_t skip = known + 1 - first;
    return (int64_t)(skip < *n ? skip : *n);
}

static int defs_strings(struct mh_reader *r, struct mh__mp *m)
{
    uint32_t n, len;
    const char *s;
    int64_t skip = defs_start(m, &n, 1, r->strings.n);
    if (skip < 0)
        return MH_EFORMAT;
    for (uint32_t i = 0; i < n; i++) {
        if (mh__mp_str(m, &s, &len))
            return MH_EFORMAT;
        if (i < skip)
            continue;
        if (r->strings.n >= MH__MAX_IDS || len > MH__MAX_STRING_BYTES)
            return MH_ELIMIT;
        const char **slot = vec_push(&r->strings, sizeof *slot);
        if (!slot || !(*slot = arena_str(&r->arena, s, len)))
            return MH_ENOMEM;
    }
    return 0;
}

/* Reads `per` unsigned 32-bit integers; -1 if any is missing or larger. */
static int read_u32s(struct mh__mp *m, uint32_t *v, int per)
{
    for (int j = 0; j < per; j++) {
        uint64_t u;
        if (mh__mp_uint(m, &u) || u > UINT32_MAX)
            return -1;
        v[j] = (uint32_t)u;
    }
    return 0;
}

static int defs_frames(struct mh_reader *r, struct mh__mp *m)
{
    uint32_t n, v[3];
    int64_t skip = defs_start(m, &n, 3, r->frames.n);
    if (skip < 0)
        return MH_EFORMAT;
    for (uint32_t i = 0; i < n; i++) {
        if (read_u32s(m, v, 3) || v[0] > r->strings.n || v[1] > r->strings.n)
            return MH_EFORMAT;
        if (i < skip)
            continue;
        struct mh__rframe *f = r->frames.n < MH__MAX_IDS ? vec_push(&r->frames, sizeof *f) : NULL;
        if (!f)
            return MH_ELIMIT;
        *f = (struct mh__rframe){v[0], v[1], v[2]};
    }
    return 0;
}

static int defs_nodes(struct mh_reader *r, struct mh__mp *m)
{
    uint32_t n, v[2];
    int64_t skip = defs_start(m, &n, 2, r->nodes.n);
    if (skip < 0)
        return MH_EFORMAT;
    for (uint32_t i = 0; i < n; i++) {
        if (read_u32s(m, v, 2))
            return MH_EFORMAT;
        if (i < skip)
            continue;
        if (v[0] > r->nodes.n || v[1] == 0 || v[1] > r->frames.n)
            return MH_EFORMAT;
        const struct mh__rnode *nodes = r->nodes.p;
        uint32_t depth = v[0] ? nodes[v[0] - 1].depth + 1 : 1;
        if (depth > MH__MAX_STACK_DEPTH || r->nodes.n >= MH__MAX_IDS)
            return MH_ELIMIT;
        struct mh__rnode *nd = vec_push(&r->nodes, sizeof *nd);
        if (!nd)
            return MH_ENOMEM;
        *nd = (struct mh__rnode){v[0], v[1], depth, NULL};
    }
    return 0;
}

/* A node's frames are materialized once, innermost first, by walking the
 * trie to the root, and shared by every stack naming that node; the total is
 * bounded relative to the input size (fmt.h). */
static int defs_stacks(struct mh_reader *r, struct mh__mp *m)
{
    uint32_t n, node;
    int64_t skip = defs_start(m, &n, 1, r->stacks.n);
    if (skip < 0)
        return MH_EFORMAT;
    for (uint32_t i = 0; i < n; i++) {
        if (read_u32s(m, &node, 1) || node == 0 || node > r->nodes.n)
            return MH_EFORMAT;
        if (i < skip)
            continue;
        struct mh__rnode *nodes = r->nodes.p;
        uint32_t depth = nodes[node - 1].depth;
        if (r->stacks.n >= MH__MAX_IDS)
            return MH_ELIMIT;
        if (!nodes[node - 1].frames) {
            r->stack_frames += depth;
            if (r->stack_frames > MH__STACK_FRAMES_BASE + MH__STACK_FRAMES_PER_BYTE * r->consumed)
                return MH_ELIMIT;
            uint32_t *fr = arena_alloc(&r->arena, sizeof *fr * depth);
            if (!fr)
                return MH_ENOMEM;
            for (uint32_t j = 0, k = node; j < depth; j++, k = nodes[k - 1].parent)
                fr[j] = nodes[k - 1].frame;
            nodes[node - 1].frames = fr;
        }
        struct mh__rstack *st = vec_push(&r->stacks, sizeof *st);
        if (!st)
            return MH_ENOMEM;
        *st = (struct mh__rstack){nodes[node - 1].frames, depth};
    }
    return 0;
}

static int defs_meta(struct mh_reader *r, struct mh__mp *m)
{
    uint32_t n, kl, vl;
    const char *k, *v;
    if (mh__mp_map(m, &n))
        return MH_EFORMAT;
    for (uint32_t i = 0; i < n; i++) {
        if (mh__mp_str(m, &k, &kl) || mh__mp_str(m, &v, &vl))
            return MH_EFORMAT;
        if (kl > MH__MAX_STRING_BYTES || vl > MH__MAX_STRING_BYTES)
            return MH_ELIMIT;
        int rc = set_meta(r, k, kl, v, vl);
        if (rc)
            return rc;
    }
    return 0;
}

static int defs_devices(struct mh_reader *r, struct mh__mp *m)
{
    uint32_t n, k, nl;
    const char *name;
    uint64_t dev, total;
    if (mh__mp_array(m, &n))
        return MH_EFORMAT;
    for (uint32_t i = 0; i < n; i++) {
        int neg;
        if (mh__mp_array(m, &k) || k != 3 || (neg = mh__mp_int(m, &dev)) < 0 ||
            mh__mp_str(m, &name, &nl) || mh__mp_uint(m, &total))
            return MH_EFORMAT;
        if ((int64_t)dev < -1 || (!neg && dev > INT16_MAX) || nl > MH__MAX_STRING_BYTES)
            return MH_EFORMAT;
        struct mh_device_info *d = r->devices.p;
        uint32_t j = 0;
        while (j < r->devices.n && d[j].device != (int)(int64_t)dev)
            j++;
        if (j == r->devices.n &&
            (r->devices.n == MH__MAX_DEVICES || !vec_push(&r->devices, sizeof *d)))
            return MH_ELIMIT;
        d = r->devices.p;
        d[j] = (struct mh_device_info){(int)(int64_t)dev, arena_str(&r->arena, name, nl), total};
        if (!d[j].name) {
            d[j].name = "";
            return MH_ENOMEM;
        }
    }
    return 0;
}

int mh__r_defs(struct mh_reader *r, uint8_t type, const uint8_t *p, size_t len, uint64_t off)
{
    static const char *const what[] = {"",       "",         "strings", "frames", "stack nodes",
                                       "stacks", "metadata", "devices"};
    struct mh__mp m = {p, p + len};
    int rc = MH_EFORMAT;
    switch (type) {
    case MH__CH_STRINGS: rc = defs_strings(r, &m); break;
    case MH__CH_FRAMES: rc = defs_frames(r, &m); break;
    case MH__CH_NODES: rc = defs_nodes(r, &m); break;
    case MH__CH_STACKS: rc = defs_stacks(r, &m); break;
    case MH__CH_META: rc = defs_meta(r, &m); break;
    case MH__CH_DEVICES: rc = defs_devices(r, &m); break;
    }
    if (rc)
        return mh__r_fail(r, rc, off, "%s chunk: %s", what[type],
                          rc == MH_EFORMAT  ? "malformed or out of order"
                          : rc == MH_ENOMEM ? "out of memory"
                                            : "exceeds a limit (a file bigger than its content)");
    return 0;
}

const char *mh_reader_string(const struct mh_reader *r, uint32_t id)
{
    if (!r || id == 0 || id > r->strings.n)
        return NULL;
    return ((const char *const *)r->strings.p)[id - 1];
}

int mh_reader_frame(const struct mh_reader *r, uint32_t id, struct mh_frame *out)
{
    if (!r || !out)
        return MH_EINVAL;
    if (id == 0 || id > r->frames.n)
        return MH_ENOTFOUND;
    const struct mh__rframe *f = (const struct mh__rframe *)r->frames.p + (id - 1);
    const char *file = mh_reader_string(r, f->file), *func = mh_reader_string(r, f->func);
    out->file = file ? file : "";
    out->func = func ? func : "";
    out->line = f->line;
    return 0;
}

int mh_reader_stack(const struct mh_reader *r, uint32_t id, const uint32_t **frames,
                    size_t *nframes)
{
    if (!r || !frames || !nframes)
        return MH_EINVAL;
    if (id == 0 || id > r->stacks.n)
        return MH_ENOTFOUND;
    const struct mh__rstack *s = (const struct mh__rstack *)r->stacks.p + (id - 1);
    *frames = s->frames;
    *nframes = s->n;
    return 0;
}

const char *mh_reader_meta(const struct mh_reader *r, const char *key)
{
    const char *k, *v;
    for (size_t i = 0; key && mh_reader_meta_at(r, i, &k, &v); i++)
        if (!strcmp(k, key))
            return v;
    return NULL;
}

int mh_reader_meta_at(const struct mh_reader *r, size_t i, const char **key, const char **value)
{
    if (!r || !key || !value || i >= r->meta.n)
        return 0;
    const struct mh__rkv *kv = (const struct mh__rkv *)r->meta.p + i;
    *key = kv->key;
    *value = kv->value;
    return 1;
}

size_t mh_reader_device_count(const struct mh_reader *r)
{
    return r ? r->devices.n : 0;
}

int mh_reader_device(const struct mh_reader *r, size_t i, struct mh_device_info *out)
{
    if (!r || !out)
        return MH_EINVAL;
    if (i >= r->devices.n)
        return MH_ENOTFOUND;
    *out = ((const struct mh_device_info *)r->devices.p)[i];
    return 0;
}
