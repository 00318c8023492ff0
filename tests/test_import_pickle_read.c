/* test_import_pickle_read.c - the strict pickle reader: every data opcode of
 * protocols 0-5, refusal of every opcode that imports or calls, truncation at
 * every byte, limits, and the committed snapshot pickles. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "pickle_read.h"

static char err[256];

static struct mh__pickle_doc *parse_ok(const void *data, size_t len)
{
    struct mh__pickle_doc *doc = NULL;
    int rc = mh__pickle_parse(data, len, NULL, &doc, err, sizeof err);
    cr_assert_eq(rc, 0, "parse failed: %d %s", rc, err);
    return doc;
}

static int parse_rc(const void *data, size_t len)
{
    struct mh__pickle_doc *doc = NULL;
    int rc = mh__pickle_parse(data, len, NULL, &doc, err, sizeof err);
    mh__pickle_doc_free(doc);
    return rc;
}

#define P(lit) (lit), (sizeof(lit) - 1)

static unsigned char *slurp(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/snapshots/%s", MH_TEST_DATA_DIR, name);
    FILE *fp = fopen(path, "rb");
    cr_assert(fp, "missing %s", path);
    unsigned char *buf = malloc(1 << 20);
    *len = fread(buf, 1, 1 << 20, fp);
    fclose(fp);
    return buf;
}

Test(pickle_read, binary_ints)
{
    struct mh__pickle_doc *doc =
        parse_ok(P("\x80\x04(K\x07M\x34\x12J\xfe\xff\xff\xff\x8a\x09\x00\x00\x00\x00\x00\x00"
                   "\x00\x80\x00\x8a\x01\xff\x8b\x02\x00\x00\x00\x00\x01t."));
    struct mh__pv *t = mh__pickle_doc_root(doc);
    cr_assert_eq(t->type, MH__PV_TUPLE);
    cr_assert_eq(t->n, 6);
    int64_t v;
    uint64_t u;
    cr_assert(!mh__pv_i64(mh__pv_at(t, 0), &v) && v == 7);
    cr_assert(!mh__pv_i64(mh__pv_at(t, 1), &v) && v == 0x1234);
    cr_assert(!mh__pv_i64(mh__pv_at(t, 2), &v) && v == -2);
    cr_assert(!mh__pv_u64(mh__pv_at(t, 3), &u) && u == 1ull << 63);
    cr_assert(mh__pv_i64(mh__pv_at(t, 3), &v) != 0, "2^63 does not fit int64");
    cr_assert(!mh__pv_i64(mh__pv_at(t, 4), &v) && v == -1);
    cr_assert(!mh__pv_i64(mh__pv_at(t, 5), &v) && v == 256);
    mh__pickle_doc_free(doc);
}

Test(pickle_read, strings_bytes_floats_singletons)
{
    struct mh__pickle_doc *doc = parse_ok(
        P("\x80\x03(\x8c\x03"
          "abcX\x02\x00\x00\x00\xc3\xa9\x8d\x01\x00\x00\x00\x00\x00\x00\x00z"
          "U\x01\xe9T\x01\x00\x00\x00qC\x02\x00\x01G\x3f\xf8\x00\x00\x00\x00\x00\x00N\x88\x89"
          "\x96\x01\x00\x00\x00\x00\x00\x00\x00\x05t."));
    struct mh__pv *t = mh__pickle_doc_root(doc);
    cr_assert_eq(t->n, 11);
    cr_assert(mh__pv_is_str(mh__pv_at(t, 0), "abc"));
    cr_assert(mh__pv_is_str(mh__pv_at(t, 1), "\xc3\xa9"));
    cr_assert(mh__pv_is_str(mh__pv_at(t, 2), "z"));
    cr_assert(mh__pv_is_str(mh__pv_at(t, 3), "\xc3\xa9"), "BINSTRING bytes are Latin-1");
    cr_assert(mh__pv_is_str(mh__pv_at(t, 4), "q"));
    cr_assert_eq(mh__pv_at(t, 5)->type, MH__PV_BYTES);
    cr_assert_eq(mh__pv_at(t, 5)->n, 2);
    double f;
    cr_assert(!mh__pv_f64(mh__pv_at(t, 6), &f) && f == 1.5);
    cr_assert_eq(mh__pv_at(t, 7)->type, MH__PV_NONE);
    int b;
    cr_assert(!mh__pv_bool(mh__pv_at(t, 8), &b) && b == 1);
    cr_assert(!mh__pv_bool(mh__pv_at(t, 9), &b) && b == 0);
    cr_assert_eq(mh__pv_at(t, 10)->type, MH__PV_BYTES, "BYTEARRAY8 reads as bytes");
    mh__pickle_doc_free(doc);
}

Test(pickle_read, containers_and_memo)
{
    /* {"a": [1, 2], "b": <same list>, "c": (), "d": {3}, "e": frozenset()} */
    struct mh__pickle_doc *doc = parse_ok(P("\x80\x04}\x94(\x8c\x01"
                                           "a]\x94(K\x01K\x02"
                                           "e\x8c\x01"
                                           "bh\x01\x8c\x01"
                                           "c)\x8c\x01"
                                           "d\x8f("
                                           "K\x03\x90\x8c\x01"
                                           "e(\x91u."));
    struct mh__pv *d = mh__pickle_doc_root(doc);
    cr_assert_eq(d->type, MH__PV_DICT);
    cr_assert_eq(d->n, 5);
    const struct mh__pv *a = mh__pv_get(d, "a"), *b = mh__pv_get(d, "b");
    cr_assert_eq(a, b, "memo references give the same node");
    cr_assert_eq(a->type, MH__PV_LIST);
    cr_assert_eq(a->n, 2);
    cr_assert_eq(mh__pv_get(d, "c")->type, MH__PV_TUPLE);
    cr_assert_eq(mh__pv_get(d, "d")->type, MH__PV_SET);
    cr_assert_eq(mh__pv_get(d, "d")->n, 1);
    cr_assert_eq(mh__pv_get(d, "e")->type, MH__PV_FROZENSET);
    cr_assert_null(mh__pv_get(d, "zz"));
    mh__pickle_doc_free(doc);
}

