/* sink.h - where outputs go: a FILE* or a growing memory buffer.
 *
 * Every output writer (report JSON, pickle, PNG, Chrome trace) writes through
 * a sink, so tests can check the bytes in memory and the CLI can stream to a
 * file or stdout. A sink keeps its first error; writes after it are ignored. */
#ifndef MH_VIZ_SINK_H
#define MH_VIZ_SINK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct mh__sink {
    FILE *fp;        /* file output, or NULL for memory */
    char *buf;       /* memory output: owned, grown as needed */
    size_t len, cap;
    uint64_t bytes;  /* total bytes accepted */
    int error;       /* first error (negative MH_E* code), 0 if none */
    int errnum;      /* the system's errno behind a file error, 0 if none */
};

/* A sink writing to `fp` (borrowed; not closed by the sink). */
void mh__sink_init_file(struct mh__sink *s, FILE *fp);
/* A sink collecting bytes in memory; release with mh__sink_free. */
void mh__sink_init_mem(struct mh__sink *s);
void mh__sink_free(struct mh__sink *s);

int mh__sink_write(struct mh__sink *s, const void *data, size_t len);
int mh__sink_puts(struct mh__sink *s, const char *str);
int mh__sink_printf(struct mh__sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Flushes a file sink; returns the sink's first error (0 if none). */
int mh__sink_finish(struct mh__sink *s);

#endif
