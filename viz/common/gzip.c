/* gzip.c - gzip decompression of whole inputs (see gzip.h). */
#include "gzip.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "memhist/error.h"

int mh__gzip_is(const char *data, size_t len)
{
    return len >= 2 && (unsigned char)data[0] == 0x1f && (unsigned char)data[1] == 0x8b;
}

static int grow(char **buf, size_t *cap, size_t limit)
{
    size_t ncap = *cap < limit / 2 ? *cap * 2 : limit;
    if (ncap <= *cap)
        return MH_ELIMIT;
    char *n = realloc(*buf, ncap + 1);
    if (!n)
        return MH_ENOMEM;
    *buf = n;
    *cap = ncap;
    return 0;
}

int mh__gzip_inflate(const char *data, size_t len, size_t limit, char **out, size_t *outlen,
                     char *err, size_t errlen)
{
    z_stream zs = {0};
    size_t cap = len * 4 + 4096 < limit ? len * 4 + 4096 : limit, n = 0;
    char *buf = malloc(cap + 1);
    int rc = buf ? 0 : MH_ENOMEM, zr = Z_OK;
    if (rc == 0 && inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
        rc = MH_ENOMEM;
    zs.next_in = (Bytef *)data;
    zs.avail_in = (uInt)(len < UINT32_MAX ? len : UINT32_MAX);
    while (rc == 0) {
        if (n == cap && (rc = grow(&buf, &cap, limit)) < 0)
            break;
        zs.next_out = (Bytef *)buf + n;
        zs.avail_out = (uInt)(cap - n < UINT32_MAX ? cap - n : UINT32_MAX);
        zr = inflate(&zs, Z_NO_FLUSH);
        n = (size_t)((char *)zs.next_out - buf);
        if (zr == Z_STREAM_END && zs.avail_in > 0 &&
            mh__gzip_is((const char *)zs.next_in, zs.avail_in))
            zr = inflateReset(&zs); /* another member follows */
        else if (zr == Z_STREAM_END)
            break;
        if (zr != Z_OK && !(zr == Z_BUF_ERROR && zs.avail_out == 0)) {
            rc = MH_EFORMAT;
            snprintf(err, errlen, "not a valid gzip stream (%s at compressed byte %lu)",
                     zs.msg ? zs.msg : "cut short", (unsigned long)zs.total_in);
        }
    }
    if (rc == MH_ELIMIT)
        snprintf(err, errlen, "decompresses to more than %zu bytes", limit);
    inflateEnd(&zs);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *outlen = n;
    return 0;
}

/* ---- writing: a FILE * (fopencookie) over a deflate stream ------------------------ */
struct gz_writer {
    z_stream zs;
    FILE *under;
    int failed;
    unsigned char out[1 << 16];
};

static int gz_pump(struct gz_writer *g, int flush)
{
    int zr;
    do {
        g->zs.next_out = g->out;
        g->zs.avail_out = sizeof g->out;
        zr = deflate(&g->zs, flush);
        size_t have = sizeof g->out - g->zs.avail_out;
        if (zr == Z_STREAM_ERROR || (have && fwrite(g->out, 1, have, g->under) != have))
            return -1;
    } while (g->zs.avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END));
    return 0;
}

static ssize_t gz_write(void *cookie, const char *buf, size_t size)
{
    struct gz_writer *g = cookie;
    g->zs.next_in = (Bytef *)buf;
    g->zs.avail_in = (uInt)(size < UINT32_MAX ? size : UINT32_MAX);
    size_t taken = g->zs.avail_in;
    if (g->failed || gz_pump(g, Z_NO_FLUSH) < 0) {
        g->failed = 1;
        return -1;
    }
    return (ssize_t)taken;
}

static int gz_close(void *cookie)
{
    struct gz_writer *g = cookie;
    int bad = g->failed || gz_pump(g, Z_FINISH) < 0 || fflush(g->under) != 0;
    deflateEnd(&g->zs);
    free(g);
    return bad ? -1 : 0;
}

FILE *mh__gzip_open_write(FILE *under)
{
    struct gz_writer *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->under = under;
    if (deflateInit2(&g->zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(g);
        return NULL;
    }
    cookie_io_functions_t io = {NULL, gz_write, NULL, gz_close};
    FILE *f = fopencookie(g, "w", io);
    if (!f) {
        deflateEnd(&g->zs);
        free(g);
    }
    return f;
}