Test(pickle_read, stack_ops)
{
    /* POP_MARK, POP, DUP, TUPLE1-3, LIST, DICT, SETITEM, APPEND:
     * ((5, 5), ([4],), ((1, 2, 3), ([1], {"k": 1}, {"x": 2}))) */
    struct mh__pickle_doc *doc = parse_ok(P("\x80\x02(K\x01K\x02"
                                           "1K\x09"
                                           "0K\x05"
                                           "2\x86]K\x04"
                                           "a\x85K\x01K\x02K\x03\x87"
                                           "(K\x01l(\x8c\x01kK\x01"
                                           "d}\x8c\x01xK\x02s\x87\x86\x87."));
    struct mh__pv *t = mh__pickle_doc_root(doc);
    cr_assert_eq(t->type, MH__PV_TUPLE);
    cr_assert_eq(t->n, 3);
    const struct mh__pv *pair = mh__pv_at(t, 0);
    int64_t v;
    cr_assert(!mh__pv_i64(mh__pv_at(pair, 0), &v) && v == 5);
    cr_assert(!mh__pv_i64(mh__pv_at(pair, 1), &v) && v == 5, "DUP");
    cr_assert_eq(mh__pv_at(mh__pv_at(t, 1), 0)->type, MH__PV_LIST);
    const struct mh__pv *last = mh__pv_at(t, 2);
    cr_assert_eq(mh__pv_at(last, 0)->n, 3);
    const struct mh__pv *x = mh__pv_get(mh__pv_at(mh__pv_at(last, 1), 2), "x");
    cr_assert(!mh__pv_i64(x, &v) && v == 2, "SETITEM");
    cr_assert(!mh__pv_i64(mh__pv_get(mh__pv_at(mh__pv_at(last, 1), 1), "k"), &v) && v == 1, "DICT");
    mh__pickle_doc_free(doc);
}

