/* test_format_integrity.c - what the reader checks beyond each chunk's own
 * checksum: the trailer's totals against what was read (a chunk lost,
 * repeated or moved is damage), the dropped chunk that keeps the count of
 * lost events in a file cut before its trailer, the header's format against
 * the preamble, metadata keys set again and again, and the memory a
 * hostile stacks chunk can make a reader take. */
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "fmt.h"
#include "memhist/version.h"
#include "test_format_util.h"

#define NEV 100

struct chunks {
    size_t n, off[256], len[256];
    uint8_t type[256];
};

static void split(const uint8_t *d, size_t len, struct chunks *c)
{
    c->n = 0;
    for (size_t off = MH__PREAMBLE_LEN; off + MH__FRAME_LEN <= len; c->n++) {
        c->off[c->n] = off;
        c->type[c->n] = d[off];
        c->len[c->n] = MH__FRAME_LEN + mh__get_u32(d + off + 1);
        off += c->len[c->n];
    }
}

/* The file rebuilt from the chunks listed in `order` (indexes into c). */
static uint8_t *rebuild(const uint8_t *d, const struct chunks *c, const size_t *order, size_t n,
                        size_t *outlen)
{
    size_t len = MH__PREAMBLE_LEN;
    for (size_t i = 0; i < n; i++)
        len += c->len[order[i]];
    uint8_t *b = malloc(len);
    memcpy(b, d, MH__PREAMBLE_LEN);
    size_t at = MH__PREAMBLE_LEN;
    for (size_t i = 0; i < n; i++) {
        memcpy(b + at, d + c->off[order[i]], c->len[order[i]]);
        at += c->len[order[i]];
    }
    *outlen = len;
    return b;
}

/* Reads a rebuilt file to its end; returns the final code, events in *n. */
static int read_rebuilt(const uint8_t *b, size_t len, size_t *n, char *msg, size_t msglen)
{
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open_mem(b, len, &r), 0);
    int last;
    *n = tu_read_all(r, &last);
    snprintf(msg, msglen, "%s", mh_reader_errmsg(r));
    mh_reader_close(r);
    return last;
}

/* Indexes of the events chunks. */
static size_t events_chunks(const struct chunks *c, size_t *ev)
{
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++)
        if (c->type[i] == MH__CH_EVENTS)
            ev[k++] = i;
    return k;
}

enum edit { LOSE, REPEAT, SWAP };

static void check_edit(enum edit e, const char *expect)
{
    struct mh_writer *w;
    const void *data;
    size_t len;
    tu_small_file(&w, &data, &len, NEV, 16);
    struct chunks c;
    split(data, len, &c);
    size_t ev[64], order[300], n = 0;
    cr_assert_geq(events_chunks(&c, ev), 3);
    for (size_t i = 0; i < c.n; i++) {
        size_t k = i;
        if (e == SWAP && i == ev[1])
            k = ev[2];
        else if (e == SWAP && i == ev[2])
            k = ev[1];
        if (e == LOSE && i == ev[1])
            continue;
        order[n++] = k;
        if (e == REPEAT && i == ev[1])
            order[n++] = k;
    }
    size_t blen, got;
    uint8_t *b = rebuild(data, &c, order, n, &blen);
    char msg[256];
    int last = read_rebuilt(b, blen, &got, msg, sizeof msg);
    cr_expect_eq(last, MH_EFORMAT, "edit %d: the reader said %d (%s)", e, last, msg);
    cr_expect(strstr(msg, expect) != NULL, "edit %d: %s", e, msg);
    free(b);
    mh_writer_free_mem(w);
}

Test(format_integrity, lost_events_chunk_is_damage)
{
    check_edit(LOSE, "trailer counts 100 events but the file holds 84");
}

Test(format_integrity, repeated_events_chunk_is_damage)
{
    check_edit(REPEAT, "trailer counts 100 events but the file holds 116");
}

Test(format_integrity, reordered_events_chunks_are_damage)
{
    check_edit(SWAP, "not in the order they were written");
}

Test(format_integrity, intact_file_reads_complete)
{
    struct mh_writer *w;
    const void *data;
    size_t len, got;
    tu_small_file(&w, &data, &len, NEV, 16);
    char msg[256];
    cr_expect_eq(read_rebuilt(data, len, &got, msg, sizeof msg), 0, "%s", msg);
    cr_expect_eq(got, NEV);
    mh_writer_free_mem(w);
}

