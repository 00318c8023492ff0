/* job_ranks.h - the answer about the files of one job (one per rank): each
 * file's row (rank, host, the device with the largest peak reserved, its
 * peaks, steps, OOMs, fragmentation), the spread of peak reserved across
 * the ranks' own processes, and the worst rank. One rule names the worst
 * rank for every output (report, layers, oom, plot): the largest peak
 * reserved among the ranks' own processes, every file's when all are
 * processes a rank started (helpers), the first of equal ones. */
#ifndef MH_ANALYSIS_JOB_RANKS_H
#define MH_ANALYSIS_JOB_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/model.h"
#include "memhist/reader.h"

struct mh__rank_row {
    const char *path;
    char host[64]; /* "" when the header has none */
    int64_t rank;  /* -1 when neither the header nor the name says */
    int device;    /* the device with the largest peak reserved; -1 if none */
    int helper;    /* a process the rank started: listed, left out of the spread */
    struct mh_peak alloc, reserved;
    size_t steps, ooms;
    double frag;   /* at the reserved peak; < 0 when unknown */
};

struct mh__analysis;

/* The row of one file opened as an analysis. */
void mh__rank_row_fill(const struct mh__analysis *a, struct mh__rank_row *r);

/* Whether the file's process is one a rank started (header
 * rank_process=helper). */
int mh__rank_is_helper(const struct mh_reader *r);

/* The worst of `n` files by peak reserved (helper[i]: file i is a helper;
 * NULL: none is); n if n is 0. */
size_t mh__job_worst(const uint64_t *reserved, const uint8_t *helper, size_t n);

struct mh__job_spread {
    size_t max, min, far; /* row indices: the worst rank, the least, the farthest from the median */
    uint64_t median;
    size_t tied;          /* rows sharing the max */
    size_t far_tied;      /* rows as far from the median as `far` */
};

/* The spread of peak reserved over the ranks' own processes (every file
 * when all are helpers); s->max is mh__job_worst's answer. */
void mh__job_spread(const struct mh__rank_row *rows, size_t n, struct mh__job_spread *s);

#endif
