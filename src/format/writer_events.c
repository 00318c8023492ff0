/* writer_events.c - encodes the open events chunk column by column.
 *
 * Each column holds one field of every event of the chunk, transformed so
 * that typical values are small msgpack integers: times as deltas, addresses
 * as back-references into the address ring or zigzag deltas, sizes relative
 * to the ring entry's size. A column whose values are all equal is written as
 * that one integer (nil when it is zero); an unsigned column that varies is
 * packed straight from the events, with no scratch copy. Layout: FORMAT.md
 * "Events chunk". */
#include <stddef.h>
#include <string.h>

#include "memhist/error.h"
#include "writer_int.h"

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
                av[i] = (uint64_t) - (int64_t)(d + 1);
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

/* Where each column stored as it is lies in an event (the time, address and
 * size columns are transformed, below). The one 2-byte field, the device, is
 * the one signed field. */
struct plain_field {
    uint8_t off, size;
};
#define FIELD(col, f) [col] = {offsetof(struct mh_event, f), sizeof(((struct mh_event *)0)->f)}
static const struct plain_field plain_fields[MH__NCOLS] = {
    FIELD(MH__COL_KIND, kind),
    FIELD(MH__COL_FLAGS, flags),
    FIELD(MH__COL_STACK, stack),
    FIELD(MH__COL_STREAM, stream),
    FIELD(MH__COL_DEVICE, device),
    FIELD(MH__COL_THREAD, thread),
    FIELD(MH__COL_DUR, dur_ns),
    FIELD(MH__COL_STR, str),
    FIELD(MH__COL_STR2, str2),
    FIELD(MH__COL_AUX, aux),
    FIELD(MH__COL_CORRELATION, correlation),
    FIELD(MH__COL_POOL0, pool[0]),
    FIELD(MH__COL_POOL1, pool[1]),
    FIELD(MH__COL_CTX, ctx),
};
#undef FIELD

#define EV_WORDS (sizeof(struct mh_event) / sizeof(uint64_t))

/* Bit `col` set for each plain column whose value is not the same in every
 * event of the chunk: one pass XORs every event against the first, word by
 * word, then each column looks only at its own bytes (never at padding). */
static uint32_t varying_columns(const struct mh_writer *w)
{
    _Static_assert(sizeof(struct mh_event) % sizeof(uint64_t) == 0, "events are whole words");
    uint64_t first[EV_WORDS], diff[EV_WORDS] = {0};
    memcpy(first, &w->evs[0], sizeof first);
    for (uint32_t i = 1; i < w->nev; i++) {
        uint64_t cur[EV_WORDS];
        memcpy(cur, &w->evs[i], sizeof cur);
        for (size_t k = 0; k < EV_WORDS; k++)
            diff[k] |= cur[k] ^ first[k];
    }
    const uint8_t *bytes = (const uint8_t *)diff;
    uint32_t varying = 0;
    for (int col = 0; col < MH__NCOLS; col++) {
        const struct plain_field *f = &plain_fields[col];
        for (unsigned b = 0; b < f->size; b++)
            if (bytes[f->off + b]) {
                varying |= 1u << col;
                break;
            }
    }
    return varying;
}

