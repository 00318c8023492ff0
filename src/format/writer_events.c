/* writer_events.c - encodes the open events chunk column by column.
 *
 * Each column holds one field of every event of the chunk, transformed so
 * that typical values are small msgpack integers: times as deltas, addresses
 * as back-references into the address ring or zigzag deltas, sizes relative
 * to the ring entry's size. A column whose values are all equal is written as
 * that one integer (nil when it is zero). Layout: FORMAT.md "Events chunk". */
#include <string.h>

#include "writer_int.h"
#include "memhist/error.h"

static inline uint64_t amap_slot(uint64_t addr)
{
    return (addr * 0x9E3779B97F4A7C15u) >> (64 - 16);
}

/* Address and size columns: both depend on the ring state, which advances
 * once per event with a non-zero address, exactly as the reader does. */
static void encode_addr_size(struct mh_writer *w, uint64_t *av, uint8_t *an, uint64_t *sv,
                             uint8_t *sn)
{
    for (uint32_t i = 0; i < w->nev; i++) {
        uint64_t addr = w->evs[i].addr, size = w->evs[i].size, pred = 0;
        if (addr == 0) {
            av[i] = (uint64_t)-1;
            an[i] = 1;
        } else {
            struct mh__amap_slot *s = &w->amap[amap_slot(addr) & (2 * MH__RING_SIZE - 1)];
            uint64_t d = w->ring_pos - s->seq;
            if (s->addr == addr && d >= 1 && d <= MH__RING_MAX_DIST) {
                av[i] = (uint64_t)-(int64_t)(d + 1);
                an[i] = 1;
                pred = w->ring_size[s->seq % MH__RING_SIZE];
            } else {
                av[i] = mh__zigzag(addr - w->prev_addr);
                an[i] = 0;
            }
            w->ring_addr[w->ring_pos % MH__RING_SIZE] = addr;
            w->ring_size[w->ring_pos % MH__RING_SIZE] = size;
            s->addr = addr;
            s->seq = w->ring_pos++;
            w->prev_addr = addr;
        }
        sv[i] = mh__size_code(size, pred);
        sn[i] = size == pred || size % 512 == 0 ? 0 : (uint8_t)(size >> 63);
    }
}

#define EXTRACT(expr)                                                                              \
    for (uint32_t i = 0; i < n; i++) {                                                             \
        const struct mh_event *e = &w->evs[i];                                                     \
        v[i] = (uint64_t)(expr);                                                                   \
    }

/* Columns stored as they are; only the device can be negative. */
static void encode_plain(const struct mh_writer *w, int col, uint64_t *v, uint8_t *neg)
{
    uint32_t n = w->nev;
    memset(neg, 0, n);
    switch (col) {
    case MH__COL_KIND: EXTRACT(e->kind); break;
    case MH__COL_FLAGS: EXTRACT(e->flags); break;
    case MH__COL_STACK: EXTRACT(e->stack); break;
    case MH__COL_STREAM: EXTRACT(e->stream); break;
    case MH__COL_THREAD: EXTRACT(e->thread); break;
    case MH__COL_DUR: EXTRACT(e->dur_ns); break;
    case MH__COL_STR: EXTRACT(e->str); break;
    case MH__COL_STR2: EXTRACT(e->str2); break;
    case MH__COL_AUX: EXTRACT(e->aux); break;
    case MH__COL_CORRELATION: EXTRACT(e->correlation); break;
    case MH__COL_POOL0: EXTRACT(e->pool[0]); break;
    case MH__COL_POOL1: EXTRACT(e->pool[1]); break;
    case MH__COL_CTX: EXTRACT(e->ctx); break;
    case MH__COL_DEVICE:
        EXTRACT((int64_t)e->device);
        for (uint32_t i = 0; i < n; i++)
            neg[i] = w->evs[i].device < 0;
        break;
    }
}

static void encode_time(const struct mh_writer *w, uint64_t *v, uint8_t *neg)
{
    uint64_t prev = w->evs[0].time_ns;
    for (uint32_t i = 0; i < w->nev; i++) {
        v[i] = w->evs[i].time_ns - prev;
        neg[i] = (uint8_t)(v[i] >> 63);
        prev = w->evs[i].time_ns;
    }
}