/* A file cut before its trailer still says how many events were lost. */
Test(format_integrity, dropped_count_survives_without_trailer)
{
    struct mh_writer *w;
    cr_assert_eq(mh_writer_open_mem(NULL, &w), 0);
    struct mh_event ev = {.kind = MH_EV_MARK, .time_ns = 5, .thread = 3};
    cr_assert_eq(mh_writer_event(w, &ev), 0);
    cr_assert_eq(mh_writer_add_thread_dropped(w, 3, 40), 0);
    cr_assert_eq(mh_writer_add_thread_dropped(w, 9, 2), 0);
    cr_assert_eq(mh_writer_flush(w), 0);
    const void *data;
    size_t len;
    cr_assert_eq(mh_writer_mem(w, &data, &len), 0);
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open_mem(data, len, &r), 0);
    int last;
    cr_expect_eq(tu_read_all(r, &last), 1);
    cr_expect_eq(last, MH_ETRUNCATED);
    struct mh_file_summary s;
    mh_reader_summary(r, &s);
    cr_expect_eq(s.dropped, 42);
    cr_expect_eq(s.has_trailer, 0);
    mh_reader_close(r);
    mh_writer_close(w);
    mh_writer_free_mem(w);
}

/* A dropped chunk whose count goes down, or whose threads exceed it. */
Test(format_integrity, inconsistent_dropped_chunks_are_damage)
{
    static const uint8_t bad[][6] = {
        {0x93, 0x05, 0x01, 0x06}, /* [5, thread 1: 6] */
        {0x91, 0x01},             /* [1] after [2] */
        {0x92, 0x01, 0x01},       /* odd length */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t f[64];
        size_t n = 0;
        memcpy(f, MH__MAGIC, MH__MAGIC_LEN);
        mh__put_u32(f + MH__MAGIC_LEN, 1);
        n = MH__PREAMBLE_LEN;
        const uint8_t hdr[] = {MH__CH_HEADER, 1, 0, 0, 0, 0, 0, 0, 0, 0x80};
        memcpy(f + n, hdr, sizeof hdr);
        uint32_t crc = mh__crc32c(mh__crc32c(0, f + n, 5), f + n + MH__FRAME_LEN, 1);
        mh__put_u32(f + n + 5, crc);
        n += sizeof hdr;
        const uint8_t two[] = {0x91, 0x02};
        const uint8_t *payloads[2] = {two, bad[i]};
        size_t plens[2] = {2, i == 0 ? 4 : i == 1 ? 2 : 3};
        for (int k = i == 1 ? 0 : 1; k < 2; k++) {
            f[n] = MH__CH_DROPPED;
            mh__put_u32(f + n + 1, (uint32_t)plens[k]);
            memcpy(f + n + MH__FRAME_LEN, payloads[k], plens[k]);
            crc = mh__crc32c(mh__crc32c(0, f + n, 5), f + n + MH__FRAME_LEN, plens[k]);
            mh__put_u32(f + n + 5, crc);
            n += MH__FRAME_LEN + plens[k];
        }
        struct mh_reader *r;
        cr_assert_eq(mh_reader_open_mem(f, n, &r), 0);
        struct mh_event ev;
        cr_expect_eq(mh_reader_next(r, &ev), MH_EFORMAT, "case %zu: %s", i, mh_reader_errmsg(r));
        cr_expect(strstr(mh_reader_errmsg(r), "dropped chunk") != NULL, "case %zu: %s", i,
                  mh_reader_errmsg(r));
        mh_reader_close(r);
    }
}

Test(format_integrity, header_format_must_match_the_preamble)
{
    struct mh_writer *w;
    const void *data;
    size_t len;
    tu_small_file(&w, &data, &len, 4, 16);
    uint8_t *b = malloc(len);
    memcpy(b, data, len);
    /* the header map's "format" value follows the key; the writer packs it
     * as a positive fixint equal to the version */
    uint8_t *hdr = b + MH__PREAMBLE_LEN;
    uint32_t plen = mh__get_u32(hdr + 1);
    uint8_t *k = memmem(hdr + MH__FRAME_LEN, plen,
                        "\xa6"
                        "format",
                        7);
    cr_assert_not_null(k);
    cr_assert_eq(k[7], MH_FORMAT_VERSION);
    k[7] = MH_FORMAT_VERSION + 1;
    uint32_t crc = mh__crc32c(mh__crc32c(0, hdr, 5), hdr + MH__FRAME_LEN, plen);
    mh__put_u32(hdr + 5, crc);
    struct mh_reader *r;
    int rc = mh_reader_open_mem(b, len, &r);
    cr_expect_eq(rc, MH_EFORMAT);
    if (rc == 0)
        mh_reader_close(r);
    free(b);
    mh_writer_free_mem(w);
}

