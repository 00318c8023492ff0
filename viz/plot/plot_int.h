/* plot_int.h - what the parts of the PNG plots share (not public).
 *
 * Data flow of a timeline: plot_scan.c replays the file once (pass 1) to find
 * the device, the time span of the window, the allocated peak and the bytes
 * each allocation site held at that peak, and ranks the sites into groups;
 * plot_columns.c replays it again (pass 2) into one column per pixel; then
 * plot_timeline.c, plot_strip.c and plot_legend.c draw. The x axis
 * (compressed, time, events, steps) is a map from time to an axis value
 * that pass 1 prepares (plot_warp.c, plot_xmap.c); the coloured groups are
 * allocation sites or modules (plot_sites.c, plot_rank.c). With --color
 * category, pass 2 also classifies allocations (plot_category.c) and the
 * groups are the memory categories. plot_multi.c stacks one timeline panel
 * per file (rank) into one image. plot_segments.c
 * draws the segment view from a model replayed up to the chosen moment.
 * Memory is proportional to the number of distinct stacks, pixels and (for
 * categories) live allocations, never to the number of events. */
#ifndef MH_VIZ_PLOT_INT_H
#define MH_VIZ_PLOT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "addrmap.h"
#include "categories.h"
#include "canvas.h"
#include "layer_names.h"
#include "plot.h"

#define MH__PLOT_LABEL 160

/* Per allocation stack, on the plotted device. */
struct mh__plot_stack {
    uint64_t cur;      /* live bytes now */
    uint64_t saved;    /* live bytes at the latest peak, valid when seq == peak_seq */
    uint32_t seq;      /* peak sequence number when `saved` was taken */
    int16_t group;     /* index into the groups, or the "rest" group */
    uint8_t seen;
};

/* The timeline's x axis. --x compressed (plot_warp.c): stretches with no
 * allocator activity of the device, in time order, each drawn `keep` ns
 * wide. --x events and --x steps (plot_xmap.c): knots (absolute time,
 * axis value) joined by straight lines: event i of the device at value i,
 * or step k of the window from value k to k + 1. */
#define MH__PLOT_GAPS 32
#define MH__PLOT_WARP_MIN_EVENTS 200 /* fewer memory events: a linear axis */
#define MH__PLOT_EVENT_KNOTS 8192
struct mh__plot_warp {
    int n;
    uint64_t a[MH__PLOT_GAPS], len[MH__PLOT_GAPS]; /* absolute start, length (ns) */
    uint64_t keep;
    int mode;             /* enum mh__plot_x the knots implement (X_TIME: no knots) */
    size_t nk, capk;
    uint64_t *kt;         /* knot times (absolute ns), non-decreasing */
    double *kv;           /* knot values, non-decreasing */
    int64_t *kstep;       /* steps: the step starting at the knot (-1 set-up, -2 before the
                           * first step, INT64_MIN the end) */
    uint64_t stride, last_t, last_ord; /* events: knot spacing, last event offered */
    double setup_scale;   /* compressed: the set-up drawn at this scale (1: as the steps) */
};
void mh__plot_warp_offer(struct mh__plot_warp *w, uint64_t a, uint64_t b);
void mh__plot_warp_finish(struct mh__plot_warp *w, uint64_t span);
/* Axis value (warped ns since t0, event ordinal or step position) of an
 * absolute time, and the real ns since t0 of an axis value. A NULL or
 * empty warp is the identity. Monotone non-decreasing in t. */
double mh__plot_warp(const struct mh__plot_warp *w, uint64_t t0, uint64_t t);
double mh__plot_unwarp(const struct mh__plot_warp *w, uint64_t t0, double v);
/* --x events: offer the device's memory events of the window in order
 * (ordinal from 0), then finish with the window's span. */
int mh__plot_xmap_event(struct mh__plot_warp *w, uint64_t t, uint64_t ordinal);
int mh__plot_xmap_events_finish(struct mh__plot_warp *w, uint64_t first, uint64_t last);
/* --x steps: knots from the model's steps of `device` over [first, last];
 * no step boundary inside the window leaves a time axis (mode X_TIME). */
