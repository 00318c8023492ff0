/* outfile.h - safe creation of an output file, shared by every command that
 * writes one (trace, snapshot, plot, import, simulate).
 *
 * Sits at the very end of the offline data flow, under the sinks and writers:
 * it decides where the bytes go and makes the result all-or-nothing.
 * - A regular file or an absent path is written to a temporary file in the
 *   same directory and renamed over the target only when everything was
 *   written, flushed and synced, so a failed or killed run leaves the old
 *   file (or nothing but a hidden temporary) behind. A symbolic link to a
 *   regular file is kept: the file it points to is replaced.
 * - Anything else (a character device such as /dev/null, a FIFO, "-" for
 *   stdout) is written in place and never replaced or removed.
 * - An output that is the same file as one of the inputs is refused before
 *   anything is written.
 * Never prints: a failure leaves a one-line reason with the system's message
 * (strerror) in `msg` for the caller to show after the path. */
#ifndef MH_VIZ_OUTFILE_H
#define MH_VIZ_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

struct mh__outfile {
    FILE *fp;      /* where to write; the same file as `fd` */
    int fd;
    char *target;  /* the file finally written (a symlink resolved); owned */
    char *tmp;     /* temporary file renamed over target at commit, or NULL */
    int in_place;  /* writing straight into the target (device, FIFO, stdout) */
    char msg[320]; /* why the last call failed */
};

/* Prepares `path` ("-" = stdout) for writing. `inputs` (n of them; NULL and
 * "-" entries are ignored) are the files the command reads: an output that
 * is one of them is refused. Returns 0, or a negative MH_E* code with `msg`
 * set and nothing left on disk. */
int mh__outfile_open(struct mh__outfile *o, const char *path, const char *const *inputs,
                    size_t ninputs);
/* Flushes, syncs and closes the output, then renames the temporary file over
 * the target. Returns 0, or MH_EIO with `msg` set after removing the
 * temporary file. */
int mh__outfile_commit(struct mh__outfile *o);
/* Abandons the output: closes it and removes the temporary file; a target
 * written in place is left as it is. Safe after commit and twice. */
void mh__outfile_abort(struct mh__outfile *o);

#endif