/* A plain column of the first n events. */
static void encode_plain(const struct mh_writer *w, int col, uint32_t n, uint64_t *v, uint8_t *neg)
{
    const size_t stride = sizeof(struct mh_event);
    const uint8_t *p = (const uint8_t *)w->evs + plain_fields[col].off;
    memset(neg, 0, n);
    switch (plain_fields[col].size) {
    case 1:
        for (uint32_t i = 0; i < n; i++)
            v[i] = p[i * stride];
        break;
    case 2:
        for (uint32_t i = 0; i < n; i++) {
            int16_t x;
            memcpy(&x, p + i * stride, sizeof x);
            v[i] = (uint64_t)(int64_t)x;
            neg[i] = x < 0;
        }
        break;
    case 4:
        for (uint32_t i = 0; i < n; i++) {
            uint32_t x;
            memcpy(&x, p + i * stride, sizeof x);
            v[i] = x;
        }
        break;
    default:
        for (uint32_t i = 0; i < n; i++)
            memcpy(&v[i], p + i * stride, sizeof v[i]);
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

/* Stores the n (1, 2, 4 or 8) low bytes of v at p, big-endian, as msgpack
 * does; returns the end. */
static inline uint8_t *put_be(uint8_t *p, uint64_t v, int n)
{
    switch (n) {
    case 1: *p = (uint8_t)v; break;
    case 2: {
        uint16_t x = __builtin_bswap16((uint16_t)v);
        memcpy(p, &x, sizeof x);
        break;
    }
    case 4: {
        uint32_t x = __builtin_bswap32((uint32_t)v);
        memcpy(p, &x, sizeof x);
        break;
    }
    default: {
        uint64_t x = __builtin_bswap64(v);
        memcpy(p, &x, sizeof x);
    }
    }
    return p + n;
}

/* Packs one non-negative integer in its shortest msgpack form at p;
 * returns the end. */
static inline uint8_t *put_uint(uint8_t *p, uint64_t v)
{
    if (v < 128) {
        *p++ = (uint8_t)v;
        return p;
    }
    int n = v <= UINT8_MAX ? 1 : v <= UINT16_MAX ? 2 : v <= UINT32_MAX ? 4 : 8;
    *p++ = (uint8_t)(0xcc + (n == 1 ? 0 : n == 2 ? 1 : n == 4 ? 2 : 3));
    return put_be(p, v, n);
}

/* Packs one integer in its shortest msgpack form at p (neg: v holds a
 * negative int64); returns the end. */
static inline uint8_t *put_int(uint8_t *p, uint64_t v, uint8_t neg)
{
    if (!neg)
        return put_uint(p, v);
    int64_t x = (int64_t)v;
    if (x >= -32) {
        *p++ = (uint8_t)x;
        return p;
    }
    int n = x >= INT8_MIN ? 1 : x >= INT16_MIN ? 2 : x >= INT32_MIN ? 4 : 8;
    *p++ = (uint8_t)(0xd0 + (n == 1 ? 0 : n == 2 ? 1 : n == 4 ? 2 : 3));
    return put_be(p, v, n);
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

/* Writes the header of an array of n values at p; returns the end. */
static uint8_t *put_array_header(uint8_t *p, uint32_t n)
{
    if (n < 16) {
        *p++ = (uint8_t)(0x90 | n);
        return p;
    }
    *p++ = (uint8_t)(0xdc + (n > UINT16_MAX));
    return put_be(p, n, n > UINT16_MAX ? 4 : 2);
}

/* A column of n values: nil if all zero, one integer if all equal, else an
 * array. */
static void pack_column(struct mh_writer *w, const uint64_t *v, const uint8_t *neg, uint32_t n)
{
    uint32_t i = 1;
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
        p = put_array_header(p, n);
        for (i = 0; i < n; i++)
            p = put_int(p, v[i], neg[i]);
    }
    w->out.size = (size_t)(p - (uint8_t *)w->out.data);
}

/* An unsigned plain column whose value varies, packed as the array of every
 * event's straight from the events (the bytes pack_column writes). */
static void pack_varying_unsigned(struct mh_writer *w, int col)
{
    const size_t stride = sizeof(struct mh_event);
    const uint8_t *src = (const uint8_t *)w->evs + plain_fields[col].off;
    uint32_t n = w->nev;
    if (reserve(w, 5 + 9 * (size_t)n))
        return;
    uint8_t *p = put_array_header((uint8_t *)w->out.data + w->out.size, n);
    switch (plain_fields[col].size) {
    case 1:
        for (uint32_t i = 0; i < n; i++)
            p = put_uint(p, src[i * stride]);
        break;
    case 4:
        for (uint32_t i = 0; i < n; i++) {
            uint32_t x;
            memcpy(&x, src + i * stride, sizeof x);
            p = put_uint(p, x);
        }
        break;
    default:
        for (uint32_t i = 0; i < n; i++) {
            uint64_t x;
            memcpy(&x, src + i * stride, sizeof x);
            p = put_uint(p, x);
        }
    }
    w->out.size = (size_t)(p - (uint8_t *)w->out.data);
}

/* A plain column: one value where it is the same in every event, else the
 * array; the one signed field (the device) through the general path. */
static void pack_plain(struct mh_writer *w, int col, int varies, uint64_t *v, uint8_t *neg)
{
    if (varies && plain_fields[col].size != 2) {
        pack_varying_unsigned(w, col);
        return;
    }
    uint32_t rows = varies ? w->nev : 1;
    encode_plain(w, col, rows, v, neg);
    pack_column(w, v, neg, rows);
}

int mh__w_write_events(struct mh_writer *w)
{
    uint32_t n = w->nev;
    uint64_t *v = w->colv;
    uint8_t *neg = w->coln;
    uint64_t *sv = w->colv2; /* size codes, computed with the addresses */
    uint8_t *sn = w->coln2;
    uint32_t varying = varying_columns(w);
    size_t start = mh__w_begin(w);
    msgpack_pack_array(&w->pk, 2 + MH__NCOLS);
    msgpack_pack_uint32(&w->pk, n);
    msgpack_pack_uint64(&w->pk, w->evs[0].time_ns);
    for (int col = 0; col < MH__NCOLS; col++) {
        if (col == MH__COL_TIME) {
            encode_time(w, v, neg);
            pack_column(w, v, neg, n);
        } else if (col == MH__COL_ADDR) {
            encode_addr_size(w, v, neg, sv, sn);
            pack_column(w, v, neg, n);
        } else if (col == MH__COL_SIZE) {
            pack_column(w, sv, sn, n);
        } else {
            pack_plain(w, col, varying >> col & 1, v, neg);
        }
    }
    w->nev = 0;
    return mh__w_end(w, start, MH__CH_EVENTS);
}
