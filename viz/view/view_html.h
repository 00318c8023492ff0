/* view_html.h - `memhist view`'s output: one self-contained HTML page (inline
 * CSS and JavaScript, no network) holding every answer the other commands
 * print for one or more recordings, with a timeline whose level of detail is
 * precomputed here.
 *
 * Sits at the end of the offline data flow, beside viz/flame and viz/plot:
 * it reads the answers made in src/analysis (device reports, the layers
 * answer, OOM cases, growth, ranks, flame trees of precomputed moments) and
 * one more streaming pass of its own for the timeline's buckets and the raw
 * events of a few steps, and writes them as a JSON block inside the page's
 * template. The page computes nothing of its own. */
#ifndef MH_VIZ_VIEW_HTML_H
#define MH_VIZ_VIEW_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "sink.h"

/* Limits; zero fields take the defaults in brackets. */
struct mh__view_opts {
    size_t max_moments;     /* flame trees kept per device [64] */
    size_t max_tree_nodes;  /* nodes kept per tree, the smallest merged [400] */
    size_t max_events;      /* raw events kept per device [40000] */
    size_t max_step_events; /* raw events kept per step [6000] */
    size_t max_steps_table; /* rows of the per-step table per device [5000] */
    int coarse_only;        /* the timeline's whole-run level alone (many files) */
};

struct mh__analysis;
struct mh__rank_row;

/* One recording's part of the page: its answers as JSON in memory, made
 * from a file opened as an analysis (with the what-if trend, peak groups and
 * growth wanted). Thread-safe across files. Returns 0 or a negative MH_E*
 * code; *out is freed with mh__view_part_free. */
struct mh__view_part;
int mh__view_part_make(const struct mh__analysis *a, const struct mh__view_opts *o,
                       struct mh__view_part **out);
void mh__view_part_free(struct mh__view_part *p);
/* Bytes of JSON the part holds. */
size_t mh__view_part_size(const struct mh__view_part *p);

/* Writes the page: `title`, the parts in order and, with several files, the
 * rank table of `rows` (n of them, as mh__rank_row_fill gives; NULL when
 * there is one file) with the job's origin `t0_ns`. Returns the sink's
 * error (0 if none). */
int mh__view_write(struct mh__sink *out, const char *title, struct mh__view_part *const *parts,
                   const struct mh__rank_row *rows, size_t n, uint64_t t0_ns);

#endif
