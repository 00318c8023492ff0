/* pb_wire.c - the protocol buffer wire-format writer (see pb_wire.h). */
#include "pb_wire.h"

#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2 };

void mh__pb_init(struct mh__pb *p)
{
    memset(p, 0, sizeof *p);
}

void mh__pb_free(struct mh__pb *p)
{
    free(p->buf);
    memset(p, 0, sizeof *p);
}

void mh__pb_reset(struct mh__pb *p)
{
    p->len = 0;
    p->depth = 0;
}

size_t mh__pb_varint(uint8_t out[MH__PB_VARINT_MAX], uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

size_t mh__pb_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Room for `more` bytes; 0 or the (kept) error. */
static int reserve(struct mh__pb *p, size_t more)
{
    if (p->error)
        return p->error;
    if (p->len + more <= p->cap)
        return 0;
    size_t cap = p->cap ? p->cap : 256;
    while (cap < p->len + more)
        cap *= 2;
    uint8_t *b = realloc(p->buf, cap);
    if (!b)
        return p->error = MH_ENOMEM;
    p->buf = b;
    p->cap = cap;
    return 0;
}

static void put_varint(struct mh__pb *p, uint64_t v)
{
    if (reserve(p, MH__PB_VARINT_MAX) == 0)
        p->len += mh__pb_varint(p->buf + p->len, v);
}

static void put_key(struct mh__pb *p, uint32_t field, unsigned wire)
{
    put_varint(p, (uint64_t)field << 3 | wire);
}

void mh__pb_uint(struct mh__pb *p, uint32_t field, uint64_t v)
{
    put_key(p, field, WIRE_VARINT);
    put_varint(p, v);
}

void mh__pb_int(struct mh__pb *p, uint32_t field, int64_t v)
{
    mh__pb_uint(p, field, (uint64_t)v); /* two's complement: 10 bytes when negative */
}

void mh__pb_fixed64(struct mh__pb *p, uint32_t field, uint64_t v)
{
    put_key(p, field, WIRE_FIXED64);
    if (reserve(p, 8) != 0)
        return;
    for (int i = 0; i < 8; i++)
        p->buf[p->len++] = (uint8_t)(v >> (8 * i));
}

void mh__pb_bytes(struct mh__pb *p, uint32_t field, const void *data, size_t len)
{
    put_key(p, field, WIRE_LEN);
    put_varint(p, len);
    if (len && reserve(p, len) == 0) {
        memcpy(p->buf + p->len, data, len);
        p->len += len;
    }
}

void mh__pb_string(struct mh__pb *p, uint32_t field, const char *s)
{
    mh__pb_bytes(p, field, s, s ? strlen(s) : 0);
}

void mh__pb_begin(struct mh__pb *p, uint32_t field)
{
    if (!p->error && p->depth == MH__PB_MAX_DEPTH)
        p->error = MH_ELIMIT;
    put_key(p, field, WIRE_LEN);
    if (!p->error)
        p->open[p->depth++] = p->len;
}

void mh__pb_end(struct mh__pb *p)
{
    if (p->error)
        return;
    if (p->depth == 0) {
        p->error = MH_ESTATE;
        return;
    }
    size_t start = p->open[--p->depth], body = p->len - start;
    uint8_t len[MH__PB_VARINT_MAX];
    size_t n = mh__pb_varint(len, body);
    if (reserve(p, n) != 0)
        return;
    memmove(p->buf + start + n, p->buf + start, body);
    memcpy(p->buf + start, len, n);
    p->len += n;
}
