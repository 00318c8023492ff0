/* json_read.c - validating JSON reader over spans (see json_read.h).
 *
 * One recursive-descent scanner does both jobs: with a depth budget it
 * validates, and over validated bytes it measures a value's extent for the
 * iterators. Recursion is bounded by max_depth. */
#include "json_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"

struct scanner {
    const char *b;
    size_t n, pos;
    int max_depth;
    const char *problem;
};

static void skip_ws(struct scanner *s)
{
    while (s->pos < s->n && (s->b[s->pos] == ' ' || s->b[s->pos] == '\t' ||
                             s->b[s->pos] == '\n' || s->b[s->pos] == '\r'))
        s->pos++;
}

static int fail(struct scanner *s, const char *problem)
{
    if (!s->problem)
        s->problem = problem;
    return MH_EFORMAT;
}

static int is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int scan_string(struct scanner *s)
{
    s->pos++; /* opening quote */
    while (s->pos < s->n) {
        unsigned char c = (unsigned char)s->b[s->pos++];
        if (c == '"')
            return 0;
        if (c < 0x20)
            return fail(s, "control character in a string");
        if (c != '\\')
            continue;
        if (s->pos >= s->n)
            break;
        char e = s->b[s->pos++];
        if (e == 'u') {
            if (s->n - s->pos < 4)
                break;
            for (int i = 0; i < 4; i++)
                if (!is_hex(s->b[s->pos + i]))
                    return fail(s, "bad \\u escape");
            s->pos += 4;
        } else if (!strchr("\"\\/bfnrt", e) || e == '\0') {
            return fail(s, "bad escape");
        }
    }
    return fail(s, "unterminated string");
}

static int scan_digits(struct scanner *s)
{
    size_t start = s->pos;
    while (s->pos < s->n && s->b[s->pos] >= '0' && s->b[s->pos] <= '9')
        s->pos++;
    return s->pos > start ? 0 : fail(s, "bad number");
}

static int scan_number(struct scanner *s)
{
    if (s->b[s->pos] == '-')
        s->pos++;
    if (s->pos < s->n && s->b[s->pos] == '0')
        s->pos++;
    else if (scan_digits(s))
        return MH_EFORMAT;
    if (s->pos < s->n && s->b[s->pos] == '.') {
        s->pos++;
        if (scan_digits(s))
            return MH_EFORMAT;
    }
    if (s->pos < s->n && (s->b[s->pos] == 'e' || s->b[s->pos] == 'E')) {
        s->pos++;
        if (s->pos < s->n && (s->b[s->pos] == '+' || s->b[s->pos] == '-'))
            s->pos++;
        if (scan_digits(s))
            return MH_EFORMAT;
    }
    return 0;
}

static int scan_word(struct scanner *s, const char *w)
{
    size_t n = strlen(w);
    if (s->n - s->pos < n || memcmp(s->b + s->pos, w, n) != 0)
        return fail(s, "unexpected character");
    s->pos += n;
    return 0;
}

static int scan_value(struct scanner *s, int depth, struct mh__jr_value *out);

