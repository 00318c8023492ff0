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
 * Two phases: mh__snapshot_build replays the file and keeps the window's
 * entries (so the output size can be estimated before anything is written),
 * mh__snapshot_write emits the pickle through pickle_write.h into a sink. */
#ifndef MH_VIZ_SNAPSHOT_EXPORT_H
#define MH_VIZ_SNAPSHOT_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/reader.h"
#include "sink.h"

struct mh_snapshot;

/* Whether an event at `time_ns` during `step` lies in the window; `t0_ns` is
 * the time of the first event. */
typedef int (*mh_snapshot_window_fn)(void *user, uint64_t t0_ns, uint64_t time_ns, int64_t step);

/* Zero-initialised = the whole file, every device, no cap. */
struct mh_snapshot_opts {
    int only_device; /* restrict to `device` */
    int device;
    uint64_t max_entries;            /* keep the last N entries per device (0 = all) */
    mh_snapshot_window_fn in_window; /* NULL = the whole file */
    void *window_user;
    int no_categories; /* leave out the trace entries' "category" keys */
};

struct mh_snapshot_info {
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

/* Replays `r` (borrowed; it must stay open until mh__snapshot_free, it holds
 * the stacks) through a model set up from the file's "alloc_conf" meta.
 * Reading damage is not fatal: see info.read_error. Returns 0 or MH_E*. */
int mh__snapshot_build(struct mh_reader *r, const struct mh_snapshot_opts *opts,
                       struct mh_snapshot **out);
void mh__snapshot_info(const struct mh_snapshot *s, struct mh_snapshot_info *out);
/* Writes the pickle. Returns 0 or the first error of the sink. */
int mh__snapshot_write(struct mh_snapshot *s, struct mh_sink *sink);
/* Accepts NULL. */
void mh__snapshot_free(struct mh_snapshot *s);

#endif
