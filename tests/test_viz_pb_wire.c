/* test_viz_pb_wire.c - the protocol buffer wire writer (viz/trace/pb_wire.c):
 * varints at every length boundary (1 to 10 bytes), negative int64, keys of
 * small and large field numbers, fixed64 byte order, and nested messages
 * whose lengths cross a varint boundary, checked against the byte sequences
 * the encoding rules give and read back by a small decoder written here. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "memhist/error.h"
#include "pb_wire.h"

static void expect_bytes(const struct mh__pb *p, const uint8_t *want, size_t n)
{
    cr_assert_eq(p->error, 0);
    cr_assert_eq(p->len, n, "length %zu, expected %zu", p->len, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(p->buf[i], want[i], "byte %zu: %02x, expected %02x", i, p->buf[i], want[i]);
}

/* ---- a reader for the checks, independent of the writer ------------------- */
struct rd {
    const uint8_t *p, *end;
};

static uint64_t rd_varint(struct rd *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        cr_assert(r->p < r->end, "varint runs past the end");
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    cr_assert_fail("varint longer than 10 bytes");
    return 0;
}

/* The next field's number and wire type; a length-delimited value's body. */
static void rd_field(struct rd *r, uint32_t *field, unsigned *wire, struct rd *body)
{
    uint64_t key = rd_varint(r);
    *field = (uint32_t)(key >> 3);
    *wire = (unsigned)(key & 7);
    if (*wire == 2) {
        uint64_t n = rd_varint(r);
        cr_assert_leq(n, (uint64_t)(r->end - r->p), "length past the end");
        body->p = r->p;
        body->end = r->p + n;
        r->p += n;
    }
}

