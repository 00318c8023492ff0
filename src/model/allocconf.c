/* allocconf.c - parse and format PyTorch allocator settings
 * (PYTORCH_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF, reference
 * pytorch-allocator.md section 1.10 item 10). Text in, struct mh_alloc_conf
 * out; the model and the simulator read the struct through rules.c. The
 * syntax follows torch's tokenizer: ',', ':', '[' and ']' are tokens of their
 * own, spaces are dropped, everything else forms words. Owns nothing. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/allocconf.h"
#include "memhist/error.h"

#define TOK_MAX 64

struct conf_parser {
    const char *p;
    char tok[TOK_MAX];
    char *err;
    size_t errlen;
};

static int fail(struct conf_parser *ps, int code, const char *fmt, ...)
{
    if (ps->err && ps->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->err, ps->errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

static int is_punct(char c)
{
    return c == ',' || c == ':' || c == '[' || c == ']';
}

/* Reads the next token into ps->tok ("" at the end). Over-long words are an
 * error (no valid key or value comes close to TOK_MAX). */
static int next_token(struct conf_parser *ps)
{
    size_t n = 0;
    while (*ps->p == ' ')
        ps->p++;
    if (is_punct(*ps->p)) {
        ps->tok[0] = *ps->p++;
        ps->tok[1] = 0;
        return 0;
    }
    while (*ps->p && !is_punct(*ps->p)) {
        if (*ps->p != ' ') {
            if (n + 1 >= TOK_MAX)
                return fail(ps, MH_ECONFIG, "allocator setting: token too long near '%.16s'",
                            ps->p);
            ps->tok[n++] = *ps->p;
        }
        ps->p++;
    }
    ps->tok[n] = 0;
    return 0;
}

static int expect(struct conf_parser *ps, char c, const char *key)
{
    int rc = next_token(ps);
    if (rc)
        return rc;
    if (ps->tok[0] != c || ps->tok[1])
        return fail(ps, MH_ECONFIG, "%s: expected '%c', got '%s'", key, c, ps->tok);
    return 0;
}

/* Unsigned decimal integer, digits only. */
static int parse_uint(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 0;
}

static int is_pow2(uint64_t v)
{
    return v && !(v & (v - 1));
}

static unsigned log2_floor(uint64_t v)
{
    return 63u - (unsigned)__builtin_clzll(v);
}

/* key:<integer MB >= min> stored in bytes. */
static int value_mb(struct conf_parser *ps, const char *key, uint64_t min_mb, uint64_t *out)
{
    uint64_t v;
    int rc = expect(ps, ':', key);
    if (rc || (rc = next_token(ps)))
        return rc;
    if (parse_uint(ps->tok, &v))
        return fail(ps, MH_ECONFIG, "%s: bad value '%s' (expected an integer in MB)", key, ps->tok);
    if (v < min_mb)
        return fail(ps, MH_ECONFIG, "%s: value %llu too small (must be >= %llu)", key,
                    (unsigned long long)v, (unsigned long long)min_mb);
    *out = v > UINT64_MAX / MH_MB ? UINT64_MAX / MH_MB * MH_MB : v * MH_MB;
    return 0;
}

static int value_bool(struct conf_parser *ps, const char *key, int *out)
{
    int rc = expect(ps, ':', key);
    if (rc || (rc = next_token(ps)))
        return rc;
    if (strcmp(ps->tok, "True") == 0)
        *out = 1;
    else if (strcmp(ps->tok, "False") == 0)
        *out = 0;
    else
        return fail(ps, MH_ECONFIG, "%s: bad value '%s' (expected True or False)", key, ps->tok);
    return 0;
}

static int value_uint(struct conf_parser *ps, const char *key)
{
    uint64_t v;
    int rc = expect(ps, ':', key);
    if (rc || (rc = next_token(ps)))
        return rc;
    if (parse_uint(ps->tok, &v))
        return fail(ps, MH_ECONFIG, "%s: bad value '%s' (expected an integer)", key, ps->tok);
    return 0;
}

static int value_gc(struct conf_parser *ps, const char *key, double *out)
{
    char *end;
    int rc = expect(ps, ':', key);
    if (rc || (rc = next_token(ps)))
        return rc;
    double v = strtod(ps->tok, &end);
    if (!ps->tok[0] || *end || !(v > 0.0 && v < 1.0))
        return fail(ps, MH_ECONFIG, "%s: bad value '%s' (must be in (0, 1))", key, ps->tok);
    *out = v;
    return 0;
}

