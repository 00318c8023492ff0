/* test_viz_json_read.c - the span JSON reader: valid documents, iteration,
 * strings and numbers, and rejection of malformed or too deep input. */
#include <criterion/criterion.h>
#include <string.h>

#include "memhist/error.h"
#include "json_read.h"

static int parse(const char *text, struct mh__jr_doc *d, struct mh__jr_value *root, char *err)
{
    return mh__jr_parse(d, text, strlen(text), 0, 0, root, err, 160);
}

Test(json_read, valid_documents)
{
    static const char *const ok[] = {
        "{}", "[]", " 0 ", "-1.5e+3", "\"a\\u00e9\\n\"", "true", "null",
        "{\"a\":[1,2,{\"b\":null}],\"c\":\"x\"}", "[[[[]]]]", "1E5", "[0.25, -0, 1e-2]"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        struct mh__jr_doc d;
        struct mh__jr_value v;
        char err[160] = "";
        cr_assert_eq(parse(ok[i], &d, &v, err), 0, "%s: %s", ok[i], err);
    }
}

Test(json_read, invalid_documents)
{
    static const char *const bad[] = {"",        "{",         "[1,]",      "{\"a\" 1}",
                                      "[1 2]",   "01",        "1.",        "-",
                                      "\"abc",   "\"\\x\"",   "\"\\u12g4\"", "tru",
                                      "{1:2}",   "[1]]",      "nul",       "\"a\x01\"",
                                      "{\"a\":}", "[\"\\u12\"]", "+1",      ".5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct mh__jr_doc d;
        struct mh__jr_value v;
        char err[160] = "";
        cr_assert_neq(parse(bad[i], &d, &v, err), 0, "accepted: %s", bad[i]);
        cr_assert(strstr(err, "at byte") != NULL, "%s: %s", bad[i], err);
    }
}

Test(json_read, depth_and_size_limits)
{
    char deep[300];
    memset(deep, '[', 150);
    memset(deep + 150, ']', 150);
    struct mh__jr_doc d;
    struct mh__jr_value v;
    char err[160];
    cr_assert_eq(mh__jr_parse(&d, deep, 300, 0, 0, &v, err, sizeof err), MH_ELIMIT);
    cr_assert(strstr(err, "deep") != NULL, "%s", err);
    cr_assert_eq(mh__jr_parse(&d, deep, 300, 200, 0, &v, err, sizeof err), 0);
    cr_assert_eq(mh__jr_parse(&d, "[1,2,3]", 7, 0, 4, &v, err, sizeof err), MH_ELIMIT);
}

Test(json_read, iterate_and_find)
{
    const char *text = "{\"traceEvents\":[{\"ts\":1.5,\"ph\":\"X\"},{\"ts\":3}],"
                       "\"baseTimeNanoseconds\":1700000000000000123,\"n\\u0061me\":\"t\\\"r\"}";
    struct mh__jr_doc d;
    struct mh__jr_value root, ev, v, k;
    char err[160];
    cr_assert_eq(parse(text, &d, &root, err), 0, "%s", err);
    cr_assert_eq(root.type, MH__JR_OBJECT);
    cr_assert(mh__jr_find(&d, &root, "traceEvents", &ev));
    cr_assert_eq(ev.type, MH__JR_ARRAY);
    size_t pos = 0, n = 0;
    double sum = 0;
    while (mh__jr_next(&d, &ev, &pos, NULL, &v)) {
        cr_assert_eq(v.type, MH__JR_OBJECT);
        struct mh__jr_value ts;
        double x;
        cr_assert(mh__jr_find(&d, &v, "ts", &ts));
        cr_assert_eq(mh__jr_double(&d, &ts, &x), 0);
        sum += x;
        n++;
    }
    cr_assert_eq(n, 2);
    cr_assert_float_eq(sum, 4.5, 1e-9);
    uint64_t base;
    cr_assert(mh__jr_find(&d, &root, "baseTimeNanoseconds", &v));
    cr_assert_eq(mh__jr_u64(&d, &v, &base), 0);
    cr_assert_eq(base, 1700000000000000123ull, "integers are exact");
    cr_assert(mh__jr_find(&d, &root, "name", &v), "escaped keys match");
    char s[16];
    cr_assert_eq(mh__jr_string(&d, &v, s, sizeof s), 3);
    cr_assert_str_eq(s, "t\"r");
    pos = 0;
    n = 0;
    while (mh__jr_next(&d, &root, &pos, &k, &v))
        n++;
    cr_assert_eq(n, 3);
    cr_assert_neq(mh__jr_u64(&d, &ev, &base), 0, "not a number");
}

Test(json_read, strings_truncate_safely)
{
    struct mh__jr_doc d;
    struct mh__jr_value v;
    char err[160], out[4];
    cr_assert_eq(parse("\"abcdef\\u00e9\"", &d, &v, err), 0);
    cr_assert_eq(mh__jr_string(&d, &v, out, sizeof out), 8);
    cr_assert_str_eq(out, "abc");
    cr_assert(mh__jr_string_eq(&d, &v, "abcdef\xc3\xa9"));
}