int mh__plot_xmap_steps(struct mh__plot_warp *w, const struct mh_model *m, int device,
                        uint64_t first, uint64_t last);
/* --x compressed: when the set-up (before the first step) would take more
 * than MH__PLOT_SETUP_SHARE of the axis, knots draw it linearly at the scale
 * that gives it that share, so that the steps fill the rest; the idle cuts
 * stay (their ends are knots). setup_scale says the scale (1: unchanged). */
#define MH__PLOT_SETUP_SHARE 0.2
int mh__plot_xmap_squeeze_setup(struct mh__plot_warp *w, const struct mh_model *m, int device,
                                uint64_t t0, uint64_t first, uint64_t last);
double mh__plot_xmap_value(const struct mh__plot_warp *w, uint64_t t);
double mh__plot_xmap_time(const struct mh__plot_warp *w, uint64_t t0, double v);
void mh__plot_xmap_free(struct mh__plot_warp *w);

/* Allocation sites (plot_sites.c): the pairs (module scope or metadata,
 * stack), numbered from 0 in order of appearance; the per-site counters
 * and groups of the scan are indexed by site. */
struct mh__plot_sites {
    struct mh__hmap pairs;   /* (str << 32 | stack) + 1 -> site + 1 */
    struct mh__hmap live;    /* pass 1: block address -> site + 1 */
    uint32_t *str, *stack;   /* per site */
    size_t n, cap;
    uint64_t scopes;         /* module scope events seen: sites are named by module */
};
/* The site of an allocation or free of the device (after mh_model_apply);
 * `live` maps the pass's live blocks to their sites. */
int mh__plot_site_of(struct mh__plot_sites *ps, struct mh__hmap *live, const struct mh_model *m,
                     const struct mh_event *ev, const struct mh_apply_result *res, uint32_t *site);
/* Pass 2: the site pass 1 gave the same allocation (UINT32_MAX if unknown
 * or out of memory), keeping the pass's own `live` map. */
uint32_t mh__plot_site_find(const struct mh__plot_sites *ps, struct mh__hmap *live,
                            const struct mh_model *m, const struct mh_event *ev,
                            const struct mh_apply_result *res);
/* A layer namer (layer_names.h) that knows the module paths of every site. */
int mh__plot_sites_namer(const struct mh__plot_sites *ps, const struct mh_reader *r,
                         struct mh__layer_namer *nm);
/* The site's name: its layer (as `memhist layers` names it, `nm` from
 * mh__plot_sites_namer) when the recording has module scopes, else its
 * stack's label. Returns buf. */
const char *mh__plot_site_label(const struct mh__layer_namer *nm, const struct mh__plot_sites *ps,
                                uint32_t site, char *buf, size_t len);
void mh__plot_sites_free(struct mh__plot_sites *ps);

/* Result of pass 1. */
struct mh__plot_scan {
    int device, has_device;
    uint64_t events;          /* events read */
    int read_error;
    int event_order;          /* times only order the events (an imported snapshot
                               * without time_us, meta synthetic_times) */
    uint64_t t0;              /* time of the first event, or the job's start */
    int from_job_start;       /* t0 is the job's start (opts origin_ns) */
    uint64_t win_first, win_last; /* span of the events in the window (absolute ns) */
    uint64_t win_events;      /* events in the window (any device) */
    uint64_t dev_events;      /* memory events of the device in the window */
    struct mh_peak peak;      /* allocated peak inside the window */
    int has_peak;
    uint64_t max_reserved, max_driver; /* maxima inside the window */
    int has_driver;
    struct mh__plot_stack *stacks; /* indexed by site (plot_sites.c) */
    size_t nstacks;
    struct mh__plot_sites sites;
    uint32_t peak_seq;
    /* groups, largest first; group `ngroups` is everything else. By
     * category: the categories in enum order, `ngroups` being "unknown". */
    int by_category;
    unsigned ngroups;
    char labels[MH__PLOT_MAX_TOP][MH__PLOT_LABEL];
    uint64_t group_peak[MH__PLOT_MAX_TOP + 1];
    struct mh_model *model;   /* replayed over the whole file: steps, OOMs, devices */
    struct mh__plot_warp warp; /* idle stretches (empty with --x time) */
    uint64_t last_mem_ns;     /* time of the device's previous memory event in the window */
};