Test(format_integrity, meta_key_set_again_never_hits_the_limit)
{
    struct mh_writer *w;
    cr_assert_eq(mh_writer_open_mem(NULL, &w), 0);
    char v[32];
    for (int i = 0; i < 10000; i++) {
        snprintf(v, sizeof v, "%d", i);
        cr_assert_eq(mh_writer_set_meta(w, "phase", v), 0, "call %d", i);
        if (i % 1000 == 0)
            cr_assert_eq(mh_writer_flush(w), 0);
    }
    int rc = 0, i;
    for (i = 0; i < 5000 && rc == 0; i++) {
        snprintf(v, sizeof v, "k%d", i);
        rc = mh_writer_set_meta(w, v, "x");
    }
    cr_expect_eq(rc, MH_ELIMIT);
    cr_expect_eq(i, (int)MH__MAX_META, "the limit counts distinct keys");
    cr_assert_eq(mh_writer_close(w), 0);
    const void *data;
    size_t len;
    cr_assert_eq(mh_writer_mem(w, &data, &len), 0);
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open_mem(data, len, &r), 0);
    int last;
    tu_read_all(r, &last);
    cr_expect_eq(last, 0, "%s", mh_reader_errmsg(r));
    cr_expect_str_eq(mh_reader_meta(r, "phase"), "9999");
    mh_reader_close(r);
    mh_writer_free_mem(w);
}

/* Appends one chunk (frame and checksum) holding the packed payload. */
static void put_chunk(msgpack_sbuffer *out, uint8_t type, const msgpack_sbuffer *payload)
{
    uint8_t f[MH__FRAME_LEN];
    f[0] = type;
    mh__put_u32(f + 1, (uint32_t)payload->size);
    mh__put_u32(f + 5, mh__crc32c(mh__crc32c(0, f, 5), payload->data, payload->size));
    msgpack_sbuffer_write(out, (const char *)f, sizeof f);
    msgpack_sbuffer_write(out, payload->data, payload->size);
}

/* A stacks chunk naming one 65,535-deep node two million times: the frames
 * are materialized once, so reading it takes memory for the stack table,
 * not for 2^37 frames. */
Test(format_integrity, repeated_deep_stack_costs_memory_once)
{
    enum { DEPTH = 65535, REPEAT = 2000000 };
    msgpack_sbuffer file, pl;
    msgpack_sbuffer_init(&file);
    uint8_t pre[MH__PREAMBLE_LEN];
    memcpy(pre, MH__MAGIC, MH__MAGIC_LEN);
    mh__put_u32(pre + MH__MAGIC_LEN, 1);
    msgpack_sbuffer_write(&file, (const char *)pre, sizeof pre);
    msgpack_packer pk;
    msgpack_sbuffer_init(&pl);
    msgpack_packer_init(&pk, &pl, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 0);
    put_chunk(&file, MH__CH_HEADER, &pl);
    msgpack_sbuffer_clear(&pl);
    msgpack_pack_array(&pk, 4); /* strings: [1, "f"] then frames: [1, 1, 1, 7] */
    msgpack_pack_uint32(&pk, 1);
    msgpack_pack_uint32(&pk, 1);
    msgpack_pack_uint32(&pk, 1);
    msgpack_pack_uint32(&pk, 7);
    msgpack_sbuffer sp;
    msgpack_sbuffer_init(&sp);
    msgpack_packer spk;
    msgpack_packer_init(&spk, &sp, msgpack_sbuffer_write);
    msgpack_pack_array(&spk, 2);
    msgpack_pack_uint32(&spk, 1);
    msgpack_pack_str_with_body(&spk, "f", 1);
    put_chunk(&file, MH__CH_STRINGS, &sp);
    put_chunk(&file, MH__CH_FRAMES, &pl);
    msgpack_sbuffer_clear(&pl);
    msgpack_pack_array(&pk, 1 + 2 * DEPTH);
    msgpack_pack_uint32(&pk, 1);
    for (uint32_t i = 0; i < DEPTH; i++) {
        msgpack_pack_uint32(&pk, i);
        msgpack_pack_uint32(&pk, 1);
    }
    put_chunk(&file, MH__CH_NODES, &pl);
    msgpack_sbuffer_clear(&pl);
    msgpack_pack_array(&pk, 1 + REPEAT);
    msgpack_pack_uint32(&pk, 1);
    for (uint32_t i = 0; i < REPEAT; i++)
        msgpack_pack_uint32(&pk, DEPTH);
    put_chunk(&file, MH__CH_STACKS, &pl);

    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open_mem(file.data, file.size, &r), 0);
    int last;
    tu_read_all(r, &last);
    cr_expect_eq(last, MH_ETRUNCATED, "%s", mh_reader_errmsg(r));
    const uint32_t *frames;
    size_t n;
    cr_expect_eq(mh_reader_stack(r, REPEAT, &frames, &n), 0);
    cr_expect_eq(n, DEPTH);
    mh_reader_close(r);
    getrusage(RUSAGE_SELF, &after);
    long grown_mb = (after.ru_maxrss - before.ru_maxrss) / 1024;
    fprintf(stderr, "format_integrity: %zu input bytes, peak memory grew %ld MiB\n", file.size,
            grown_mb);
    cr_expect_lt(grown_mb, 128, "reading took %ld MiB more", grown_mb);
    msgpack_sbuffer_destroy(&file);
    msgpack_sbuffer_destroy(&pl);
    msgpack_sbuffer_destroy(&sp);
}
