/* plot.h - PNG pictures of a recorded run: the memory timeline and the
 * allocator's segment layout at one moment.
 *
 * Input is a replay session (src/analysis/session.h: the plot's scans and
 * columns are observers of its passes, memory independent of the number of
 * events; the session rewinds between passes, so a file, not a pipe);
 * output is PNG bytes written to a sink. The timeline shows live
 * allocations stacked by allocation stack (the top groups at the peak), the
 * allocated, reserved and driver-level curves, the peak, steps, OOMs and a
 * per-step strip (or stacked by memory category, --color category); several
 * files (ranks) give one timeline panel each, stacked vertically; the segment view shows every segment and block at the
 * peak, the last OOM or a given time. Library code: it never prints;
 * problems with the options come back as MH_EINVAL with a message. */
#ifndef MH_VIZ_PLOT_H
#define MH_VIZ_PLOT_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/model.h"
#include "moment.h"
#include "memhist/reader.h"
#include "session.h"
#include "sink.h"

enum mh__plot_kind { MH__PLOT_TIMELINE = 0, MH__PLOT_SEGMENTS = 1 };
/* What the timeline's stacked areas are coloured by: allocation site (the
 * top groups at the peak) or memory category (src/analysis/categories.h). */
enum mh__plot_color { MH__PLOT_COLOR_STACK = 0, MH__PLOT_COLOR_CATEGORY = 1 };
/* How several files are drawn: a timeline panel each below
 * MH__PLOT_HEATMAP_RANKS files (auto), else a heat map of peak reserved per
 * rank and step above the timeline of the worst rank; or either on request. */
enum mh__plot_ranks { MH__PLOT_RANKS_AUTO = 0, MH__PLOT_RANKS_PANELS = 1, MH__PLOT_RANKS_HEATMAP = 2 };
#define MH__PLOT_HEATMAP_RANKS 8
/* Timeline x axis: time with idle stretches compressed (default), linear
 * time, the device's allocator events evenly spaced, or every step (and
 * the set-up before the first) the same width. */
enum mh__plot_x { MH__PLOT_X_COMPRESSED = 0, MH__PLOT_X_TIME = 1, MH__PLOT_X_EVENTS = 2, MH__PLOT_X_STEPS = 3 };

#define MH__PLOT_DEFAULT_WIDTH 1280
#define MH__PLOT_DEFAULT_HEIGHT 760
#define MH__PLOT_DEFAULT_TOP 8
#define MH__PLOT_MAX_TOP 16
#define MH__PLOT_MIN_WIDTH 400
#define MH__PLOT_MIN_HEIGHT 300

/* Zero-initialised = defaults: timeline of the first device, whole run,
 * default size, top 8 groups, at the peak. */
struct mh__plot_opts {
    int kind;                  /* enum mh__plot_kind */
    int width, height;         /* pixels; 0 = defaults */
    int has_device, device;    /* device to draw; default: first device seen */
    unsigned top;              /* coloured groups; 0 = MH__PLOT_DEFAULT_TOP */
    /* window, as --steps A:B (inclusive) or --time A:B (ns from the first event) */
    int has_steps, has_time;
    int64_t step_lo, step_hi;
    uint64_t t_lo_ns, t_hi_ns;
    int at;                    /* enum mh__moment_kind (moment.h), for the segment view */
    uint64_t at_ns;            /* MH__MOMENT_TIME: ns from the first event */
    int color;                 /* enum mh__plot_color, for the timeline */
    int x_axis;                /* enum mh__plot_x, for the timeline */
    const char *name;          /* file name for the title (borrowed); NULL = none */
    const char *note;          /* appended to the title line (borrowed); NULL = none */
    /* several files of one job: times (axis, --time, --at) count from this
     * instant, the job's start (src/analysis/job_origin.h); 0 = the first event */
    uint64_t origin_ns;
    int ranks_view;            /* enum mh__plot_ranks, for several files */
};

/* What the plot saw, for the caller's messages. */
struct mh__plot_result {
    int device;                /* device drawn, -1 if none */
    uint64_t events;           /* events read per pass */
    int read_error;            /* negative code if the file is damaged (events before it were used) */
    int empty;                 /* the image holds a message instead of a plot */
    /* the allocated peak the timeline marks, and its time as labelled (from
     * the first event, or from the job's start with opts->origin_ns) */
    int has_peak;
    uint64_t peak_allocated, peak_since_ns;
    int worst;                 /* several files: marked as the worst rank */
};

/* Draws the plot and writes it to `out` as PNG. Returns 0 or a negative
 * code; for MH_EINVAL (bad options, unknown device, empty window, no OOM for
 * MH__MOMENT_OOM) `err` holds a one-line message. `res` may be NULL. */
int mh__plot_render(struct mh__session *r, const struct mh__plot_opts *opts, struct mh__sink *out,
                    struct mh__plot_result *res, char *err, size_t errlen);

/* Most files mh__plot_render_ranks draws in one image. */
#define MH__PLOT_MAX_RANKS 64

/* Timelines of several runs (one per rank) in one PNG: a panel per reader,
 * top to bottom in the order given, each `opts->height` pixels tall (0 =
 * MH__PLOT_RANK_HEIGHT) with its own title naming names[i]. When every run's
 * window shares an instant, the panels share one time axis (times from the
 * earliest first event); otherwise each has its own. The run with the
 * highest reserved peak is marked in its title. With opts->origin_ns every
 * panel's times count from it. With MH__PLOT_HEATMAP_RANKS files or more
 * (opts->ranks_view) the image is instead a heat map of peak reserved per
 * rank and step, the worst cell outlined, above the worst rank's timeline
 * panel. The files' first passes run in parallel. Timeline only (MH_EINVAL
 * for MH__PLOT_SEGMENTS). `res`, if not NULL, has n entries. */
#define MH__PLOT_RANK_HEIGHT 520
int mh__plot_render_ranks(struct mh__session *const *sessions, const char *const *names, size_t n,
                          const struct mh__plot_opts *opts, struct mh__sink *out,
                          struct mh__plot_result *res, char *err, size_t errlen);

#endif
