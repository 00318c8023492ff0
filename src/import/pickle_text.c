/* pickle_text.c - the strict pickle reader's text and string decoding.
 *
 * Protocol 0 writes numbers, strings and memo indexes as text lines; Python 2
 * era protocol 2 pickles carry byte strings (BINSTRING family) that Python 3
 * reads as Latin-1. These helpers decode them into pickle_value.h nodes. Also
 * the opcode name table used in error messages. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "pickle_parse.h"
#include "pickle_read.h"

#define MAX_NUMBER_LINE 4096

/* The line after the opcode, without its '\n'. */
static int take_line(struct mh__pr *pr, const unsigned char **s, size_t *n)
{
    const unsigned char *nl = memchr(pr->p, '\n', (size_t)(pr->end - pr->p));
    if (!nl)
        return mh__pr_fail(pr, MH_ETRUNCATED, "line without its newline");
    *s = pr->p;
    *n = (size_t)(nl - pr->p);
    pr->p = nl + 1;
    return 0;
}

/* Copies a short number line into `buf` as a C string. */
static int number_line(struct mh__pr *pr, char *buf, size_t cap)
{
    const unsigned char *s = NULL;
    size_t n = 0;
    int rc = take_line(pr, &s, &n);
    if (rc)
        return rc;
    while (n && (s[n - 1] == '\r' || s[n - 1] == ' '))
        n--;
    if (n == 0 || n >= cap)
        return mh__pr_fail(pr, n ? MH_ELIMIT : MH_EFORMAT, "number of %zu characters", n);
    memcpy(buf, s, n);
    buf[n] = '\0';
    return 0;
}

/* Decimal text to a BIGINT node (little-endian two's complement). */
static struct mh__pv *decimal_bigint(struct mh__pr *pr, const char *text)
{
    int neg = *text == '-';
    if (*text == '-' || *text == '+')
        text++;
    size_t digits = strlen(text);
    size_t cap = digits / 2 + 2; /* bytes: log256(10^d) < d/2 */
    unsigned char *b = mh__pr_alloc(pr, cap);
    if (!b)
        return NULL;
    memset(b, 0, cap);
    for (const char *c = text; *c; c++) {
        if (*c < '0' || *c > '9') {
            mh__pr_fail(pr, MH_EFORMAT, "invalid integer text");
            return NULL;
        }
        unsigned carry = (unsigned)(*c - '0');
        for (size_t i = 0; i < cap; i++) {
            unsigned x = b[i] * 10u + carry;
            b[i] = (unsigned char)x;
            carry = x >> 8;
        }
    }
    if (neg) { /* two's complement: invert and add one */
        unsigned carry = 1;
        for (size_t i = 0; i < cap; i++) {
            unsigned x = (unsigned char)~b[i] + carry;
            b[i] = (unsigned char)x;
            carry = x >> 8;
        }
    }
    struct mh__pv *v = mh__pr_scalar(pr, MH__PV_BIGINT);
    if (v) {
        v->n = (uint32_t)cap;
        v->u.s = (const char *)b;
    }
    return v;
}

static int push_decimal(struct mh__pr *pr, char *buf)
{
    char *end;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    if (end == buf || *end)
        return mh__pr_fail(pr, MH_EFORMAT, "invalid integer '%s'", buf);
    if (errno == ERANGE) {
        struct mh__pv *v = decimal_bigint(pr, buf);
        return v ? mh__pr_push(pr, v) : MH_EFORMAT;
    }
    struct mh__pv *v = mh__pr_scalar(pr, MH__PV_INT);
    if (v)
        v->u.i = x;
    return mh__pr_push(pr, v);
}

int mh__pr_text_int(struct mh__pr *pr)
{
    char buf[MAX_NUMBER_LINE];
    int rc = number_line(pr, buf, sizeof buf);
    if (rc)
        return rc;
    if (strcmp(buf, "00") == 0 || strcmp(buf, "01") == 0)
        return mh__pr_push(pr, pr->consts[buf[1] == '1' ? 2 : 1]);
    return push_decimal(pr, buf);
}

int mh__pr_text_long(struct mh__pr *pr)
{
    char buf[MAX_NUMBER_LINE];
    int rc = number_line(pr, buf, sizeof buf);
    if (rc)
        return rc;
    size_t n = strlen(buf);
    if (n > 1 && buf[n - 1] == 'L')
        buf[n - 1] = '\0';
    return push_decimal(pr, buf);
}