/* Array or object; `obj` selects members. */
static int scan_container(struct scanner *s, int depth, int obj)
{
    if (depth >= s->max_depth) {
        s->problem = "nesting too deep";
        return MH_ELIMIT;
    }
    char close = obj ? '}' : ']';
    s->pos++;
    skip_ws(s);
    if (s->pos < s->n && s->b[s->pos] == close) {
        s->pos++;
        return 0;
    }
    for (;;) {
        struct mh__jr_value v;
        int rc;
        if (obj) {
            skip_ws(s);
            if (s->pos >= s->n || s->b[s->pos] != '"')
                return fail(s, "expected a member name");
            if ((rc = scan_string(s)) != 0)
                return rc;
            skip_ws(s);
            if (s->pos >= s->n || s->b[s->pos] != ':')
                return fail(s, "expected ':'");
            s->pos++;
        }
        if ((rc = scan_value(s, depth + 1, &v)) != 0)
            return rc;
        skip_ws(s);
        if (s->pos >= s->n)
            return fail(s, "document ends inside a container");
        char c = s->b[s->pos++];
        if (c == close)
            return 0;
        if (c != ',')
            return fail(s, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int scan_value(struct scanner *s, int depth, struct mh__jr_value *out)
{
    skip_ws(s);
    if (s->pos >= s->n)
        return fail(s, "expected a value");
    out->off = s->pos;
    char c = s->b[s->pos];
    int rc;
    if (c == '{' || c == '[') {
        out->type = c == '{' ? MH__JR_OBJECT : MH__JR_ARRAY;
        rc = scan_container(s, depth, c == '{');
    } else if (c == '"') {
        out->type = MH__JR_STRING;
        rc = scan_string(s);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        out->type = MH__JR_NUMBER;
        rc = scan_number(s);
    } else if (c == 't' || c == 'f') {
        out->type = MH__JR_BOOL;
        rc = scan_word(s, c == 't' ? "true" : "false");
    } else {
        out->type = MH__JR_NULL;
        rc = scan_word(s, "null");
    }
    out->len = s->pos - out->off;
    return rc;
}

int mh__jr_parse(struct mh__jr_doc *doc, const char *buf, size_t len, int max_depth,
                 size_t max_bytes, struct mh__jr_value *root, char *err, size_t errlen)
{
    struct scanner s = {buf, len, 0, max_depth > 0 ? max_depth : MH__JR_DEFAULT_MAX_DEPTH, NULL};
    if (len > (max_bytes ? max_bytes : MH__JR_DEFAULT_MAX_BYTES)) {
        snprintf(err, errlen, "document of %zu bytes exceeds the size limit", len);
        return MH_ELIMIT;
    }
    int rc = scan_value(&s, 0, root);
    if (rc == 0) {
        skip_ws(&s);
        if (s.pos != s.n)
            rc = fail(&s, "trailing data after the document");
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s at byte %zu", s.problem ? s.problem : "invalid JSON", s.pos);
        return rc;
    }
    doc->buf = buf;
    doc->len = len;
    doc->max_depth = s.max_depth;
    return 0;
}

int mh__jr_next(const struct mh__jr_doc *doc, const struct mh__jr_value *c, size_t *pos,
                struct mh__jr_value *key, struct mh__jr_value *val)
{
    if (c->type != MH__JR_ARRAY && c->type != MH__JR_OBJECT)
        return 0;
    struct scanner s = {doc->buf, c->off + c->len, *pos ? *pos : c->off + 1, doc->max_depth + 1,
                        NULL};
    skip_ws(&s);
    if (s.pos >= s.n || s.b[s.pos] == ']' || s.b[s.pos] == '}')
        return 0;
    if (s.b[s.pos] == ',')
        s.pos++;
    if (c->type == MH__JR_OBJECT) {
        struct mh__jr_value k;
        if (scan_value(&s, 0, &k) != 0)
            return 0;
        if (key)
            *key = k;
        skip_ws(&s);
        s.pos++; /* ':' */
    }
    if (scan_value(&s, 0, val) != 0)
        return 0;
    *pos = s.pos;
    return 1;
}

int mh__jr_find(const struct mh__jr_doc *doc, const struct mh__jr_value *obj, const char *key,
                struct mh__jr_value *out)
{
    size_t pos = 0;
    struct mh__jr_value k, v;
    if (obj->type != MH__JR_OBJECT)
        return 0;
    while (mh__jr_next(doc, obj, &pos, &k, &v))
        if (mh__jr_string_eq(doc, &k, key)) {
            *out = v;
            return 1;
        }
    return 0;
}

static unsigned hexval(char c)
{
    return c <= '9' ? (unsigned)(c - '0') : (unsigned)((c | 0x20) - 'a' + 10);
}

/* UTF-8 of a code point into out; returns bytes written. */
static size_t utf8(unsigned cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
}

int mh__jr_string(const struct mh__jr_doc *doc, const struct mh__jr_value *v, char *out,
                  size_t outlen)
{
    if (v->type != MH__JR_STRING || v->len < 2)
        return MH_EINVAL;
    const char *p = doc->buf + v->off + 1, *end = doc->buf + v->off + v->len - 1;
    size_t n = 0;
    while (p < end) {
        char tmp[4];
        size_t k = 1;
        if (*p != '\\') {
            tmp[0] = *p++;
        } else {
            char e = p[1];
            p += 2;
            if (e == 'u') { /* surrogate halves are encoded one by one */
                unsigned cp = hexval(p[0]) << 12 | hexval(p[1]) << 8 | hexval(p[2]) << 4 |
                              hexval(p[3]);
                p += 4;
                k = utf8(cp, tmp);
            } else {
                const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
                tmp[0] = to[strchr(from, e) - from];
            }
        }
        for (size_t i = 0; i < k; i++, n++)
            if (outlen && n + 1 < outlen)
                out[n] = tmp[i];
    }
    if (outlen)
        out[n + 1 < outlen ? n : outlen - 1] = '\0';
    return (int)(n > INT32_MAX ? INT32_MAX : n);
}

int mh__jr_string_eq(const struct mh__jr_doc *doc, const struct mh__jr_value *v, const char *s)
{
    if (v->type != MH__JR_STRING)
        return 0;
    size_t n = strlen(s);
    const char *raw = doc->buf + v->off + 1;
    if (v->len - 2 == n && memcmp(raw, s, n) == 0)
        return 1;
    if (!memchr(raw, '\\', v->len - 2) || n > 1024)
        return 0;
    char buf[1100];
    int len = mh__jr_string(doc, v, buf, sizeof buf);
    return len >= 0 && (size_t)len == n && strcmp(buf, s) == 0;
}

int mh__jr_double(const struct mh__jr_doc *doc, const struct mh__jr_value *v, double *out)
{
    char buf[64];
    if (v->type != MH__JR_NUMBER || v->len >= sizeof buf)
        return MH_EINVAL;
    memcpy(buf, doc->buf + v->off, v->len);
    buf[v->len] = '\0';
    *out = strtod(buf, NULL);
    return 0;
}

int mh__jr_u64(const struct mh__jr_doc *doc, const struct mh__jr_value *v, uint64_t *out)
{
    if (v->type != MH__JR_NUMBER || v->len == 0 || v->len > 20)
        return MH_EINVAL;
    uint64_t x = 0;
    for (size_t i = 0; i < v->len; i++) {
        char c = doc->buf[v->off + i];
        if (c < '0' || c > '9')
            return MH_EINVAL;
        uint64_t d = (uint64_t)(c - '0');
        if (x > (UINT64_MAX - d) / 10)
            return MH_EINVAL;
        x = x * 10 + d;
    }
    *out = x;
    return 0;
}
