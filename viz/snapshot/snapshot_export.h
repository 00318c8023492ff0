/* snapshot_export.h - .memhist -> PyTorch memory snapshot (memory_viz pickle).
 *
 * Builds the dict torch.cuda.memory._snapshot() returns from a recorded (or
 * simulated or imported) file: `segments` with their blocks as the model has
 * them at the end of the chosen window, `device_traces` (the allocator events
 * of the window, one list per device index), `allocator_settings` and
 * `external_annotations` (step starts and ends). When the file has
 * memhist's own step markers, alloc and free entries carry the memory
 * category of their allocation (src/model/categories.h, the same rule as
 * `memhist report`), which the web viewer uses to colour its timeline (a
 * snapshot torch wrote, imported, keeps torch's colouring by allocation and
 * gets its own settings, entry keys and annotations back, see
 * snapshot_import.h); every other entry carries "unknown", because the viewer
 * throws when no entry has that category (a trace of only allocs and frees
 * of known categories gets no categories at all). The segments come from
 * the same model replay that accepted the trace, so replaying the trace
 * backwards from them, as the viewer's State History view does, is
 * consistent: events the model rejected as anomalies are left out of the
 * trace.
 *
 * Two phases: mh__snapshot_build replays the file once and counts the
 * window's entries (so the output size is estimated before anything is
 * written, and mh__snapshot_fit can choose a window the browser viewer
 * opens), mh__snapshot_write emits the pickle through pickle_write.h into a
 * sink, replaying the file again once per device (the segments come first
 * in the pickle). Memory follows the live allocations, the distinct stacks
 * and frames and the steps, plus half a byte per trace entry written (its
 * category); the input must be a file that can be read more than once. */
#ifndef MH_VIZ_SNAPSHOT_EXPORT_H
#define MH_VIZ_SNAPSHOT_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/reader.h"
#include "session.h"
#include "sink.h"

struct mh__snapshot;

/* Whether an event at `time_ns` during `step` lies in the window; `t0_ns` is
 * the time of the first event. */
typedef int (*mh__snapshot_window_fn)(void *user, uint64_t t0_ns, uint64_t time_ns, int64_t step);

/* Zero-initialised = the whole file, every device, no cap. */
struct mh__snapshot_opts {
    int only_device; /* restrict to `device` */
    int device;
    uint64_t max_entries;            /* keep the last N entries per device (0 = all) */
    mh__snapshot_window_fn in_window; /* NULL = the whole file */
    void *window_user;
    int no_categories; /* leave out the trace entries' "category" keys */
};

struct mh__snapshot_info {
    uint64_t entries;          /* trace entries that will be written */
    uint64_t capped;           /* entries left out by max_entries */
    uint64_t before_window;    /* allocator events before the window */
    uint64_t anomalies;        /* events the model rejected (left out) */
    uint64_t recorder_dropped; /* events the recorder dropped (file trailer) */
    uint64_t segments, blocks, annotations;
    uint64_t categorized;    /* entries with a "category" (0: none written) */
    int devices;             /* length of device_traces */
    int overflowed;          /* trace_alloc_overflowed is set */
    int read_error;          /* < 0 if the file is damaged (events before it used) */
    uint64_t estimate_bytes; /* expected size of the pickle */
};

/* One pass of the session `ses` (it must stay open until
 * mh__snapshot_free: its reader holds the stacks, and writing replays it),
 * with the recorded allocator settings. Reading damage is not fatal: see
 * info.read_error. Errors while reading are reported by the session.
 * Returns 0 or MH_E*. */
int mh__snapshot_build(struct mh__session *ses, const struct mh__snapshot_opts *opts,
                       struct mh__snapshot **out);
void mh__snapshot_info(const struct mh__snapshot *s, struct mh__snapshot_info *out);

/* The part of the run to write when the whole snapshot `s` would pass
 * `max_bytes` or `max_entries` trace entries (snapshot_fit.c): whole steps
 * around the run's first OOM or, without one, the highest allocated peak of
 * a device, as many as fit, else a time window around that moment. */
enum mh__snapshot_fit_kind {
    MH__SNAPSHOT_FIT_ALL,   /* the whole snapshot fits (or there is no moment to center on) */
    MH__SNAPSHOT_FIT_STEPS, /* step_lo..step_hi */
    MH__SNAPSHOT_FIT_TIME   /* t_lo_ns..t_hi_ns */
};

struct mh__snapshot_fit {
    int kind;
    int64_t step_lo, step_hi;  /* inclusive; step_lo INT64_MIN: from the start */
    uint64_t t_lo_ns, t_hi_ns; /* since the first event, inclusive */
    int device;                /* the device of the moment */
    int at_oom;                /* the moment is the run's first OOM (else the peak) */
    int64_t focus_step;        /* its step (-1 before the first) */
    uint64_t focus_value;      /* the peak's allocated bytes; an OOM's request */
    uint64_t focus_time_ns;    /* since the first event */
    uint64_t entries, bytes;   /* expected in the window (ALL: the whole snapshot) */
};

/* Returns 0 (MH__SNAPSHOT_FIT_ALL when nothing needs cutting). */
int mh__snapshot_fit(const struct mh__snapshot *s, uint64_t max_bytes, uint64_t max_entries,
                     struct mh__snapshot_fit *out);
/* Narrows `s`, built over the whole run (no window, no max_entries), to the
 * window of `fit` (in_window tells its events): one more pass to its end;
 * the categories are the first pass's, the size estimate the fit's. Returns
 * 0 or MH_E*. */
int mh__snapshot_narrow(struct mh__snapshot *s, const struct mh__snapshot_fit *fit,
                        mh__snapshot_window_fn in_window, void *user);
/* Writes the pickle. Returns 0 or the first error of the sink or of the
 * replays. */
int mh__snapshot_write(struct mh__snapshot *s, struct mh__sink *sink);
/* Accepts NULL. */
void mh__snapshot_free(struct mh__snapshot *s);

#endif