static int value_backend(struct conf_parser *ps, const char *key)
{
    int rc = expect(ps, ':', key);
    if (rc || (rc = next_token(ps)))
        return rc;
    if (strcmp(ps->tok, "native") == 0)
        return 0;
    if (strcmp(ps->tok, "cudaMallocAsync") == 0)
        return fail(ps, MH_EUNSUPPORTED, "%s: cudaMallocAsync is not modelled", key);
    return fail(ps, MH_ECONFIG, "%s: bad value '%s' (expected native or cudaMallocAsync)", key,
                ps->tok);
}

/* One "<MB power of 2>:<divisions>" or ">:<divisions>" list entry. torch
 * fills the indices below the first entry with its value, and '>' fills the
 * indices after the previous entry. */
static int rp2_entry(struct conf_parser *ps, uint32_t *tab, int *first, unsigned *last)
{
    const char *key = "roundup_power2_divisions";
    char boundary[TOK_MAX];
    uint64_t b = 0, v;
    int rc;
    memcpy(boundary, ps->tok, sizeof boundary);
    int gt = strcmp(boundary, ">") == 0;
    if (!gt && (parse_uint(boundary, &b) || !is_pow2(b)))
        return fail(ps, MH_ECONFIG, "%s: interval '%s' is not a power of 2 (MB)", key, boundary);
    if ((rc = expect(ps, ':', key)) || (rc = next_token(ps)))
        return rc;
    if (parse_uint(ps->tok, &v) || (v && !is_pow2(v)) || v > UINT32_MAX)
        return fail(ps, MH_ECONFIG, "%s: divisions '%s' must be 0 or a power of 2", key, ps->tok);
    if (gt) {
        for (unsigned i = *last + 1; i < 16; i++)
            tab[i] = (uint32_t)v;
        return 0;
    }
    unsigned idx = log2_floor(b);
    if (idx > 15)
        idx = 15;
    if (*first)
        for (unsigned i = 0; i < idx; i++)
            tab[i] = (uint32_t)v;
    *first = 0;
    tab[idx] = (uint32_t)v;
    *last = idx;
    return 0;
}

static int rp2_list(struct conf_parser *ps, uint32_t *tab)
{
    const char *key = "roundup_power2_divisions";
    int first = 1, rc;
    unsigned last = 0;
    for (;;) {
        if ((rc = next_token(ps)))
            return rc;
        if (strcmp(ps->tok, "]") == 0)
            return 0;
        if (!ps->tok[0])
            return fail(ps, MH_ECONFIG, "%s: missing ']'", key);
        if ((rc = rp2_entry(ps, tab, &first, &last)))
            return rc;
        if ((rc = next_token(ps)))
            return rc;
        if (strcmp(ps->tok, "]") == 0)
            return 0;
        if (strcmp(ps->tok, ",") != 0)
            return fail(ps, MH_ECONFIG, "%s: expected ',' or ']', got '%s'", key, ps->tok);
    }
}

static int value_rp2(struct conf_parser *ps, const char *key, uint32_t *tab)
{
    uint64_t v;
    int rc = expect(ps, ':', key);
    if (rc || (rc = next_token(ps)))
        return rc;
    if (strcmp(ps->tok, "[") == 0)
        return rp2_list(ps, tab);
    if (parse_uint(ps->tok, &v) || !is_pow2(v) || v > UINT32_MAX)
        return fail(ps, MH_ECONFIG, "%s: bad value '%s' (expected a power of 2 or a list)", key,
                    ps->tok);
    for (unsigned i = 0; i < 16; i++)
        tab[i] = (uint32_t)v;
    return 0;
}

/* Dispatches one key. Keys that only affect pinned memory or locking are
 * validated for form and otherwise ignored. */
static int parse_key(struct conf_parser *ps, struct mh_alloc_conf *c)
{
    char key[TOK_MAX];
    int ignored;
    memcpy(key, ps->tok, sizeof key);
    if (strcmp(key, "max_split_size_mb") == 0)
        return value_mb(ps, key, 20, &c->max_split_size);
    if (strcmp(key, "max_non_split_rounding_mb") == 0)
        return value_mb(ps, key, 20, &c->max_non_split_rounding);
    if (strcmp(key, "large_segment_size_mb") == 0)
        return value_mb(ps, key, 2, &c->large_segment_size);
    if (strcmp(key, "garbage_collection_threshold") == 0)
        return value_gc(ps, key, &c->garbage_collection_threshold);
    if (strcmp(key, "roundup_power2_divisions") == 0)
        return value_rp2(ps, key, c->roundup_power2_divisions);
    if (strcmp(key, "expandable_segments") == 0)
        return value_bool(ps, key, &c->expandable_segments);
    if (strcmp(key, "backend") == 0)
        return value_backend(ps, key);
    if (strcmp(key, "pinned_use_background_threads") == 0 ||
        strcmp(key, "release_lock_on_cudamalloc") == 0 ||
        strcmp(key, "pinned_use_cuda_host_register") == 0 ||
        strcmp(key, "graph_capture_record_stream_reuse") == 0)
        return value_bool(ps, key, &ignored);
    if (strcmp(key, "pinned_num_register_threads") == 0)
        return value_uint(ps, key);
    return fail(ps, MH_ECONFIG, "unknown allocator setting '%s'", key);
}

