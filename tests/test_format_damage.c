/* test_format_damage.c - the reader against damaged input: a file cut at
 * every byte, random byte flips, crafted chunks with valid checksums, unknown
 * chunk types; plus a check that every chunk payload is valid msgpack. */
#include <msgpack.h>
#include <stdlib.h>

#include "fmt.h"
#include "test_format_util.h"

#define NEV 100

/* Offsets of the chunks of a file (after the preamble); returns the count. */
static size_t chunk_offsets(const uint8_t *d, size_t len, size_t *offs, uint8_t *types)
{
    size_t n = 0;
    for (size_t off = MH__PREAMBLE_LEN; off + MH__FRAME_LEN <= len; n++) {
        offs[n] = off;
        types[n] = d[off];
        off += MH__FRAME_LEN + mh__get_u32(d + off + 1);
    }
    return n;
}

static void reseal(uint8_t *chunk)
{
    uint32_t n = mh__get_u32(chunk + 1);
    uint32_t crc = mh__crc32c(mh__crc32c(0, chunk, 5), chunk + MH__FRAME_LEN, n);
    mh__put_u32(chunk + 5, crc);
}

Test(format_damage, truncated_at_every_byte)
{
    struct mh_writer *w;
    const void *data;
    size_t len;
    tu_small_file(&w, &data, &len, NEV, 16);
    struct mh_event ref[NEV];
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open_mem(data, len, &r), 0);
    for (int i = 0; i < NEV; i++)
        cr_assert_eq(mh_reader_next(r, &ref[i]), 1);
    mh_reader_close(r);

    size_t prev = 0, opened = 0;
    for (size_t cut = 0; cut < len; cut++) {
        int rc = mh_reader_open_mem(data, cut, &r);
        if (rc) {
            cr_expect(rc == MH_ETRUNCATED, "cut %zu: open gave %d", cut, rc);
            cr_expect_eq(opened, 0, "cut %zu: open failed after a shorter cut opened", cut);
            continue;
        }
        opened++;
        struct mh_event ev;
        size_t n = 0;
        while ((rc = mh_reader_next(r, &ev)) == 1) {
            cr_assert_lt(n, NEV);
            tu_expect_event(&ev, &ref[n], n);
            n++;
        }
        cr_expect_eq(rc, MH_ETRUNCATED, "cut %zu: rc %d", cut, rc);
        cr_expect_eq(mh_reader_next(r, &ev), rc, "error is sticky");
        cr_expect_geq(n, prev, "cut %zu: fewer events than a shorter cut", cut);
        prev = n;
        struct mh_file_summary s;
        mh_reader_summary(r, &s);
        cr_expect_eq(s.damaged, 1);
        cr_expect_leq(s.damage_offset, cut);
        cr_expect_eq(s.events, n);
        cr_expect_eq(s.has_trailer, 0);
        cr_expect(strstr(mh_reader_errmsg(r), "byte offset") != NULL, "%s", mh_reader_errmsg(r));
        mh_reader_close(r);
    }
    cr_expect_gt(opened, len / 2);
    cr_expect_gt(prev, NEV - 20, "a cut inside the trailer keeps nearly every event");
    mh_writer_free_mem(w);
}

Test(format_damage, random_flips_are_detected)
{
    struct mh_writer *w;
    const void *data;
    size_t len;
    tu_small_file(&w, &data, &len, NEV, 16);
    uint8_t *buf = malloc(len);
    uint64_t seed = 12345;
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(buf, data, len);
        int flips = 1 + (int)(tu_rand(&seed) % 4);
        for (int f = 0; f < flips; f++)
            buf[tu_rand(&seed) % len] ^= (uint8_t)(1 + tu_rand(&seed) % 255);
        if (!memcmp(buf, data, len))
            continue;
        struct mh_reader *r;
        int rc = mh_reader_open_mem(buf, len, &r);
        if (rc) {
            cr_assert_lt(rc, 0);
            continue;
        }
        int last;
        size_t n = tu_read_all(r, &last);
        cr_assert_lt(last, 0, "iteration %d: damage not detected", iter);
        cr_assert_leq(n, NEV);
        cr_assert_neq(mh_reader_errmsg(r)[0], 0);
        struct mh_file_summary s;
        mh_reader_summary(r, &s);
        cr_assert_eq(s.damaged, 1);
        mh_reader_close(r);
    }
    free(buf);
    mh_writer_free_mem(w);
}

Test(format_damage, damaged_middle_chunk_keeps_earlier_events)
{
    struct mh_writer *w;
    const void *data;
    size_t len;
    tu_small_file(&w, &data, &len, NEV, 16);
    size_t offs[256];
    uint8_t types[256];
    size_t nch = chunk_offsets(data, len, offs, types);
    size_t second = 0, seen = 0;
    for (size_t i = 0; i < nch && !second; i++)
        if (types[i] == MH__CH_EVENTS && seen++ == 1)
            second = offs[i];
    cr_assert_gt(second, 0);
    uint8_t *buf = malloc(len);
    memcpy(buf, data, len);
    buf[second + MH__FRAME_LEN + 3] ^= 0x40;
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open_mem(buf, len, &r), 0);
    int last;
    cr_expect_eq(tu_read_all(r, &last), 16);
    cr_expect_eq(last, MH_EFORMAT);
    struct mh_file_summary s;
    mh_reader_summary(r, &s);
    cr_expect_eq(s.damage_offset, second);
    cr_expect(strstr(mh_reader_errmsg(r), "checksum") != NULL, "%s", mh_reader_errmsg(r));
    mh_reader_close(r);
    free(buf);
    mh_writer_free_mem(w);
}

