/* json.c - streaming JSON writer (see json.h). Strings come out as
 * well-formed UTF-8 whatever bytes they held: a byte that is not part of a
 * UTF-8 sequence is written as the text \xNN (utf8.h). */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

void mh__json_init(struct mh__json *j, struct mh__sink *sink, int pretty)
{
    memset(j, 0, sizeof *j);
    j->sink = sink;
    j->pretty = pretty;
}

static void newline_indent(struct mh__json *j)
{
    if (!j->pretty)
        return;
    mh__sink_write(j->sink, "\n", 1);
    for (int i = 0; i < j->depth; i++)
        mh__sink_write(j->sink, "  ", 2);
}

/* Separator before a value (or key) at the current depth. */
static void before_value(struct mh__json *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->depth > 0) {
        if (j->count[j->depth] > 0)
            mh__sink_write(j->sink, ",", 1);
        newline_indent(j);
    }
    j->count[j->depth]++;
}

static void open_container(struct mh__json *j, char c)
{
    before_value(j);
    mh__sink_write(j->sink, &c, 1);
    if (j->depth + 1 < MH__JSON_MAX_DEPTH)
        j->depth++;
    j->count[j->depth] = 0;
}

static void close_container(struct mh__json *j, char c)
{
    int had = j->count[j->depth] > 0;
    if (j->depth > 0)
        j->depth--;
    if (had)
        newline_indent(j);
    mh__sink_write(j->sink, &c, 1);
    if (j->depth == 0 && j->pretty)
        mh__sink_write(j->sink, "\n", 1);
}

void mh__json_begin_object(struct mh__json *j)
{
    open_container(j, '{');
}

void mh__json_end_object(struct mh__json *j)
{
    close_container(j, '}');
}

void mh__json_begin_array(struct mh__json *j)
{
    open_container(j, '[');
}

void mh__json_end_array(struct mh__json *j)
{
    close_container(j, ']');
}

void mh__json_write_escaped(struct mh__sink *sink, const char *s)
{
    mh__sink_write(sink, "\"", 1);
    const char *run = s;
    for (const char *p = s; *p;) {
        unsigned char c = (unsigned char)*p;
        size_t len = c >= 0x80 ? mh__utf8_seq((const unsigned char *)p, strnlen(p, 4)) : 1;
        if (len > 1 || (c >= 0x20 && c != '"' && c != '\\' && c < 0x80)) {
            p += len;
            continue;
        }
        mh__sink_write(sink, run, (size_t)(p - run));
        char esc[8];
        switch (c) {
        case '"': strcpy(esc, "\\\""); break;
        case '\\': strcpy(esc, "\\\\"); break;
        case '\n': strcpy(esc, "\\n"); break;
        case '\t': strcpy(esc, "\\t"); break;
        case '\r': strcpy(esc, "\\r"); break;
        default:
            if (c >= 0x80) /* not UTF-8: the text \xNN, its backslash escaped */
                snprintf(esc, sizeof esc, "\\\\x%02x", c);
            else
                snprintf(esc, sizeof esc, "\\u%04x", c);
            break;
        }
        mh__sink_puts(sink, esc);
        p++;
        run = p;
    }
    mh__sink_puts(sink, run);
    mh__sink_write(sink, "\"", 1);
}

void mh__json_key(struct mh__json *j, const char *key)
{
    before_value(j);
    mh__json_write_escaped(j->sink, key);
    mh__sink_write(j->sink, j->pretty ? ": " : ":", j->pretty ? 2 : 1);
    j->after_key = 1;
}

void mh__json_string(struct mh__json *j, const char *s)
{
    before_value(j);
    if (s)
        mh__json_write_escaped(j->sink, s);
    else
        mh__sink_puts(j->sink, "null");
}

void mh__json_int(struct mh__json *j, int64_t v)
{
    before_value(j);
    mh__sink_printf(j->sink, "%" PRId64, v);
}

void mh__json_uint(struct mh__json *j, uint64_t v)
{
    before_value(j);
    mh__sink_printf(j->sink, "%" PRIu64, v);
}

void mh__json_double(struct mh__json *j, double v, int decimals)
{
    before_value(j);
    if (!isfinite(v))
        mh__sink_puts(j->sink, "null");
    else
        mh__sink_printf(j->sink, "%.*f", decimals, v);
}

void mh__json_bool(struct mh__json *j, int v)
{
    before_value(j);
    mh__sink_puts(j->sink, v ? "true" : "false");
}

void mh__json_null(struct mh__json *j)
{
    before_value(j);
    mh__sink_puts(j->sink, "null");
}

void mh__json_raw(struct mh__json *j, const char *text)
{
    before_value(j);
    mh__sink_puts(j->sink, text);
}

void mh__json_kv_string(struct mh__json *j, const char *key, const char *s)
{
    mh__json_key(j, key);
    mh__json_string(j, s);
}

void mh__json_kv_int(struct mh__json *j, const char *key, int64_t v)
{
    mh__json_key(j, key);
    mh__json_int(j, v);
}

void mh__json_kv_uint(struct mh__json *j, const char *key, uint64_t v)
{
    mh__json_key(j, key);
    mh__json_uint(j, v);
}

void mh__json_kv_double(struct mh__json *j, const char *key, double v, int decimals)
{
    mh__json_key(j, key);
    mh__json_double(j, v, decimals);
}

void mh__json_kv_bool(struct mh__json *j, const char *key, int v)
{
    mh__json_key(j, key);
    mh__json_bool(j, v);
}