int mh__pr_text_float(struct mh__pr *pr)
{
    char buf[MAX_NUMBER_LINE];
    int rc = number_line(pr, buf, sizeof buf);
    if (rc)
        return rc;
    char *end;
    double x = strtod(buf, &end);
    if (end == buf || *end)
        return mh__pr_fail(pr, MH_EFORMAT, "invalid float '%s'", buf);
    struct mh__pv *v = mh__pr_scalar(pr, MH__PV_FLOAT);
    if (v)
        v->u.f = x;
    return mh__pr_push(pr, v);
}

int mh__pr_text_index(struct mh__pr *pr, uint64_t *idx)
{
    char buf[32];
    int rc = number_line(pr, buf, sizeof buf);
    if (rc)
        return rc;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(buf, &end, 10);
    if (*buf == '-' || end == buf || *end || errno)
        return mh__pr_fail(pr, MH_EFORMAT, "invalid memo index '%s'", buf);
    *idx = x;
    return 0;
}

/* Appends code point cp as UTF-8 (surrogates allowed, as Python's str). */
static size_t put_utf8(unsigned char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xc0 | cp >> 6);
        o[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xe0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (unsigned char)(0xf0 | cp >> 18);
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

static struct mh__pv *str_node(struct mh__pr *pr, const unsigned char *s, size_t n)
{
    struct mh__pv *v = mh__pr_scalar(pr, MH__PV_STR);
    if (v) {
        v->n = (uint32_t)n;
        v->u.s = (const char *)s;
    }
    return v;
}

struct mh__pv *mh__pr_latin1(struct mh__pr *pr, const unsigned char *s, size_t n)
{
    size_t high = 0;
    for (size_t i = 0; i < n; i++)
        high += s[i] >= 0x80;
    if (!high)
        return str_node(pr, s, n);
    unsigned char *o = mh__pr_alloc(pr, n + high);
    if (!o)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += put_utf8(o + k, s[i]);
    return str_node(pr, o, k);
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Reads `digits` hex digits at s[*i]; -1 if they are not there. */
static int64_t hex_run(const unsigned char *s, size_t n, size_t *i, int digits)
{
    int64_t x = 0;
    for (int d = 0; d < digits; d++) {
        if (*i >= n || hexval(s[*i]) < 0)
            return -1;
        x = x * 16 + hexval(s[(*i)++]);
    }
    return x;
}

/* One backslash escape of a Python 2 str repr; appends bytes to o. */
static int escape_byte(const unsigned char *s, size_t n, size_t *i, unsigned char *o, size_t *k)
{
    unsigned char c = s[(*i)++];
    const char *from = "\\'\"abfnrtv", *to = "\\'\"\a\b\f\n\r\t\v";
    const char *hit = c ? strchr(from, c) : NULL;
    if (hit) {
        o[(*k)++] = (unsigned char)to[hit - from];
    } else if (c == 'x') {
        int64_t x = hex_run(s, n, i, 2);
        if (x < 0)
            return MH_EFORMAT;
        o[(*k)++] = (unsigned char)x;
    } else if (c >= '0' && c <= '7') {
        unsigned x = (unsigned)(c - '0');
        for (int d = 0; d < 2 && *i < n && s[*i] >= '0' && s[*i] <= '7'; d++)
            x = x * 8 + (unsigned)(s[(*i)++] - '0');
        o[(*k)++] = (unsigned char)x;
    } else if (c != '\n') {
        o[(*k)++] = '\\';
        o[(*k)++] = c;
    }
    return 0;
}

int mh__pr_text_string(struct mh__pr *pr)
{
    const unsigned char *s = NULL;
    size_t n = 0;
    int rc = take_line(pr, &s, &n);
    if (rc)
        return rc;
    if (n < 2 || (s[0] != '\'' && s[0] != '"') || s[n - 1] != s[0])
        return mh__pr_fail(pr, MH_EFORMAT, "the STRING opcode argument must be quoted");
    s++;
    n -= 2;
    unsigned char *o = mh__pr_alloc(pr, n + 1);
    if (!o)
        return pr->code;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] != '\\') {
            o[k++] = s[i++];
            continue;
        }
        i++;
        if (i >= n || escape_byte(s, n, &i, o, &k))
            return mh__pr_fail(pr, MH_EFORMAT, "invalid escape in STRING");
    }
    return mh__pr_push(pr, mh__pr_latin1(pr, o, k));
}