Test(pb_wire, varints_at_each_length)
{
    static const struct {
        uint64_t v;
        size_t n;
        uint8_t bytes[10];
    } cases[] = {
        {0, 1, {0x00}},
        {1, 1, {0x01}},
        {127, 1, {0x7f}},
        {128, 2, {0x80, 0x01}},
        {300, 2, {0xac, 0x02}},
        {16383, 2, {0xff, 0x7f}},
        {16384, 3, {0x80, 0x80, 0x01}},
        {UINT32_MAX, 5, {0xff, 0xff, 0xff, 0xff, 0x0f}},
        {1ull << 56, 9, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
        {1ull << 63, 10, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
        {UINT64_MAX, 10, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t out[MH__PB_VARINT_MAX];
        size_t n = mh__pb_varint(out, cases[i].v);
        cr_assert_eq(n, cases[i].n, "%llu: %zu bytes", (unsigned long long)cases[i].v, n);
        cr_assert_eq(mh__pb_varint_len(cases[i].v), n);
        cr_assert_eq(memcmp(out, cases[i].bytes, n), 0, "%llu", (unsigned long long)cases[i].v);
        struct rd r = {out, out + n};
        cr_assert_eq(rd_varint(&r), cases[i].v);
    }
}

Test(pb_wire, fields_and_keys)
{
    struct mh__pb p;
    mh__pb_init(&p);
    mh__pb_uint(&p, 1, 150); /* the encoding guide's first example */
    expect_bytes(&p, (const uint8_t[]){0x08, 0x96, 0x01}, 3);
    mh__pb_reset(&p);
    mh__pb_string(&p, 2, "testing");
    expect_bytes(&p, (const uint8_t[]){0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'}, 9);
    mh__pb_reset(&p);
    mh__pb_int(&p, 4, -1); /* int64 -1: ten bytes */
    expect_bytes(&p, (const uint8_t[]){0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0x01}, 11);
    mh__pb_reset(&p);
    mh__pb_uint(&p, 15, 0); /* the last one-byte key */
    mh__pb_uint(&p, 16, 0); /* the first two-byte key */
    expect_bytes(&p, (const uint8_t[]){0x78, 0x00, 0x80, 0x01, 0x00}, 5);
    mh__pb_reset(&p);
    mh__pb_fixed64(&p, 47, 0x0102030405060708ull); /* key 47 << 3 | 1 = 377 */
    expect_bytes(&p, (const uint8_t[]){0xf9, 0x02, 8, 7, 6, 5, 4, 3, 2, 1}, 10);
    mh__pb_reset(&p);
    mh__pb_uint(&p, (1u << 29) - 1, 1); /* the largest field number: a 5-byte key */
    expect_bytes(&p, (const uint8_t[]){0xf8, 0xff, 0xff, 0xff, 0x0f, 0x01}, 6);
    mh__pb_reset(&p);
    mh__pb_bytes(&p, 3, NULL, 0);
    expect_bytes(&p, (const uint8_t[]){0x1a, 0x00}, 2);
    mh__pb_free(&p);
}

Test(pb_wire, nested_message)
{
    struct mh__pb p;
    mh__pb_init(&p);
    mh__pb_begin(&p, 3); /* the encoding guide's embedded-message example */
    mh__pb_uint(&p, 1, 150);
    mh__pb_end(&p);
    expect_bytes(&p, (const uint8_t[]){0x1a, 0x03, 0x08, 0x96, 0x01}, 5);
    mh__pb_reset(&p);
    mh__pb_begin(&p, 5); /* empty */
    mh__pb_end(&p);
    expect_bytes(&p, (const uint8_t[]){0x2a, 0x00}, 2);
    mh__pb_free(&p);
}

/* A message of `body` bytes (one string field) inside `levels` messages:
 * every length is the shortest varint and the string reads back whole. */
static void nested_round_trip(size_t body, int levels)
{
    static char text[40000];
    cr_assert_lt(body, sizeof text);
    for (size_t i = 0; i < body; i++)
        text[i] = (char)('a' + i % 26);
    struct mh__pb p;
    mh__pb_init(&p);
    mh__pb_uint(&p, 1, 7); /* a field before, to check the body is moved, not the head */
    for (int l = 0; l < levels; l++)
        mh__pb_begin(&p, 10 + (uint32_t)l);
    mh__pb_bytes(&p, 2, text, body);
    for (int l = 0; l < levels; l++)
        mh__pb_end(&p);
    mh__pb_uint(&p, 9, 300);
    cr_assert_eq(p.error, 0);
    cr_assert_eq(p.depth, 0);
    size_t inner = 1 + mh__pb_varint_len(body) + body, want = inner;
    for (int l = 0; l < levels; l++)
        want += 1 + mh__pb_varint_len(want);
    cr_assert_eq(p.len, 2 + want + 3, "shortest lengths at every level (body %zu)", body);
    struct rd r = {p.buf, p.buf + p.len}, b;
    uint32_t field;
    unsigned wire;
    rd_field(&r, &field, &wire, &b);
    cr_assert_eq(field, 1);
    cr_assert_eq(rd_varint(&r), 7);
    struct rd cur = r;
    for (int l = 0; l < levels; l++) {
        rd_field(&cur, &field, &wire, &b);
        cr_assert_eq(field, 10 + (uint32_t)l);
        cr_assert_eq(wire, 2);
        if (l == 0)
            r = cur; /* what follows the outermost message */
        cur = b;
    }
    rd_field(&cur, &field, &wire, &b);
    cr_assert_eq(field, 2);
    cr_assert_eq((size_t)(b.end - b.p), body);
    cr_assert_eq(memcmp(b.p, text, body), 0);
    cr_assert_eq(cur.p, cur.end, "nothing after the string in the innermost message");
    rd_field(&r, &field, &wire, &b);
    cr_assert_eq(field, 9);
    cr_assert_eq(rd_varint(&r), 300);
    cr_assert_eq(r.p, r.end);
    mh__pb_free(&p);
}

Test(pb_wire, nested_lengths_cross_varint_boundaries)
{
    /* inner bodies of 125/126 bytes make the outer ones 127/128 */
    static const size_t bodies[] = {0, 1, 124, 125, 126, 127, 128, 16000, 16380, 16381, 16384};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
        for (int levels = 1; levels <= 4; levels++)
            nested_round_trip(bodies[i], levels);
}

Test(pb_wire, errors_are_kept)
{
    struct mh__pb p;
    mh__pb_init(&p);
    for (int i = 0; i < MH__PB_MAX_DEPTH; i++)
        mh__pb_begin(&p, 1);
    cr_assert_eq(p.error, 0);
    mh__pb_begin(&p, 1);
    cr_assert_eq(p.error, MH_ELIMIT, "nesting deeper than the limit");
    size_t len = p.len;
    mh__pb_uint(&p, 1, 1);
    mh__pb_end(&p);
    cr_assert_eq(p.len, len, "writes after an error are ignored");
    mh__pb_free(&p);
    mh__pb_init(&p);
    mh__pb_end(&p);
    cr_assert_eq(p.error, MH_ESTATE, "an end without a begin");
    mh__pb_free(&p);
}
