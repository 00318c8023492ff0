/* spool.c - bytes written once and read back in order (see spool.h): the
 * first SPOOL_MEMORY bytes in memory, then an unlinked temporary file
 * written and read through a buffer of SPOOL_BUFFER bytes. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memhist/error.h"
#include "spool.h"

#define SPOOL_MEMORY (4u << 20)
#define SPOOL_BUFFER (256u << 10)

void mh__spool_init(struct mh__spool *s)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

void mh__spool_free(struct mh__spool *s)
{
    free(s->buf);
    if (s->fd >= 0)
        close(s->fd);
    mh__spool_init(s);
}

static int temp_fd(void)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    if (!dir || !dir[0])
        dir = "/tmp";
    if ((size_t)snprintf(path, sizeof path, "%s/memhist-spool-XXXXXX", dir) >= sizeof path)
        return -1;
    int fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    return fd;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t got = write(fd, p, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return MH_EIO;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

/* Writes the buffer out (spilling it to a new file first if in memory). */
static int flush(struct mh__spool *s)
{
    if (s->fd < 0 && (s->no_file || (s->fd = temp_fd()) < 0)) {
        s->no_file = 1;
        return 1; /* no temporary file: stay in memory */
    }
    int rc = write_all(s->fd, s->buf, s->nbuf);
    s->nbuf = 0;
    return rc;
}

static int reserve(struct mh__spool *s, size_t n)
{
    if (s->nbuf + n <= s->capbuf)
        return 0;
    size_t cap = s->capbuf ? s->capbuf : 4096;
    while (cap < s->nbuf + n)
        cap *= 2;
    unsigned char *p = realloc(s->buf, cap);
    if (!p)
        return MH_ENOMEM;
    s->buf = p;
    s->capbuf = cap;
    return 0;
}

int mh__spool_write(struct mh__spool *s, const void *p, size_t n)
{
    if (s->error)
        return s->error;
    size_t limit = s->fd < 0 ? SPOOL_MEMORY : SPOOL_BUFFER;
    int rc = 0;
    if (s->nbuf + n > limit && s->nbuf > 0 && !s->no_file)
        rc = flush(s);
    if (rc == 0 || rc == 1)
        rc = reserve(s, n);
    if (rc < 0)
        return s->error = rc;
    memcpy(s->buf + s->nbuf, p, n);
    s->nbuf += n;
    s->total += n;
    return 0;
}

int mh__spool_rewind(struct mh__spool *s)
{
    if (s->error)
        return s->error;
    if (s->fd >= 0 && !s->reading && s->nbuf && write_all(s->fd, s->buf, s->nbuf) < 0)
        return s->error = MH_EIO;
    if (s->fd >= 0) {
        if (lseek(s->fd, 0, SEEK_SET) != 0)
            return s->error = MH_EIO;
        s->nbuf = 0;
    }
    s->reading = 1;
    s->pos = 0;
    s->bufpos = 0;
    return 0;
}

/* Reads the next buffer of the file. */
static int refill(struct mh__spool *s)
{
    if (s->fd < 0)
        return 1;
    if (reserve(s, SPOOL_BUFFER) < 0)
        return s->error = MH_ENOMEM;
    ssize_t got;
    do
        got = read(s->fd, s->buf, s->capbuf);
    while (got < 0 && errno == EINTR);
    if (got < 0)
        return s->error = MH_EIO;
    s->nbuf = (size_t)got;
    s->bufpos = 0;
    return got == 0;
}

int mh__spool_read(struct mh__spool *s, void *p, size_t n)
{
    unsigned char *out = p;
    if (s->error)
        return s->error;
    if (s->pos + n > s->total)
        return 1;
    while (n) {
        if (s->bufpos == s->nbuf) {
            int rc = refill(s);
            if (rc)
                return rc < 0 ? rc : (s->error = MH_EIO);
        }
        size_t k = s->nbuf - s->bufpos < n ? s->nbuf - s->bufpos : n;
        memcpy(out, s->buf + s->bufpos, k);
        s->bufpos += k;
        s->pos += k;
        out += k;
        n -= k;
    }
    return 0;
}
