/* test_model_utf8.c - well-formed UTF-8 and \xNN escaping (model/utf8.h):
 * what counts as a sequence, escaped output, control characters, and cutting
 * to a buffer without splitting an escape or a character. */
#include <criterion/criterion.h>
#include <string.h>

#include "utf8.h"

static size_t seq(const char *s)
{
    return mh__utf8_seq((const unsigned char *)s, strlen(s));
}

Test(utf8, sequences)
{
    cr_expect_eq(seq("a"), 1);
    cr_expect_eq(seq("\xc3\xa9"), 2);         /* é */
    cr_expect_eq(seq("\xe2\x82\xac"), 3);     /* € */
    cr_expect_eq(seq("\xf0\x9f\x98\x80"), 4); /* U+1F600 */
    cr_expect_eq(seq("\xf4\x8f\xbf\xbf"), 4); /* U+10FFFF */
    cr_expect_eq(seq("\xff"), 0);
    cr_expect_eq(seq("\x80"), 0);             /* stray continuation */
    cr_expect_eq(seq("\xc0\xaf"), 0);         /* overlong '/' */
    cr_expect_eq(seq("\xe0\x80\xaf"), 0);     /* overlong */
    cr_expect_eq(seq("\xed\xa0\x80"), 0);     /* surrogate U+D800 */
    cr_expect_eq(seq("\xf4\x90\x80\x80"), 0); /* beyond U+10FFFF */
    cr_expect_eq(seq("\xe2\x82"), 0);         /* cut short */
}

Test(utf8, escape)
{
    char out[64];
    const char *s = "m\xff\x1b" "caf\xc3\xa9\xc2\x9b";
    size_t need = mh__utf8_escape(s, strlen(s), 0, out, sizeof out);
    cr_expect_str_eq(out, "m\\xff\x1b" "caf\xc3\xa9\xc2\x9b");
    cr_expect_eq(need, strlen(out));
    need = mh__utf8_escape(s, strlen(s), MH__UTF8_ESC_CONTROL, out, sizeof out);
    cr_expect_str_eq(out, "m\\xff\\x1bcaf\xc3\xa9\\xc2\\x9b");
    cr_expect_eq(need, strlen(out));
    cr_expect(mh__utf8_clean("caf\xc3\xa9", 5, MH__UTF8_ESC_CONTROL));
    cr_expect(!mh__utf8_clean("a\tb", 3, MH__UTF8_ESC_CONTROL));
    cr_expect(mh__utf8_clean("a\tb", 3, 0));
}

Test(utf8, cut_to_fit)
{
    char out[8];
    /* "ab" + \xff (4) fits in 7; the é after it does not (2 more) */
    size_t need = mh__utf8_escape("ab\xff\xc3\xa9z", 6, 0, out, sizeof out);
    cr_expect_str_eq(out, "ab\\xff");
    cr_expect_eq(need, 9);
    need = mh__utf8_escape("abcde\xff", 6, 0, out, sizeof out);
    cr_expect_str_eq(out, "abcde"); /* no half escape */
    char buf[16] = "x\xfe";
    cr_expect_str_eq(mh__utf8_escape_in_place(buf, sizeof buf, 0), "x\\xfe");
}