int mh__pr_text_unicode(struct mh__pr *pr)
{
    const unsigned char *s = NULL;
    size_t n = 0;
    int rc = take_line(pr, &s, &n);
    if (rc)
        return rc;
    unsigned char *o = mh__pr_alloc(pr, 2 * n + 4);
    if (!o)
        return pr->code;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] == '\\' && i + 1 < n && (s[i + 1] == 'u' || s[i + 1] == 'U')) {
            int digits = s[i + 1] == 'u' ? 4 : 8;
            i += 2;
            int64_t cp = hex_run(s, n, &i, digits);
            if (cp < 0 || cp > 0x10ffff)
                return mh__pr_fail(pr, MH_EFORMAT, "invalid \\u escape in UNICODE");
            k += put_utf8(o + k, (uint32_t)cp);
        } else {
            k += put_utf8(o + k, s[i++]); /* raw-unicode-escape: other bytes are Latin-1 */
        }
    }
    return mh__pr_push(pr, str_node(pr, o, k));
}

int mh__utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        while (i + 8 <= n) { /* ASCII fast path */
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
        if (!len || c > 0xf4 || i + len > n)
            return 0;
        for (size_t j = 1; j < len; j++)
            if ((s[i + j] & 0xc0) != 0x80)
                return 0;
        if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xf0 && s[i + 1] < 0x90) ||
            (c == 0xf4 && s[i + 1] > 0x8f))
            return 0; /* overlong or beyond U+10FFFF; surrogates pass */
        i += len;
    }
    return 1;
}

const char *mh__pickle_opcode_name(unsigned char op)
{
    static const struct {
        unsigned char op;
        const char *name;
    } names[] = {
        {'(', "MARK"},
        {'.', "STOP"},
        {'0', "POP"},
        {'1', "POP_MARK"},
        {'2', "DUP"},
        {'F', "FLOAT"},
        {'I', "INT"},
        {'J', "BININT"},
        {'K', "BININT1"},
        {'L', "LONG"},
        {'M', "BININT2"},
        {'N', "NONE"},
        {'P', "PERSID"},
        {'Q', "BINPERSID"},
        {'R', "REDUCE"},
        {'S', "STRING"},
        {'T', "BINSTRING"},
        {'U', "SHORT_BINSTRING"},
        {'V', "UNICODE"},
        {'X', "BINUNICODE"},
        {'a', "APPEND"},
        {'b', "BUILD"},
        {'c', "GLOBAL"},
        {'d', "DICT"},
        {'}', "EMPTY_DICT"},
        {'e', "APPENDS"},
        {'g', "GET"},
        {'h', "BINGET"},
        {'i', "INST"},
        {'j', "LONG_BINGET"},
        {'l', "LIST"},
        {']', "EMPTY_LIST"},
        {'o', "OBJ"},
        {'p', "PUT"},
        {'q', "BINPUT"},
        {'r', "LONG_BINPUT"},
        {'s', "SETITEM"},
        {'t', "TUPLE"},
        {')', "EMPTY_TUPLE"},
        {'u', "SETITEMS"},
        {'G', "BINFLOAT"},
        {0x80, "PROTO"},
        {0x81, "NEWOBJ"},
        {0x82, "EXT1"},
        {0x83, "EXT2"},
        {0x84, "EXT4"},
        {0x85, "TUPLE1"},
        {0x86, "TUPLE2"},
        {0x87, "TUPLE3"},
        {0x88, "NEWTRUE"},
        {0x89, "NEWFALSE"},
        {0x8a, "LONG1"},
        {0x8b, "LONG4"},
        {'B', "BINBYTES"},
        {'C', "SHORT_BINBYTES"},
        {0x8c, "SHORT_BINUNICODE"},
        {0x8d, "BINUNICODE8"},
        {0x8e, "BINBYTES8"},
        {0x8f, "EMPTY_SET"},
        {0x90, "ADDITEMS"},
        {0x91, "FROZENSET"},
        {0x92, "NEWOBJ_EX"},
        {0x93, "STACK_GLOBAL"},
        {0x94, "MEMOIZE"},
        {0x95, "FRAME"},
        {0x96, "BYTEARRAY8"},
        {0x97, "NEXT_BUFFER"},
        {0x98, "READONLY_BUFFER"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].op == op)
            return names[i].name;
    return NULL;
}