Test(pickle_read, protocol0_text)
{
    struct mh__pickle_doc *doc = parse_ok(
        P("(dp0\nVk\\u00e9y\np1\n(lp2\nI42\naI01\naL123456789012345678901234567890L\naF2.5\n"
          "aS'it\\'s\\x41'\nag1\nas."));
    struct mh__pv *d = mh__pickle_doc_root(doc);
    cr_assert_eq(d->type, MH__PV_DICT);
    const struct mh__pv *l = mh__pv_get(d, "k\xc3\xa9y");
    cr_assert_not_null(l);
    cr_assert_eq(l->n, 6);
    int64_t v;
    cr_assert(!mh__pv_i64(mh__pv_at(l, 0), &v) && v == 42);
    cr_assert_eq(mh__pv_at(l, 1)->type, MH__PV_BOOL);
    cr_assert_eq(mh__pv_at(l, 2)->type, MH__PV_BIGINT);
    double f;
    cr_assert(!mh__pv_f64(mh__pv_at(l, 3), &f) && f == 2.5);
    cr_assert(mh__pv_is_str(mh__pv_at(l, 4), "it'sA"));
    cr_assert(mh__pv_is_str(mh__pv_at(l, 5), "k\xc3\xa9y"), "GET of the memoized key");
    mh__pickle_doc_free(doc);
}

