/* event_pack.c - events packed in memory (see event_pack.h). The bytes live
 * in blocks of PACK_BLOCK bytes, so the copy grows without moving what it
 * holds. Owns its blocks. */
#include <stdlib.h>
#include <string.h>

#include "event_pack.h"
#include "grow.h"

#define PACK_BLOCK (1u << 20)
#define PACK_FIELDS 15
#define PACK_MAX_EVENT (2 + 3 + PACK_FIELDS * 10) /* kind, flags, mask, fields */

struct mh__evpack {
    uint8_t **block;
    size_t *used;
    size_t nblocks, cap;
    uint64_t bytes;
    struct mh_event prev;
};

int mh__evpack_new(struct mh__evpack **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : MH_ENOMEM;
}

void mh__evpack_free(struct mh__evpack *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nblocks; i++)
        free(p->block[i]);
    free(p->block);
    free(p->used);
    free(p);
}

uint64_t mh__evpack_bytes(const struct mh__evpack *p)
{
    return p->bytes;
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* The fields of `ev` as unsigned numbers, times and addresses relative to
 * `prev` (wrapping differences). */
static void fields(const struct mh_event *ev, const struct mh_event *prev, uint64_t f[PACK_FIELDS])
{
    f[0] = zigzag((int64_t)(ev->time_ns - prev->time_ns));
    f[1] = zigzag((int64_t)(ev->addr - prev->addr));
    f[2] = ev->size;
    f[3] = ev->stream;
    f[4] = ev->block_size;
    f[5] = ev->ctx;
    f[6] = ev->pool[0];
    f[7] = ev->pool[1];
    f[8] = ev->stack;
    f[9] = ev->str;
    f[10] = ev->str2;
    f[11] = ev->thread;
    f[12] = ev->correlation;
    f[13] = ev->aux;
    f[14] = zigzag(ev->device);
}

static void unfields(const uint64_t f[PACK_FIELDS], const struct mh_event *prev,
                     struct mh_event *ev)
{
    ev->time_ns = prev->time_ns + (uint64_t)unzigzag(f[0]);
    ev->addr = prev->addr + (uint64_t)unzigzag(f[1]);
    ev->size = f[2];
    ev->stream = f[3];
    ev->block_size = f[4];
    ev->ctx = f[5];
    ev->pool[0] = (uint32_t)f[6];
    ev->pool[1] = (uint32_t)f[7];
    ev->stack = (uint32_t)f[8];
    ev->str = (uint32_t)f[9];
    ev->str2 = (uint32_t)f[10];
    ev->thread = (uint32_t)f[11];
    ev->correlation = (uint32_t)f[12];
    ev->aux = (uint32_t)f[13];
    ev->device = (int16_t)unzigzag(f[14]);
}

static uint8_t *put_varint(uint8_t *o, uint64_t v)
{
    while (v >= 0x80) {
        *o++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *o++ = (uint8_t)v;
    return o;
}

static const uint8_t *get_varint(const uint8_t *i, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b = *i++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    *v = x;
    return i;
}

/* A block with room for one more event. */
static int room(struct mh__evpack *p)
{
    if (p->nblocks && p->used[p->nblocks - 1] + PACK_MAX_EVENT <= PACK_BLOCK)
        return 0;
    size_t cap = p->cap;
    if (MH__GROW(p->block, p->nblocks, cap, 64) < 0 ||
        MH__GROW(p->used, p->nblocks, p->cap, 64) < 0)
        return MH_ENOMEM;
    if (!(p->block[p->nblocks] = malloc(PACK_BLOCK)))
        return MH_ENOMEM;
    p->used[p->nblocks++] = 0;
    return 0;
}

int mh__evpack_add(struct mh__evpack *p, const struct mh_event *ev)
{
    if (room(p) < 0)
        return MH_ENOMEM;
    uint8_t *start = p->block[p->nblocks - 1] + p->used[p->nblocks - 1], *o = start;
    uint64_t f[PACK_FIELDS], mask = 0;
    fields(ev, &p->prev, f);
    for (unsigned i = 0; i < PACK_FIELDS; i++)
        mask |= (uint64_t)(f[i] != 0) << i;
    *o++ = ev->kind;
    *o++ = ev->flags;
    o = put_varint(o, mask);
    for (unsigned i = 0; i < PACK_FIELDS; i++)
        if (f[i])
            o = put_varint(o, f[i]);
    p->used[p->nblocks - 1] += (size_t)(o - start);
    p->bytes += (uint64_t)(o - start);
    p->prev = *ev;
    return 0;
}

void mh__evpack_cursor_init(struct mh__evpack_cursor *c, const struct mh__evpack *p)
{
    memset(c, 0, sizeof *c);
    c->p = p;
}

int mh__evpack_next(struct mh__evpack_cursor *c, struct mh_event *ev)
{
    const struct mh__evpack *p = c->p;
    while (c->block < p->nblocks && c->off >= p->used[c->block]) {
        c->block++;
        c->off = 0;
    }
    if (c->block >= p->nblocks)
        return 0;
    const uint8_t *start = p->block[c->block] + c->off, *i = start;
    uint64_t f[PACK_FIELDS] = {0}, mask;
    memset(ev, 0, sizeof *ev);
    ev->kind = *i++;
    ev->flags = *i++;
    i = get_varint(i, &mask);
    for (unsigned k = 0; k < PACK_FIELDS; k++)
        if (mask >> k & 1)
            i = get_varint(i, &f[k]);
    unfields(f, &c->prev, ev);
    c->prev = *ev;
    c->off += (size_t)(i - start);
    c->done += (uint64_t)(i - start);
    return 1;
}
