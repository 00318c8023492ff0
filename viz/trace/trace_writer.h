/* trace_writer.h - traces of a .memhist file for ui.perfetto.dev: Chrome
 * trace event JSON (also chrome://tracing) or Perfetto's own protobuf format.
 *
 * Two passes of a replay session (src/analysis/session.h), as observers: a
 * scan that decides what lies in the window, pairs launch -> kernel
 * correlations and estimates the output size, then the write, which reads
 * the memory counters from the session's model. Output follows Kineto's
 * conventions (reference/cupti.md section 6): ts/dur in microseconds with three
 * decimals relative to baseTimeNanoseconds; host tracks pid = process id,
 * tid = OS thread; GPU tracks pid = device, tid = stream; "ac2g" flows from the
 * launching API call to its kernel or copy; per-device "C" memory counters
 * from the model (allocated, reserved, outside the allocator, total); instants
 * for segments, driver allocations, OOMs (with the model's explanation) and
 * marks; steps and op ranges as complete "X" events, so every slice is closed
 * even when the window cuts it. The protobuf output (trace_pftrace.c) holds
 * the same tracks and events as TrackEvents on described tracks, written
 * packet by packet. Owns its models and correlation table. */
#ifndef MH_VIZ_TRACE_WRITER_H
#define MH_VIZ_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/allocconf.h"
#include "memhist/reader.h"
#include "session.h"
#include "json.h"
#include "sink.h"

/* What a browser viewer opens, in bytes of trace: V8's longest string,
 * 2^29 - 24 characters (String::kMaxLength with pointer compression, as
 * Chrome builds it), is the largest JSON that chrome://tracing and other
 * JavaScript loaders can hold; the Perfetto UI parses traces in a
 * WebAssembly trace processor with about 2 GB of memory, where a trace
 * takes 2-4 times its file size (perfetto.dev, "Visualising large traces"),
 * so about this size again. The default of --warn-size and the size above
 * which `memhist trace` writes protobuf when the output's name does not say. */
#define MH__TRACE_VIEWER_LIMIT ((1ull << 29) - 24)
/* Files in one trace (each is a packet sequence of its own in protobuf). */
#define MH__TRACE_MAX_FILES 64

struct mh__trace_opts {
    int perfetto;               /* Perfetto protobuf instead of Chrome JSON */
    int has_steps;              /* keep events of steps [step_lo, step_hi] */
    int64_t step_lo, step_hi;
    int has_time;               /* keep events in [t_lo_ns, t_hi_ns] from the first event */
    uint64_t t_lo_ns, t_hi_ns;
    int device;                 /* only this device's GPU tracks; -1 = all */
    int memory_only;            /* counters, memory instants, steps and marks only */
    uint64_t warn_bytes;        /* JSON size above which the plan suggests a window;
                                 * 0 = MH__TRACE_VIEWER_LIMIT */
    int pretty;
    /* several files of one job in one trace (mh__trace_write_files): ts and
     * --time count from origin_ns, the job's start (src/analysis/job_origin.h;
     * 0 = the file's first event); a device's GPU pid is gpu_pid_base + its
     * index; process_label ("rank 1", borrowed; NULL = none) starts the
     * names of the file's processes; file_index (< MH__TRACE_MAX_FILES)
     * numbers its packet sequence and track uuids in protobuf */
    uint64_t origin_ns;
    int64_t gpu_pid_base;
    const char *process_label;
    unsigned file_index;
};

/* What the scan found. */
struct mh__trace_plan {
    uint64_t events;            /* events in the window */
    uint64_t first_ns, last_ns; /* span of the window's events (0 if none) */
    uint64_t file_first_ns, file_last_ns; /* span of all the file's events */
    uint64_t profile_first_ns, profile_last_ns; /* --into: the profile's span (0 if none) */
    uint64_t flows;             /* launch -> device-activity pairs */
    uint64_t est_bytes;         /* estimated size of the Chrome JSON */
    uint64_t counter_devices;   /* bit d: the window has GPU d's memory counters */
    int too_big;                /* est_bytes > warn_bytes */
    char suggestion[96];        /* e.g. "--steps 3:5" when too_big, else "" */
};

struct mh__trace;

int mh__trace_new(const struct mh__trace_opts *opts, struct mh__trace **out);
void mh__trace_free(struct mh__trace *t);

/* The format of the documents mh__trace_write writes (after the scan,
 * whose estimate may decide it). */
void mh__trace_set_perfetto(struct mh__trace *t, int perfetto);

/* The moment `--around` centres on (trace_around.c): the allocated peak of
 * `device` (-1: of the device whose peak is highest) or its last OOM, from
 * one replay of the session. found = 0 when there is none. */
enum { MH__TRACE_AROUND_PEAK = 1, MH__TRACE_AROUND_OOM = 2 };
struct mh__trace_moment {
    int found;
    int device;
    uint64_t time_ns;  /* absolute */
    int64_t step;      /* the device's step then (-1: before the first) */
    int has_steps;     /* the device has steps */
    uint64_t value;    /* the peak's allocated bytes; the OOM's request */
    uint64_t first_ns; /* the file's first event */
};
int mh__trace_moment(struct mh__session *s, int what, int device, struct mh__trace_moment *out);

/* Pass 1 over the session (a later pass rewinds it: a file, not stdin).
 * Errors are reported by the session. */
int mh__trace_scan(struct mh__trace *t, struct mh__session *s);
const struct mh__trace_plan *mh__trace_get_plan(const struct mh__trace *t);

/* Writes a complete trace document, JSON or protobuf as the options say
 * (scans first if not done). Returns 0, a reader error, or the sink's error. */
int mh__trace_write(struct mh__trace *t, struct mh__session *ses, struct mh__sink *s);

/* One trace of several files (one per rank): `t[i]` (options with the
 * job's origin_ns, its own gpu_pid_base and process_label) writes
 * `ses[i]`'s events into one document whose ts count from the job's start,
 * marked by an instant at ts 0, so Perfetto's time axis starts there.
 * Scans each first if not done. Returns as mh__trace_write. */
int mh__trace_write_files(struct mh__trace *const *t, struct mh__session *const *ses, size_t n,
                          struct mh__sink *s);

/* Writes `kineto` (JSON only: a torch.profiler trace, `len` bytes, plain or gzip) with
 * memhist's memory tracks added to its traceEvents, on its clock: ts relative
 * to its baseTimeNanoseconds if present, else absolute microseconds. Unless
 * the options set a window, only the profiled time span is added. On a bad
 * input returns MH_EFORMAT/MH_ELIMIT, and MH_ENOTFOUND when the recording
 * does not overlap the profile, with a message in err. */
int mh__trace_merge_kineto(struct mh__trace *t, struct mh__session *ses, const char *kineto,
                           size_t len, struct mh__sink *s, char *err, size_t errlen);

#endif
