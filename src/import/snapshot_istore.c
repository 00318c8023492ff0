/* snapshot_istore.c - snapshot import: the converted trace entries
 * (fixed-size records, snapshot_import_int.h) in arrival order. The first
 * STORE_MEMORY entries stay in memory; beyond that they go to an unlinked
 * temporary file (in $TMPDIR, else /tmp) through a small buffer, so a large
 * trace costs disk, not memory. The backwards replay reads them back in
 * chunks from the end and writes its flags back; the forward pass reads them
 * again per device. If no temporary file can be made they stay in memory. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memhist/error.h"
#include "snapshot_import_int.h"

#define STORE_MEMORY 65536u
#define STORE_BUFFER 4096u

static int tmp_fd(void)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    if (!dir || !dir[0])
        dir = "/tmp";
    if ((size_t)snprintf(path, sizeof path, "%s/memhist-import-XXXXXX", dir) >= sizeof path)
        return -1;
    int fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    return fd;
}

static int io(int fd, void *buf, size_t bytes, off_t off, int write)
{
    unsigned char *p = buf;
    while (bytes) {
        ssize_t got = write ? pwrite(fd, p, bytes, off) : pread(fd, p, bytes, off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return MH_EIO;
        p += got;
        bytes -= (size_t)got;
        off += got;
    }
    return 0;
}

static int flush(struct mh__istore *s)
{
    if (s->fd < 0 || !s->nbuf)
        return 0;
    size_t first = s->total - s->nbuf;
    int rc = io(s->fd, s->mem, s->nbuf * sizeof *s->mem, (off_t)(first * sizeof *s->mem), 1);
    s->nbuf = 0;
    return rc;
}

/* Moves the entries in memory to a temporary file; stays in memory if none
 * can be made. */
static int spill(struct mh__istore *s)
{
    int fd = tmp_fd();
    if (fd < 0)
        return 0;
    if (io(fd, s->mem, s->total * sizeof *s->mem, 0, 1)) {
        close(fd);
        return 0;
    }
    s->fd = fd;
    s->nbuf = 0;
    struct mh__ient *p = realloc(s->mem, STORE_BUFFER * sizeof *p);
    if (p) {
        s->mem = p;
        s->cap = STORE_BUFFER;
    }
    return 0;
}

int mh__istore_add(struct mh__istore *s, const struct mh__ient *e)
{
    if (s->fd >= 0 && s->nbuf == s->cap) {
        int rc = flush(s);
        if (rc)
            return rc;
    }
    if (s->fd < 0 && s->total == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        struct mh__ient *p = realloc(s->mem, cap * sizeof *p);
        if (!p)
            return MH_ENOMEM;
        s->mem = p;
        s->cap = cap;
    }
    if (s->fd >= 0)
        s->mem[s->nbuf++] = *e;
    else
        s->mem[s->total] = *e;
    s->total++;
    return s->fd < 0 && s->total == STORE_MEMORY ? spill(s) : 0;
}

int mh__istore_get(struct mh__istore *s, size_t first, size_t n, struct mh__ient *out)
{
    if (s->fd < 0) {
        memcpy(out, s->mem + first, n * sizeof *out);
        return 0;
    }
    int rc = flush(s);
    return rc ? rc : io(s->fd, out, n * sizeof *out, (off_t)(first * sizeof *out), 0);
}

int mh__istore_put(struct mh__istore *s, size_t first, size_t n, const struct mh__ient *in)
{
    if (s->fd < 0) {
        memcpy(s->mem + first, in, n * sizeof *in);
        return 0;
    }
    int rc = flush(s);
    return rc ? rc
              : io(s->fd, (void *)in, n * sizeof *in, (off_t)(first * sizeof *in), 1);
}

void mh__istore_free(struct mh__istore *s)
{
    if (s->fd >= 0)
        close(s->fd);
    free(s->mem);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}