/* Result of pass 2: per pixel column, the maxima inside the column and the
 * group breakdown at the moment of the column's allocated maximum. */
struct mh__plot_cols {
    int n;
    uint64_t t_begin, t_end;  /* absolute ns mapped to columns 0 and n */
    const struct mh__plot_warp *warp; /* the scan's; with t0, the axis mapping */
    uint64_t t0;
    unsigned ngroups;         /* coloured groups; the breakdown has ngroups + 1 entries */
    int by_category;          /* the breakdown is by enum mh__category */
    uint64_t cat_peak[MH__CAT_COUNT]; /* by category: bytes live at the scan's peak */
    uint64_t *alloc, *reserved, *driver, *groups;
};

/* Pass 1. The reader is rewound first. Fills `s`; MH_EINVAL with a message
 * for an unknown device or an empty window. */
int mh__plot_scan_run(struct mh__session *r, const struct mh__plot_opts *o, struct mh__plot_scan *s,
                      char *err, size_t errlen);
/* Ranks allocation sites (stacks grouped by their label) by bytes at the
 * peak into at most `top` groups and assigns every stack its group. */
int mh__plot_scan_rank(struct mh__session *r, struct mh__plot_scan *s, unsigned top);
void mh__plot_scan_free(struct mh__plot_scan *s);

/* Memory categories in pass 2 (plot_category.c). A column shows the state
 * right after one event (its "moment"); an allocation's category is known
 * only when its life ends, so each end adds the allocation's bytes to every
 * column whose moment it was live at: a difference array per category for
 * the columns already closed, a pending sum for the open one (dropped when
 * the open column's moment moves past the end). */
struct mh__plot_catacc {
    struct mh__livecat *lc;
    int device, n;
    int64_t *moment;   /* per column: ordinal of the event whose state it shows, -1 none */
    int64_t *diff;     /* (n + 1) x MH__CAT_COUNT */
    int open;          /* column whose moment may still move, -1 if none */
    uint64_t pending[MH__CAT_COUNT];
    int64_t peak;      /* ordinal of the peak event, -1 if none */
    uint64_t at_peak[MH__CAT_COUNT];
};
int mh__plot_cat_init(struct mh__plot_catacc *a, int ncols, int device, int64_t peak);
void mh__plot_cat_release(struct mh__plot_catacc *a);
/* Observes event `ord` (after mh_model_apply); fills *end and returns 1
 * when it ends an allocation of the device. */
int mh__plot_cat_observe(struct mh__plot_catacc *a, const struct mh_model *m,
                         const struct mh_event *ev, const struct mh_apply_result *res,
                         uint64_t ord, struct mh__livecat_end *end);
/* Books an ended allocation (ord: event that ended it). */
void mh__plot_cat_end(struct mh__plot_catacc *a, const struct mh__livecat_end *end, int64_t ord);
/* Closes the open column (its moment is final). */
void mh__plot_cat_close(struct mh__plot_catacc *a);
/* The open column's moment moved to a later event. */
void mh__plot_cat_moved(struct mh__plot_catacc *a);
/* After the last event: books the allocations still alive and writes the
 * per-column breakdown (MH__CAT_COUNT entries per column) and cat_peak. */
int mh__plot_cat_finish(struct mh__plot_catacc *a, struct mh__plot_cols *c);

/* Pass 2 over `ncols` columns spanning [t_begin, t_end]. */
int mh__plot_cols_run(struct mh__session *r, const struct mh__plot_opts *o,
                      const struct mh__plot_scan *s, int ncols, uint64_t t_begin, uint64_t t_end,
                      struct mh__plot_cols *c);
void mh__plot_cols_free(struct mh__plot_cols *c);

/* Units for people: "1.50 GiB", "512 B"; "12.5 ms". Return buf. */
const char *mh__plot_bytes(uint64_t v, char *buf, size_t len);
const char *mh__plot_duration(uint64_t ns, char *buf, size_t len);