/* Packs one integer in its shortest msgpack form at p; returns the end. */
static inline uint8_t *put_int(uint8_t *p, uint64_t v, uint8_t neg)
{
    if (neg) {
        int64_t x = (int64_t)v;
        if (x >= -32) {
            *p++ = (uint8_t)x;
            return p;
        }
        int n = x >= INT8_MIN ? 1 : x >= INT16_MIN ? 2 : x >= INT32_MIN ? 4 : 8;
        *p++ = (uint8_t)(0xd0 + (n == 1 ? 0 : n == 2 ? 1 : n == 4 ? 2 : 3));
        for (int i = n - 1; i >= 0; i--)
            *p++ = (uint8_t)(v >> (8 * i));
        return p;
    }
    if (v < 128) {
        *p++ = (uint8_t)v;
        return p;
    }
    int n = v <= UINT8_MAX ? 1 : v <= UINT16_MAX ? 2 : v <= UINT32_MAX ? 4 : 8;
    *p++ = (uint8_t)(0xcc + (n == 1 ? 0 : n == 2 ? 1 : n == 4 ? 2 : 3));
    for (int i = n - 1; i >= 0; i--)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

/* Grows the staged output so that `extra` more bytes fit. */
static int reserve(struct mh_writer *w, size_t extra)
{
    msgpack_sbuffer *o = &w->out;
    if (o->alloc - o->size >= extra)
        return 0;
    size_t cap = o->alloc ? o->alloc * 2 : 65536;
    while (cap - o->size < extra)
        cap *= 2;
    char *d = realloc(o->data, cap);
    if (!d)
        return mh__w_fail(w, MH_ENOMEM, 0);
    o->data = d;
    o->alloc = cap;
    return 0;
}

/* A column: nil if all zero, one integer if all equal, else an array. */
static void pack_column(struct mh_writer *w, const uint64_t *v, const uint8_t *neg)
{
    uint32_t n = w->nev, i = 1;
    while (i < n && v[i] == v[0] && neg[i] == neg[0])
        i++;
    if (reserve(w, 5 + 9 * (size_t)(i == n ? 1 : n)))
        return;
    uint8_t *p = (uint8_t *)w->out.data + w->out.size;
    if (i == n) {
        if (v[0] == 0 && !neg[0])
            *p++ = 0xc0;
        else
            p = put_int(p, v[0], neg[0]);
    } else {
        if (n < 16) {
            *p++ = (uint8_t)(0x90 | n);
        } else {
            p[0] = 0xdc + (n > UINT16_MAX);
            p++;
            for (int k = n > UINT16_MAX ? 3 : 1; k >= 0; k--)
                *p++ = (uint8_t)(n >> (8 * k));
        }
        for (i = 0; i < n; i++)
            p = put_int(p, v[i], neg[i]);
    }
    w->out.size = (size_t)(p - (uint8_t *)w->out.data);
}

int mh__w_write_events(struct mh_writer *w)
{
    uint32_t n = w->nev;
    uint64_t *v = w->colv;
    uint8_t *neg = w->coln;
    uint64_t *sv = w->colv2; /* size codes, computed with the addresses */
    uint8_t *sn = w->coln2;
    size_t start = mh__w_begin(w);
    msgpack_pack_array(&w->pk, 2 + MH__NCOLS);
    msgpack_pack_uint32(&w->pk, n);
    msgpack_pack_uint64(&w->pk, w->evs[0].time_ns);
    for (int col = 0; col < MH__NCOLS; col++) {
        if (col == MH__COL_TIME)
            encode_time(w, v, neg);
        else if (col == MH__COL_ADDR)
            encode_addr_size(w, v, neg, sv, sn);
        else if (col == MH__COL_SIZE) {
            memcpy(v, sv, sizeof *v * n);
            memcpy(neg, sn, n);
        } else
            encode_plain(w, col, v, neg);
        pack_column(w, v, neg);
    }
    w->nev = 0;
    return mh__w_end(w, start, MH__CH_EVENTS);
}
