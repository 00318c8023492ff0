/* sink.c - file and memory sinks for every output writer (see sink.h). */
#include "sink.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"

void mh__sink_init_file(struct mh__sink *s, FILE *fp)
{
    memset(s, 0, sizeof *s);
    s->fp = fp;
}

void mh__sink_init_mem(struct mh__sink *s)
{
    memset(s, 0, sizeof *s);
}

void mh__sink_free(struct mh__sink *s)
{
    if (!s)
        return;
    free(s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
}

static int mem_reserve(struct mh__sink *s, size_t extra)
{
    if (s->len + extra <= s->cap)
        return 0;
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < s->len + extra)
        cap *= 2;
    char *p = realloc(s->buf, cap);
    if (!p)
        return MH_ENOMEM;
    s->buf = p;
    s->cap = cap;
    return 0;
}

int mh__sink_write(struct mh__sink *s, const void *data, size_t len)
{
    if (s->error)
        return s->error;
    if (s->fp) {
        if (len && fwrite(data, 1, len, s->fp) != len) {
            s->error = MH_EIO;
            s->errnum = errno ? errno : EIO;
        }
    } else {
        s->error = mem_reserve(s, len);
        if (!s->error && len) {
            memcpy(s->buf + s->len, data, len);
            s->len += len;
        }
    }
    if (!s->error)
        s->bytes += len;
    return s->error;
}

int mh__sink_puts(struct mh__sink *s, const char *str)
{
    return mh__sink_write(s, str, strlen(str));
}

int mh__sink_printf(struct mh__sink *s, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return s->error ? s->error : (s->error = MH_EINVAL);
    if ((size_t)n < sizeof small)
        return mh__sink_write(s, small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big)
        return s->error ? s->error : (s->error = MH_ENOMEM);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = mh__sink_write(s, big, (size_t)n);
    free(big);
    return rc;
}

int mh__sink_finish(struct mh__sink *s)
{
    if (s->fp && !s->error && fflush(s->fp) != 0) {
        s->error = MH_EIO;
        s->errnum = errno ? errno : EIO;
    }
    return s->error;
}