/* Axes. A linear map from a value range to a pixel range. */
struct mh__plot_axis {
    double v0, v1;   /* values at the two ends */
    int p0, p1;      /* pixels of those ends (p1 < p0 for a y axis) */
    const struct mh__plot_warp *warp; /* time axis: values are warped (NULL: linear) */
    uint64_t t0;
};
int mh__plot_axis_px(const struct mh__plot_axis *a, double v);
/* Ticks and labels along a time axis (values are ns since t0) under the
 * panel at y, and along a byte axis (left of the panel at x), with light
 * grid lines across the panel [gx0, gx1] x [gy0, gy1]. */
void mh__plot_time_ticks(struct mh__canvas *c, const struct mh__plot_axis *a, int y, int gy0,
                         int gy1);
void mh__plot_byte_ticks(struct mh__canvas *c, const struct mh__plot_axis *a, int x, int gx0,
                         int gx1, int max_ticks);
/* A "nice" step (1, 2 or 5 times a power of ten) for about `span / n`. */
double mh__plot_nice_step(double span, int n);

/* Title line (scale 2) and a subtitle below it. Returns the y below them. */
int mh__plot_title(struct mh__canvas *c, struct mh__session *r, const struct mh__plot_opts *o,
                   int device, const char *what, const char *subtitle);
/* An image holding only the title and a message (empty input). */
int mh__plot_message(struct mh__canvas *c, struct mh__session *r, const struct mh__plot_opts *o,
                     int device, const char *message);

/* Timeline drawing (plot_timeline.c) with its strip (plot_strip.c) and
 * legend (plot_legend.c). */
struct mh__plot_frame {
    int x, y, w, h;               /* the main panel */
    int legend_x, legend_y, legend_w;
    int strip_y, strip_h, strip_gap;
    struct mh__plot_axis tx;      /* time axis (ns since t0) over the panel */
};
/* Places the main panel, the legend and the strip below a header `top`
 * pixels tall; the time axis (tx) is left for the caller. */
void mh__plot_layout(int width, int height, int top, struct mh__plot_frame *f);
#define MH__PLOT_TOP 52
/* The whole timeline (title, panel, strip, legend) over [t_begin, t_end]
 * (absolute ns, shown as times since s->t0), or a message image for empty
 * input. Ranks the groups (or sets up categories) and runs pass 2. */
int mh__plot_timeline_panel(struct mh__canvas *c, struct mh__session *r,
                            const struct mh__plot_opts *o, struct mh__plot_scan *s,
                            uint64_t t_begin, uint64_t t_end);
int mh__plot_timeline(struct mh__canvas *c, struct mh__session *r, const struct mh__plot_opts *o,
                      const struct mh__plot_scan *s, const struct mh__plot_cols *cols,
                      const struct mh__plot_frame *f);
void mh__plot_strip(struct mh__canvas *c, const struct mh__plot_scan *s,
                    const struct mh__plot_frame *f, uint64_t t_begin, uint64_t t_end);
void mh__plot_legend(struct mh__canvas *c, const struct mh__plot_scan *s,
                     const struct mh__plot_frame *f);
/* Step boundaries and OOM markers over [y0, y1] inside the panel's x range. */
void mh__plot_markers(struct mh__canvas *c, const struct mh__plot_scan *s,
                      const struct mh__plot_frame *f, int y0, int y1, int labels);

/* The heat map of several ranks (plot_heat.c): peak reserved per rank (row)
 * and step (column; the steps of o's --steps window) from each scan's model,
 * drawn across the canvas from pixel row `y`, mh__plot_heatmap_height(n)
 * pixels tall. *worst: the file of the largest cell (left alone when no
 * rank has steps). */
int mh__plot_heatmap_height(size_t n);
int mh__plot_heatmap(struct mh__canvas *c, int y, const struct mh__plot_opts *o,
                     struct mh__plot_scan *scans, struct mh__session *const *rd,
                     const char *const *names, size_t n, size_t *worst);

/* The segment view (plot_segments.c). */
int mh__plot_segments(struct mh__canvas *c, struct mh__session *r, const struct mh__plot_opts *o,
                      const struct mh__plot_scan *s, char *err, size_t errlen);

#endif
