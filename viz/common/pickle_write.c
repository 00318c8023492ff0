/* pickle_write.c - the streaming pickle writer (see pickle_write.h). Every
 * opcode goes into a 64 KiB buffer that is flushed to the sink when full. */
#include "pickle_write.h"

#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "utf8.h"

static void flush(struct mh__pw *w)
{
    if (w->len && !w->error)
        w->error = mh__sink_write(w->sink, w->buf, w->len);
    w->len = 0;
}

/* Room for n more bytes (n <= MH__PW_BUF). */
static unsigned char *room(struct mh__pw *w, size_t n)
{
    if (w->len + n > MH__PW_BUF)
        flush(w);
    return w->buf + w->len;
}

static void op(struct mh__pw *w, unsigned char c)
{
    *room(w, 1) = c;
    w->len++;
}

static void put_le(unsigned char *p, uint64_t x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(x >> (8 * i));
}

void mh__pw_init(struct mh__pw *w, struct mh__sink *sink)
{
    w->sink = sink;
    w->memo_next = 0;
    w->error = 0;
    w->len = 0;
    w->buf[w->len++] = 0x80;
    w->buf[w->len++] = 4;
}

void mh__pw_int(struct mh__pw *w, int64_t x)
{
    unsigned char *p = room(w, 10);
    if (x >= 0 && x < 256) {
        p[0] = 'K';
        p[1] = (unsigned char)x;
        w->len += 2;
    } else if (x >= 0 && x < 65536) {
        p[0] = 'M';
        put_le(p + 1, (uint64_t)x, 2);
        w->len += 3;
    } else if (x >= INT32_MIN && x <= INT32_MAX) {
        p[0] = 'J';
        put_le(p + 1, (uint64_t)x, 4);
        w->len += 5;
    } else {
        /* LONG1: shortest little-endian two's complement */
        size_t n = 8;
        while (n > 1) {
            int64_t hi = x >> (8 * (n - 1) - 1); /* bits that must be sign */
            if (hi != 0 && hi != -1)
                break;
            n--;
        }
        p[0] = 0x8a;
        p[1] = (unsigned char)n;
        put_le(p + 2, (uint64_t)x, n);
        w->len += 2 + n;
    }
}

void mh__pw_uint(struct mh__pw *w, uint64_t x)
{
    if (x <= INT64_MAX) {
        mh__pw_int(w, (int64_t)x);
        return;
    }
    unsigned char *p = room(w, 11);
    p[0] = 0x8a;
    p[1] = 9;
    put_le(p + 2, x, 8);
    p[10] = 0;
    w->len += 11;
}

void mh__pw_float(struct mh__pw *w, double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    unsigned char *p = room(w, 9);
    p[0] = 'G';
    for (int i = 0; i < 8; i++)
        p[1 + i] = (unsigned char)(bits >> (56 - 8 * i));
    w->len += 9;
}

void mh__pw_bool(struct mh__pw *w, int b)
{
    op(w, b ? 0x88 : 0x89);
}

void mh__pw_none(struct mh__pw *w)
{
    op(w, 'N');
}

static void write_str(struct mh__pw *w, const char *s, size_t len);

/* Python decodes pickled strings as UTF-8: bytes that are not UTF-8 are
 * written as the text \xNN (utf8.h), so any frame name loads. */
void mh__pw_str(struct mh__pw *w, const char *s, size_t len)
{
    if (mh__utf8_clean(s, len, 0)) {
        write_str(w, s, len);
        return;
    }
    size_t need = mh__utf8_escape(s, len, 0, NULL, 0);
    char *esc = malloc(need + 1);
    if (!esc) {
        if (!w->error)
            w->error = MH_ENOMEM;
        return;
    }
    mh__utf8_escape(s, len, 0, esc, need + 1);
    write_str(w, esc, need);
    free(esc);
}

static void write_str(struct mh__pw *w, const char *s, size_t len)
{
    if (len < 256) {
        unsigned char *p = room(w, 2 + len);
        p[0] = 0x8c;
        p[1] = (unsigned char)len;
        memcpy(p + 2, s, len);
        w->len += 2 + len;
        return;
    }
    if (len > UINT32_MAX) {
        if (!w->error)
            w->error = MH_ELIMIT;
        return;
    }
    unsigned char *p = room(w, 5);
    p[0] = 'X';
    put_le(p + 1, len, 4);
    w->len += 5;
    while (len) { /* long strings go through the buffer in pieces */
        size_t n = len < MH__PW_BUF / 2 ? len : MH__PW_BUF / 2;
        memcpy(room(w, n), s, n);
        w->len += n;
        s += n;
        len -= n;
    }
}

void mh__pw_cstr(struct mh__pw *w, const char *s)
{
    mh__pw_str(w, s, strlen(s));
}

void mh__pw_empty_dict(struct mh__pw *w)
{
    op(w, '}');
}
void mh__pw_empty_list(struct mh__pw *w)
{
    op(w, ']');
}
void mh__pw_empty_tuple(struct mh__pw *w)
{
    op(w, ')');
}
void mh__pw_mark(struct mh__pw *w)
{
    op(w, '(');
}
void mh__pw_setitems(struct mh__pw *w)
{
    op(w, 'u');
}
void mh__pw_appends(struct mh__pw *w)
{
    op(w, 'e');
}
void mh__pw_tuple2(struct mh__pw *w)
{
    op(w, 0x86);
}

uint32_t mh__pw_memoize(struct mh__pw *w)
{
    op(w, 0x94);
    return w->memo_next++;
}

void mh__pw_get(struct mh__pw *w, uint32_t idx)
{
    unsigned char *p = room(w, 5);
    if (idx < 256) {
        p[0] = 'h';
        p[1] = (unsigned char)idx;
        w->len += 2;
    } else {
        p[0] = 'j';
        put_le(p + 1, idx, 4);
        w->len += 5;
    }
}

void mh__pw_list_begin(struct mh__pw *w)
{
    mh__pw_empty_list(w);
    mh__pw_mark(w);
}

void mh__pw_list_item(struct mh__pw *w, uint64_t *count)
{
    if (++*count % MH__PW_BATCH == 0) {
        mh__pw_appends(w);
        mh__pw_mark(w);
    }
}

void mh__pw_list_end(struct mh__pw *w, uint64_t count)
{
    (void)count;
    mh__pw_appends(w); /* an empty batch (MARK APPENDS) is valid */
}

int mh__pw_finish(struct mh__pw *w)
{
    op(w, '.');
    flush(w);
    return w->error;
}

uint64_t mh__pw_bytes(const struct mh__pw *w)
{
    return w->sink->bytes + w->len;
}
