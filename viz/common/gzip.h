/* gzip.h - gzip-compressed traces, read and written (torch.profiler's
 * tensorboard_trace_handler writes PROFILE.json.gz when use_gzip=True, and
 * TensorBoard and Perfetto open .json.gz). The one file that uses zlib. */
#ifndef MH_VIZ_GZIP_H
#define MH_VIZ_GZIP_H

#include <stddef.h>
#include <stdio.h>

/* Whether data starts with the gzip magic bytes. */
int mh__gzip_is(const char *data, size_t len);

/* Decompresses a whole gzip stream (several members are concatenated) into
 * *out (malloc'd, NUL-terminated, the caller frees) of *outlen bytes, at
 * most `limit` bytes. On failure returns a negative MH_E* code and writes
 * why into err. */
int mh__gzip_inflate(const char *data, size_t len, size_t limit, char **out, size_t *outlen,
                     char *err, size_t errlen);

/* A stream that gzip-compresses what is written to it into `under`
 * (borrowed, left open). fclose() on it writes the gzip trailer and returns
 * EOF if anything failed; every output writer uses it as a plain FILE *.
 * NULL when out of memory. */
FILE *mh__gzip_open_write(FILE *under);

#endif