Test(pickle_read, refuses_code)
{
    static const struct {
        const char *data;
        size_t len;
        const char *name;
    } cases[] = {
        {P("\x80\x02"
           "cos\nsystem\n."),
         "GLOBAL"},
        {P("\x80\x04N\x93."), "STACK_GLOBAL"},
        {P("\x80\x02NNR."), "REDUCE"},
        {P("\x80\x02NNb."), "BUILD"},
        {P("\x80\x02NN\x81."), "NEWOBJ"},
        {P("\x80\x04NNN\x92."), "NEWOBJ_EX"},
        {P("\x80\x02(ios\nsystem\n."), "INST"},
        {P("\x80\x02(No."), "OBJ"},
        {P("\x80\x02\x82\x01."), "EXT1"},
        {P("\x80\x02\x83\x01\x00."), "EXT2"},
        {P("\x80\x02\x84\x01\x00\x00\x00."), "EXT4"},
        {P("Pid\n."), "PERSID"},
        {P("\x80\x02NQ."), "BINPERSID"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = parse_rc(cases[i].data, cases[i].len);
        cr_assert_eq(rc, MH_EUNSAFE, "%s: rc %d", cases[i].name, rc);
        cr_assert(strstr(err, cases[i].name) && strstr(err, "offset"), "%s: %s", cases[i].name,
                  err);
    }
}

Test(pickle_read, malformed)
{
    cr_assert_eq(parse_rc(P("")), MH_ETRUNCATED);
    cr_assert_eq(parse_rc(P("\x80\x04K")), MH_ETRUNCATED);
    cr_assert_eq(parse_rc(P("\x80\x04X\xff\xff\xff\xff.")), MH_ETRUNCATED);
    cr_assert_eq(parse_rc(P("\x80\x04.")), MH_EFORMAT, "STOP on an empty stack");
    cr_assert_eq(parse_rc(P("\x80\x04\xff.")), MH_EFORMAT);
    cr_assert_eq(parse_rc(P("\x80\x07N.")), MH_EVERSION);
    cr_assert_eq(parse_rc(P("\x80\x04h\x03.")), MH_EFORMAT, "GET of a missing memo entry");
    cr_assert_eq(parse_rc(P("\x80\x04K\x01u.")), MH_EFORMAT, "SETITEMS without MARK");
    cr_assert_eq(parse_rc(P("\x80\x04K\x01(K\x02"
                            "a.")),
                 MH_EFORMAT, "APPEND across a MARK");
    cr_assert_eq(parse_rc(P("\x80\x04}(K\x01u.")), MH_EFORMAT, "odd dict items");
    cr_assert_eq(parse_rc(P("\x80\x04](K\x01u.")), MH_EFORMAT, "SETITEMS on a list");
    cr_assert_eq(parse_rc(P("\x80\x04]\x94h\x00"
                            "a.")),
                 MH_EFORMAT, "a list inside itself");
    /* [x] then x changed through the memo after it was placed */
    cr_assert_eq(parse_rc(P("\x80\x04]]\x94"
                            "ah\x00K\x01"
                            "a.")),
                 MH_EFORMAT);
    cr_assert_eq(parse_rc(P("\x80\x04\x8c\x02\xc3(.")), MH_EFORMAT, "invalid UTF-8");
    cr_assert_eq(parse_rc(P("\x80\x04Nr\xf0\xff\xff\x0f.")), MH_ELIMIT, "memo index");
    cr_assert_eq(parse_rc(P("\x80\x05N\x97.")), MH_EUNSUPPORTED, "NEXT_BUFFER");
}

Test(pickle_read, limits)
{
    size_t n = 100000;
    unsigned char *deep = malloc(n + 3);
    deep[0] = 0x80;
    deep[1] = 4;
    memset(deep + 2, '(', n);
    deep[n + 2] = '.';
    cr_assert_eq(parse_rc(deep, n + 3), MH_ELIMIT);
    memset(deep + 2, ']', 300);
    memset(deep + 302, 'a', 299);
    deep[601] = '.';
    cr_assert_eq(parse_rc(deep, 602), MH_ELIMIT, "nesting deeper than the limit");
    free(deep);
    struct mh__pickle_limits lim = {4096, 0};
    struct mh__pickle_doc *doc = NULL;
    size_t len;
    unsigned char *data = slurp("small.p4.pickle", &len);
    cr_assert_eq(mh__pickle_parse(data, len, &lim, &doc, err, sizeof err), MH_ELIMIT);
    cr_assert_null(doc);
    free(data);
}

Test(pickle_read, shared_empties_keep_identity)
{
    /* ([], [1], []): three distinct lists from EMPTY_LIST */
    struct mh__pickle_doc *doc = parse_ok(P("\x80\x04(]]K\x01"
                                           "a]t."));
    struct mh__pv *t = mh__pickle_doc_root(doc);
    cr_assert_eq(t->n, 3);
    cr_assert_eq(mh__pv_at(t, 0)->n, 0);
    cr_assert_eq(mh__pv_at(t, 1)->n, 1, "APPEND changes only its own list");
    cr_assert_eq(mh__pv_at(t, 2)->n, 0);
    mh__pickle_doc_free(doc);
    /* L = []; memo L; GET L; L.append(1); (L, L): both are the changed list */
    doc = parse_ok(P("\x80\x04]\x94h\x00K\x01"
                     "a\x86."));
    t = mh__pickle_doc_root(doc);
    cr_assert_eq(mh__pv_at(t, 0), mh__pv_at(t, 1), "memo references give the same node");
    cr_assert_eq(mh__pv_at(t, 0)->n, 1);
    mh__pickle_doc_free(doc);
    /* the same through DUP, and a dict */
    doc = parse_ok(P("\x80\x04}2K\x01K\x02s\x86."));
    t = mh__pickle_doc_root(doc);
    cr_assert_eq(mh__pv_at(t, 0), mh__pv_at(t, 1), "DUP gives the same node");
    cr_assert_eq(mh__pv_at(t, 0)->n, 1);
    mh__pickle_doc_free(doc);
    cr_assert_eq(parse_rc(P("\x80\x04]2a.")), MH_EFORMAT, "a list inside itself");
}

/* n empty lists in one list, with a memo entry each (torch's form) or not. */
static unsigned char *empty_lists(size_t n, int memo, size_t *len)
{
    unsigned char *b = malloc(2 * n + 8), *p = b;
    *p++ = 0x80;
    *p++ = 4;
    *p++ = '(';
    for (size_t i = 0; i < n; i++) {
        *p++ = ']';
        if (memo)
            *p++ = 0x94;
    }
    *p++ = 'l';
    *p++ = '.';
    *len = (size_t)(p - b);
    return b;
}

Test(pickle_read, memory_per_input_byte)
{
    /* without memo entries, empty lists cost no node: 8 bytes of stack and
     * 8 of the outer list's items per list (16 more with a node each) */
    size_t len, n = 4u << 20;
    unsigned char *data = empty_lists(n, 0, &len);
    struct mh__pickle_doc *doc = parse_ok(data, len);
    cr_assert_eq(mh__pickle_doc_root(doc)->n, n);
    double per = (double)mh__pickle_doc_bytes(doc) / (double)len;
    cr_log_info("%zu empty lists: %.1f bytes per input byte", n, per);
    cr_assert_lt(per, 20.0);
    mh__pickle_doc_free(doc);
    free(data);
    /* appended one at a time (APPEND), the list's growing array leaves no
     * copies behind: 8 bytes per list at most, 2 input bytes each */
    data = malloc(2 * n + 4);
    memcpy(data, "\x80\x04]", 3);
    for (size_t i = 0; i < n; i++)
        memcpy(data + 3 + 2 * i, "]a", 2);
    data[3 + 2 * n] = '.';
    doc = parse_ok(data, 4 + 2 * n);
    cr_assert_eq(mh__pickle_doc_root(doc)->n, n);
    per = (double)mh__pickle_doc_bytes(doc) / (double)(4 + 2 * n);
    cr_log_info("%zu empty lists appended: %.1f bytes per input byte", n, per);
    cr_assert_lt(per, 6.0);
    mh__pickle_doc_free(doc);
    free(data);
    /* the default limit grows with the input: 4 M memoized lists need more
     * than the 64 MiB floor and parse; 16 M need more than 64 MiB + 16 bytes
     * per input byte and fail with a limit naming that rule */
    data = empty_lists(n, 1, &len);
    doc = parse_ok(data, len);
    cr_assert_gt(mh__pickle_doc_bytes(doc), 64ull << 20);
    mh__pickle_doc_free(doc);
    free(data);
    data = empty_lists(4 * n, 1, &len);
    cr_assert_eq(parse_rc(data, len), MH_ELIMIT);
    cr_assert(strstr(err, "16 bytes per input byte"), "message: %s", err);
    free(data);
}

Test(pickle_read, committed_snapshots)
{
    const char *names[] = {"small.p2.pickle", "small.p4.pickle", "small.p5.pickle"};
    for (int i = 0; i < 3; i++) {
        size_t len;
        unsigned char *data = slurp(names[i], &len);
        struct mh__pickle_doc *doc = parse_ok(data, len);
        struct mh__pv *root = mh__pickle_doc_root(doc);
        cr_assert_eq(root->type, MH__PV_DICT);
        cr_assert(mh__pv_is_seq(mh__pv_get(root, "segments")));
        const struct mh__pv *traces = mh__pv_get(root, "device_traces");
        cr_assert_eq(traces->n, 1);
        const struct mh__pv *e0 = mh__pv_at(mh__pv_at(traces, 0), 0);
        cr_assert(mh__pv_is_str(mh__pv_get(e0, "action"), "segment_alloc"));
        cr_assert_eq(mh__pickle_doc_protocol(doc), i == 0 ? 2 : i == 1 ? 4 : 5);
        mh__pickle_doc_free(doc);
        free(data);
    }
    size_t len;
    unsigned char *evil = slurp("evil_global.p2.pickle", &len);
    cr_assert_eq(parse_rc(evil, len), MH_EUNSAFE);
    free(evil);
    evil = slurp("evil_global.p4.pickle", &len);
    cr_assert_eq(parse_rc(evil, len), MH_EUNSAFE);
    cr_assert(strstr(err, "STACK_GLOBAL"), "%s", err);
    free(evil);
}

Test(pickle_read, truncated_everywhere)
{
    size_t len;
    unsigned char *data = slurp("small.p2.pickle", &len);
    for (size_t n = 0; n + 1 < len; n++) {
        unsigned char *cut = malloc(n ? n : 1);
        memcpy(cut, data, n);
        int rc = parse_rc(cut, n);
        cr_assert(rc < 0, "a pickle cut at %zu bytes parsed", n);
        free(cut);
    }
    free(data);
}