/* Replaces the payload of chunk `idx` by `payload` with a valid checksum. */
static uint8_t *craft(const uint8_t *d, size_t len, size_t off, const void *payload, size_t plen,
                      size_t *outlen)
{
    size_t old = MH__FRAME_LEN + mh__get_u32(d + off + 1);
    *outlen = len - old + MH__FRAME_LEN + plen;
    uint8_t *b = malloc(*outlen);
    memcpy(b, d, off);
    b[off] = d[off];
    mh__put_u32(b + off + 1, (uint32_t)plen);
    memcpy(b + off + MH__FRAME_LEN, payload, plen);
    reseal(b + off);
    memcpy(b + off + MH__FRAME_LEN + plen, d + off + old, len - off - old);
    return b;
}

/* A chunk of an unknown type between the definitions and the events, in a
 * file whose trailer has no chunk totals (as before they existed). */
Test(format_damage, unknown_chunk_type_is_skipped)
{
    struct mh_writer *w;
    const void *data;
    size_t len;
    tu_small_file(&w, &data, &len, NEV, 16);
    size_t offs[256];
    uint8_t types[256];
    size_t nch = chunk_offsets(data, len, offs, types);
    cr_assert_eq(types[nch - 1], MH__CH_TRAILER);
    static const uint8_t old_trailer[] = {0x82, 0xa6, 'e', 'v', 'e', 'n', 't', 's', NEV,
                                          0xa7, 'd',  'r', 'o', 'p', 'p', 'e', 'd', 3};
    size_t olen;
    uint8_t *old = craft(data, len, offs[nch - 1], old_trailer, sizeof old_trailer, &olen);
    data = old;
    len = olen;
    size_t at = offs[1];
    uint8_t extra[MH__FRAME_LEN + 6] = {200, 6, 0, 0, 0, 0, 0, 0, 0, 0x93, 1, 2, 0xa2, 'h', 'i'};
    extra[MH__FRAME_LEN + 5] = 0xc0;
    mh__put_u32(extra + 1, 6);
    reseal(extra);
    uint8_t *buf = malloc(len + sizeof extra);
    memcpy(buf, data, at);
    memcpy(buf + at, extra, sizeof extra);
    memcpy(buf + at + sizeof extra, (const uint8_t *)data + at, len - at);
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open_mem(buf, len + sizeof extra, &r), 0);
    int last;
    cr_expect_eq(tu_read_all(r, &last), NEV);
    cr_expect_eq(last, 0, "%s", mh_reader_errmsg(r));
    cr_expect_str_eq(mh_reader_meta(r, "torch_version"), "2.5.0");
    mh_reader_close(r);
    free(buf);
    free(old);
    mh_writer_free_mem(w);
}

Test(format_damage, malformed_chunks_with_valid_checksums)
{
    struct mh_writer *w;
    const void *data;
    size_t len;
    tu_small_file(&w, &data, &len, NEV, 16);
    size_t offs[256];
    uint8_t types[256];
    size_t nch = chunk_offsets(data, len, offs, types);
    static const uint8_t bad[][8] = {
        {0xc0},                   /* nil */
        {0x91, 0x05},             /* [5] */
        {0x92, 0x00, 0xa1},       /* cut string */
        {0xdd, 0xff, 0xff, 0xff}, /* huge array */
        {0x93, 0x02, 0x01, 0x01}, /* id gap */
        {0x81, 0xa1, 'k', 0x05},  /* map with int value */
        {0x95, 0xcd, 0xff, 0xff, 0x00, 0x00, 0x00},
    };
    for (size_t c = 1; c < nch; c++) {
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            if (types[c] == MH__CH_TRAILER && b == 5)
                continue; /* unknown trailer keys are allowed */
            size_t blen;
            uint8_t *buf = craft(data, len, offs[c], bad[b], sizeof bad[b], &blen);
            struct mh_reader *r;
            if (mh_reader_open_mem(buf, blen, &r) == 0) {
                int last;
                tu_read_all(r, &last);
                cr_expect_lt(last, 0, "chunk %zu (type %u) payload %zu accepted", c, types[c], b);
                mh_reader_close(r);
            }
            free(buf);
        }
    }
    mh_writer_free_mem(w);
}

Test(format_damage, every_payload_is_one_msgpack_object)
{
    struct mh_writer *w;
    const void *data;
    size_t len;
    tu_small_file(&w, &data, &len, NEV, 16);
    size_t offs[256];
    uint8_t types[256];
    size_t nch = chunk_offsets(data, len, offs, types);
    cr_assert_gt(nch, 8);
    for (size_t c = 0; c < nch; c++) {
        const char *p = (const char *)data + offs[c] + MH__FRAME_LEN;
        size_t plen = mh__get_u32((const uint8_t *)data + offs[c] + 1), off = 0;
        msgpack_unpacked u;
        msgpack_unpacked_init(&u);
        cr_expect_eq(msgpack_unpack_next(&u, p, plen, &off), MSGPACK_UNPACK_SUCCESS);
        cr_expect_eq(off, plen, "chunk %zu: one object spans the payload", c);
        msgpack_unpacked_destroy(&u);
    }
    cr_expect_eq(types[0], MH__CH_HEADER);
    cr_expect_eq(types[nch - 1], MH__CH_TRAILER);
    mh_writer_free_mem(w);
}
