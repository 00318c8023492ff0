/* outfile.c - all-or-nothing output files (see outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memhist/error.h"

static int fail(struct mh__outfile *o, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct mh__outfile *o, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->msg, sizeof o->msg, fmt, ap);
    va_end(ap);
    return code;
}

/* Refuses an output that is the same file as an input. */
static int check_inputs(struct mh__outfile *o, const struct stat *out, const char *const *inputs,
                        size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct stat in;
        if (!inputs[i] || !strcmp(inputs[i], "-") || stat(inputs[i], &in) != 0)
            continue;
        if (in.st_dev == out->st_dev && in.st_ino == out->st_ino)
            return fail(o, MH_EINVAL, "is the same file as the input %s; choose another output file",
                        inputs[i]);
    }
    return 0;
}

/* A hidden temporary file next to o->target, with the given mode. */
static int make_temp(struct mh__outfile *o, mode_t mode)
{
    const char *slash = strrchr(o->target, '/');
    size_t dlen = slash ? (size_t)(slash - o->target) + 1 : 0;
    const char *base = slash ? slash + 1 : o->target;
    size_t n = dlen + strlen(base) + 16;
    if (!(o->tmp = malloc(n)))
        return fail(o, MH_ENOMEM, "out of memory");
    snprintf(o->tmp, n, "%.*s.%s.XXXXXX", (int)dlen, o->target, base);
    o->fd = mkostemp(o->tmp, O_CLOEXEC);
    if (o->fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        return fail(o, MH_EIO, "cannot write: %s (creating a file in its directory)", strerror(e));
    }
    if (fchmod(o->fd, mode) != 0) {
        int e = errno;
        mh__outfile_abort(o);
        return fail(o, MH_EIO, "cannot write: %s (setting its permissions)", strerror(e));
    }
    return 0;
}

static mode_t default_mode(void)
{
    mode_t mask = umask(0);
    umask(mask);
    return 0666 & ~mask;
}

/* Chooses between a temporary file (regular or absent target) and writing
 * in place (devices, FIFOs, dangling links). */
static int open_path(struct mh__outfile *o, const char *path)
{
    struct stat ls, st;
    if (lstat(path, &ls) != 0) {
        if (errno != ENOENT)
            return fail(o, MH_EIO, "cannot write: %s", strerror(errno));
        o->target = strdup(path);
        return o->target ? make_temp(o, default_mode()) : fail(o, MH_ENOMEM, "out of memory");
    }
    int followed = stat(path, &st) == 0;
    if (followed && S_ISDIR(st.st_mode))
        return fail(o, MH_EINVAL, "cannot write: %s", strerror(EISDIR));
    if (followed && S_ISREG(st.st_mode)) {
        o->target = S_ISLNK(ls.st_mode) ? realpath(path, NULL) : strdup(path);
        if (!o->target)
            return fail(o, MH_EIO, "cannot write: %s", strerror(errno));
        return make_temp(o, st.st_mode & 07777);
    }
    o->target = strdup(path);
    if (!o->target)
        return fail(o, MH_ENOMEM, "out of memory");
    o->in_place = 1;
    o->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (followed ? 0 : O_TRUNC), 0666);
    if (o->fd < 0)
        return fail(o, MH_EIO, "cannot write: %s", strerror(errno));
    return 0;
}

int mh__outfile_open(struct mh__outfile *o, const char *path, const char *const *inputs,
                    size_t ninputs)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    if (!path || !*path)
        return fail(o, MH_EINVAL, "empty output path");
    if (!strcmp(path, "-")) {
        o->fp = stdout;
        o->fd = STDOUT_FILENO;
        o->in_place = 1;
        return 0;
    }
    struct stat st;
    int rc = stat(path, &st) == 0 ? check_inputs(o, &st, inputs, ninputs) : 0;
    if (rc == 0)
        rc = open_path(o, path);
    if (rc == 0 && !(o->fp = fdopen(o->fd, "wb")))
        rc = fail(o, MH_EIO, "%s", strerror(errno));
    if (rc)
        mh__outfile_abort(o);
    return rc;
}

int mh__outfile_commit(struct mh__outfile *o)
{
    if (o->fp == stdout) {
        o->fp = NULL;
        if (fflush(stdout) != 0)
            return fail(o, MH_EIO, "cannot write: %s", strerror(errno));
        return 0;
    }
    if (!o->fp)
        return fail(o, MH_ESTATE, "the output is already closed");
    int err = 0;
    if (fflush(o->fp) != 0)
        err = errno;
    if (!err && o->tmp && fsync(o->fd) != 0)
        err = errno;
    if (fclose(o->fp) != 0 && !err)
        err = errno;
    o->fp = NULL;
    o->fd = -1;
    if (!err && o->tmp && rename(o->tmp, o->target) != 0)
        err = errno;
    if (err) {
        mh__outfile_abort(o);
        return fail(o, MH_EIO, "cannot write: %s", strerror(err));
    }
    free(o->tmp);
    free(o->target);
    o->tmp = o->target = NULL;
    return 0;
}

void mh__outfile_abort(struct mh__outfile *o)
{
    if (o->fp && o->fp != stdout)
        fclose(o->fp);
    else if (!o->fp && o->fd > STDERR_FILENO)
        close(o->fd);
    o->fp = NULL;
    o->fd = -1;
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->target);
    o->tmp = o->target = NULL;
}
