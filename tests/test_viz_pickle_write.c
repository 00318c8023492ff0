/* test_viz_pickle_write.c - the pickle writer: exact opcode bytes for numbers
 * and strings, batching of long lists, memo references, and values read back
 * by the strict reader. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "pickle_read.h"
#include "pickle_write.h"

static struct mh__sink sink;
static struct mh__pw *w;

static void start(void)
{
    mh__sink_init_mem(&sink);
    w = malloc(sizeof *w);
    mh__pw_init(w, &sink);
}

static void finish(void)
{
    cr_assert_eq(mh__pw_finish(w), 0);
    free(w);
}

/* Bytes between PROTO 4 and STOP. */
static void expect_body(const char *bytes, size_t n)
{
    cr_assert_eq(sink.len, n + 3, "length %zu, want %zu", sink.len, n + 3);
    cr_assert_eq(memcmp(sink.buf, "\x80\x04", 2), 0);
    cr_assert_eq(memcmp(sink.buf + 2, bytes, n), 0);
    cr_assert_eq(sink.buf[sink.len - 1], '.');
    mh__sink_free(&sink);
}

#define BODY(lit) expect_body((lit), sizeof(lit) - 1)

Test(pickle_write, ints)
{
    start();
    mh__pw_int(w, 7);
    finish();
    BODY("K\x07");
    start();
    mh__pw_int(w, 300);
    finish();
    BODY("M\x2c\x01");
    start();
    mh__pw_int(w, -1);
    finish();
    BODY("J\xff\xff\xff\xff");
    start();
    mh__pw_int(w, 1ll << 40);
    finish();
    BODY("\x8a\x06\x00\x00\x00\x00\x00\x01");
    start();
    mh__pw_int(w, -(1ll << 40));
    finish();
    BODY("\x8a\x06\x00\x00\x00\x00\x00\xff");
    start();
    mh__pw_int(w, 1ll << 31);
    finish();
    BODY("\x8a\x05\x00\x00\x00\x80\x00");
    start();
    mh__pw_int(w, INT64_MIN);
    finish();
    BODY("\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80");
    start();
    mh__pw_uint(w, 1ull << 63);
    finish();
    BODY("\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00");
}

Test(pickle_write, scalars)
{
    start();
    mh__pw_float(w, 1.5);
    finish();
    BODY("G\x3f\xf8\x00\x00\x00\x00\x00\x00");
    start();
    mh__pw_bool(w, 1);
    mh__pw_bool(w, 0);
    mh__pw_none(w);
    finish();
    BODY("\x88\x89N");
    start();
    mh__pw_cstr(w, "ab");
    finish();
    BODY("\x8c\x02"
         "ab");
    start();
    mh__pw_empty_tuple(w);
    mh__pw_uint(w, 1);
    mh__pw_uint(w, 2);
    mh__pw_tuple2(w);
    finish();
    BODY(")K\x01K\x02\x86");
}

Test(pickle_write, long_strings_read_back)
{
    size_t n = 200000;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 26);
    start();
    mh__pw_empty_list(w);
    mh__pw_mark(w);
    mh__pw_str(w, big, 300);
    mh__pw_str(w, big, n);
    mh__pw_appends(w);
    finish();
    cr_assert_eq(sink.buf[4], 'X', "300 bytes need BINUNICODE");
    struct mh__pickle_doc *doc;
    char err[128];
    cr_assert_eq(mh__pickle_parse(sink.buf, sink.len, NULL, &doc, err, sizeof err), 0, "%s", err);
    const struct mh__pv *l = mh__pickle_doc_root(doc);
    cr_assert_eq(l->n, 2);
    cr_assert_eq(mh__pv_at(l, 1)->n, n);
    cr_assert_eq(memcmp(mh__pv_at(l, 1)->u.s, big, n), 0);
    mh__pickle_doc_free(doc);
    mh__sink_free(&sink);
    free(big);
}

Test(pickle_write, batches_and_memo)
{
    start();
    uint64_t count = 0;
    mh__pw_empty_dict(w);
    mh__pw_mark(w);
    mh__pw_cstr(w, "frames");
    uint32_t key = mh__pw_memoize(w);
    mh__pw_list_begin(w);
    for (int i = 0; i < 2500; i++) {
        mh__pw_int(w, i);
        mh__pw_list_item(w, &count);
    }
    mh__pw_list_end(w, count);
    mh__pw_get(w, key);
    mh__pw_empty_list(w);
    mh__pw_setitems(w);
    finish();
    cr_assert_eq(key, 0);
    struct mh__pickle_doc *doc;
    char err[128];
    cr_assert_eq(mh__pickle_parse(sink.buf, sink.len, NULL, &doc, err, sizeof err), 0, "%s", err);
    const struct mh__pv *d = mh__pickle_doc_root(doc);
    cr_assert_eq(d->n, 2, "pairs are kept; lookups take the last, as Python");
    const struct mh__pv *l = mh__pv_get(d, "frames");
    cr_assert_eq(l->type, MH__PV_LIST);
    cr_assert_eq(l->n, 0, "the second value wins");
    mh__pickle_doc_free(doc);
    /* the batched list alone */
    mh__sink_free(&sink);
    start();
    count = 0;
    mh__pw_list_begin(w);
    for (int i = 0; i < 2500; i++) {
        mh__pw_uint(w, (uint64_t)i * 1000003u);
        mh__pw_list_item(w, &count);
    }
    mh__pw_list_end(w, count);
    finish();
    cr_assert_eq(mh__pickle_parse(sink.buf, sink.len, NULL, &doc, err, sizeof err), 0, "%s", err);
    l = mh__pickle_doc_root(doc);
    cr_assert_eq(l->n, 2500);
    uint64_t v;
    cr_assert(!mh__pv_u64(mh__pv_at(l, 2499), &v) && v == 2499ull * 1000003u);
    mh__pickle_doc_free(doc);
    mh__sink_free(&sink);
}

Test(pickle_write, long_memo_index)
{
    start();
    mh__pw_empty_list(w);
    mh__pw_mark(w);
    uint32_t last = 0;
    for (int i = 0; i < 300; i++) {
        mh__pw_int(w, i);
        last = mh__pw_memoize(w);
    }
    mh__pw_get(w, last);
    mh__pw_get(w, 5);
    mh__pw_appends(w);
    finish();
    struct mh__pickle_doc *doc;
    char err[128];
    cr_assert_eq(mh__pickle_parse(sink.buf, sink.len, NULL, &doc, err, sizeof err), 0, "%s", err);
    const struct mh__pv *l = mh__pickle_doc_root(doc);
    int64_t v;
    cr_assert(!mh__pv_i64(mh__pv_at(l, 300), &v) && v == 299, "LONG_BINGET");
    cr_assert(!mh__pv_i64(mh__pv_at(l, 301), &v) && v == 5, "BINGET");
    mh__pickle_doc_free(doc);
    mh__sink_free(&sink);
}