int mh_alloc_conf_parse(const char *text, struct mh_alloc_conf *out, char *err, size_t errlen)
{
    struct conf_parser ps = {.p = text ? text : "", .err = err, .errlen = errlen};
    struct mh_alloc_conf c;
    int rc;
    if (!out)
        return MH_EINVAL;
    if (err && errlen)
        err[0] = 0;
    memset(&c, 0, sizeof c);
    for (;;) {
        if ((rc = next_token(&ps)))
            return rc;
        if (!ps.tok[0])
            break;
        if (strcmp(ps.tok, ",") == 0)
            continue;
        if (is_punct(ps.tok[0]) && !ps.tok[1])
            return fail(&ps, MH_ECONFIG, "allocator setting: unexpected '%s'", ps.tok);
        if ((rc = parse_key(&ps, &c)))
            return rc;
        if ((rc = next_token(&ps)))
            return rc;
        if (ps.tok[0] && strcmp(ps.tok, ",") != 0)
            return fail(&ps, MH_ECONFIG, "allocator setting: expected ',' before '%s'", ps.tok);
        if (!ps.tok[0])
            break;
    }
    *out = c;
    return 0;
}

/* Appends to a snprintf-style buffer, tracking the length needed. */
struct conf_out {
    char *buf;
    size_t len;
    size_t need;
};

static void out_add(struct conf_out *o, const char *fmt, ...)
{
    va_list ap;
    size_t room = o->need < o->len ? o->len - o->need : 0;
    if (o->need > 0 && room > 0) {
        o->buf[o->need] = ',';
        room--;
    }
    if (o->need > 0)
        o->need++;
    va_start(ap, fmt);
    int n = vsnprintf(room ? o->buf + o->need : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->need += (size_t)n;
}

/* The list form that parses back to exactly `tab`: explicit entries up to the
 * start of the trailing run of equal values, then ">:" for that run. All
 * equal and non-zero gives the single-number form; all zero is omitted. */
static void format_rp2(struct conf_out *o, const uint32_t *tab)
{
    char list[16 * 24] = "";
    size_t n = 0;
    unsigned s = 15;
    while (s > 0 && tab[s - 1] == tab[15])
        s--;
    if (s == 0) {
        if (tab[0])
            out_add(o, "roundup_power2_divisions:%u", (unsigned)tab[0]);
        return;
    }
    for (unsigned i = 0; i < s; i++)
        if (i == 0 || tab[i] || (i == s - 1 && tab[15]))
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%llu:%u", n ? "," : "", 1ull << i,
                                  (unsigned)tab[i]);
    if (tab[15])
        n += (size_t)snprintf(list + n, sizeof list - n, ",>:%u", (unsigned)tab[15]);
    out_add(o, "roundup_power2_divisions:[%s]", list);
}

int mh_alloc_conf_format(const struct mh_alloc_conf *conf, char *buf, size_t len)
{
    struct conf_out o = {.buf = buf, .len = len, .need = 0};
    if (!conf)
        return MH_EINVAL;
    if (buf && len)
        buf[0] = 0;
    if (conf->expandable_segments)
        out_add(&o, "expandable_segments:True");
    if (conf->garbage_collection_threshold > 0)
        out_add(&o, "garbage_collection_threshold:%g", conf->garbage_collection_threshold);
    if (conf->large_segment_size)
        out_add(&o, "large_segment_size_mb:%llu",
                (unsigned long long)(conf->large_segment_size / MH_MB));
    if (conf->max_non_split_rounding)
        out_add(&o, "max_non_split_rounding_mb:%llu",
                (unsigned long long)(conf->max_non_split_rounding / MH_MB));
    if (conf->max_split_size && conf->max_split_size != UINT64_MAX)
        out_add(&o, "max_split_size_mb:%llu", (unsigned long long)(conf->max_split_size / MH_MB));
    format_rp2(&o, conf->roundup_power2_divisions);
    if (buf && len)
        buf[o.need < len ? o.need : len - 1] = 0;
    return (int)o.need;
}
