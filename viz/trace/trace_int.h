/* trace_int.h - state shared by the trace writer's files (trace_writer.c:
 * scan and JSON document; trace_events.c: one event at a time as JSON;
 * trace_kineto.c: merging into a torch.profiler trace; trace_pftrace.c and
 * trace_pfevents.c: the Perfetto protobuf output, trace_pf.h). Internal to viz. */
#ifndef MH_VIZ_TRACE_INT_H
#define MH_VIZ_TRACE_INT_H

#include "memhist/model.h"
#include "trace_writer.h"

/* Correlation flags. */
enum { CORR_API = 1, CORR_DEVICE = 2, CORR_S_DONE = 4, CORR_F_DONE = 8 };

struct mh__corr_map {
    uint32_t *keys; /* 0 = empty (correlation 0 is never used) */
    uint8_t *flags;
    size_t cap, len;
};

struct mh__open_range {
    uint32_t str;
    uint64_t begin_ns;
};

struct mh__thread_ranges {
    uint32_t thread;
    struct mh__open_range *stack;
    size_t len, cap;
};

struct mh__track {
    int64_t pid, tid;
};

#define MH__TRACE_MAX_DEVICES 64

/* A device's memory counters at one moment: the model's values after an event. */
struct mh__counter_sample {
    uint64_t time_ns;
    uint64_t n;             /* its order within the microsecond */
    struct mh_mem_stats st;
};
/* The pending microsecond of a device's counters. They are written once per
 * device and microsecond with the values after its last event, preceded by
 * the moment allocated (or reserved) was highest in it when that is higher
 * than any value written before: a peak freed within its microsecond is
 * kept, so the trace's maxima are the run's (or the window's) peaks. */
struct mh__counter_state {
    int pending;
    int64_t ts_us;
    uint64_t n;
    struct mh__counter_sample last, top_allocated, top_reserved;
    uint64_t written_allocated, written_reserved; /* the highest values written */
};

struct mh__trace {
    struct mh__trace_opts o;
    struct mh__trace_plan plan;
    int scanned;
    struct mh__corr_map corr;
    /* clock */
    uint64_t base_ns;       /* ts origin (0 = absolute) */
    int base_fixed;         /* set by the merge: keep base_ns after the scan */
    uint64_t t0_ns;         /* time of the file's first event */
    int have_t0;
    uint64_t clip_lo_ns, clip_hi_ns; /* extra absolute clip (merge), 0/0 = none */
    /* pass 2 */
    struct mh__json *j;
    const struct mh_reader *r;
    struct mh_model *m;
    int64_t host_pid;
    struct mh__thread_ranges *threads;
    size_t nthreads;
    struct mh__track *tracks;
    size_t ntracks, tracks_cap;
    uint64_t step_begin_ns;
    int64_t open_step;
    int in_window_seen;
    /* step begin times (from the scan), for events that arrive late */
    struct mh__step_time { uint64_t begin_ns; int64_t step; } *step_times;
    size_t nstep_times, step_times_cap;
    struct mh__counter_state counters[MH__TRACE_MAX_DEVICES];
    struct mh__pftrace *pf;  /* the protobuf write pass (trace_pf.h) */
};

/* trace_estimate.c: the output size, worked out during the scan. */
struct mh__trace_estimate {
    const struct mh_reader *r;
    const struct mh_model *m; /* the scan's model, after each event */
    uint64_t base_ns;
    int have_base;
    unsigned host_pid_digits;
    int pretty;
    struct mh__counter_state counters[MH__TRACE_MAX_DEVICES];
};
void mh__trace_estimate_begin(struct mh__trace_estimate *e, const struct mh_reader *r,
                              const struct mh_model *m, int pretty);
/* Bytes the write pass adds for an event in the window (a counter sample is
 * counted when the next one replaces it). */
uint64_t mh__trace_estimate_event(struct mh__trace_estimate *e, const struct mh_event *ev);
/* Bytes of `flows` launch -> device arrows (a start and a finish each). */
uint64_t mh__trace_estimate_flows(const struct mh__trace_estimate *e, uint64_t flows);
/* Bytes of the samples still pending at the end. */
uint64_t mh__trace_estimate_end(struct mh__trace_estimate *e);

/* trace_writer.c */
/* Whether a sample in microsecond `us` ends the pending one (take it first). */
int mh__counter_ends(const struct mh__counter_state *c, int64_t us);
/* Adds the values after an event at ns to the pending microsecond `us`. */
void mh__counter_add(struct mh__counter_state *c, int64_t us, uint64_t ns,
                     const struct mh_mem_stats *st);
/* The pending microsecond's samples to write, in time order (0 to 3); it is
 * no longer pending. */
size_t mh__counter_take(struct mh__counter_state *c, struct mh__counter_sample out[3]);
int mh__trace_in_window(struct mh__trace *t, const struct mh_event *ev, int64_t step);
int mh__trace_device_ok(const struct mh__trace *t, int device);
/* The step of an event: by time for device records and API calls (CUPTI
 * delivers them late, after later host events), else the model's step. */
int64_t mh__trace_step_of(const struct mh__trace *t, const struct mh_event *ev, int64_t model_step);
int mh__corr_add(struct mh__corr_map *c, uint32_t key, uint8_t flag);
uint8_t mh__corr_get(const struct mh__corr_map *c, uint32_t key);
/* "memhist": {the file's metadata} as one object member. */
void mh__trace_write_meta(struct mh__json *j, const struct mh_reader *r);

/* trace_pftrace.c: the Perfetto protobuf documents of mh__trace_write and
 * mh__trace_write_files (scanned already). */
int mh__trace_write_perfetto(struct mh__trace *t, struct mh__session *ses, struct mh__sink *s);
int mh__trace_write_files_perfetto(struct mh__trace *const *t, struct mh__session *const *ses,
                                   size_t n, struct mh__sink *s);

/* trace_events.c */
/* The pid of the recorded process: the file's, else one no real process has. */
int64_t mh__trace_host_pid(const struct mh_reader *r);
int mh__trace_events_begin(struct mh__trace *t, const struct mh_reader *r, struct mh_model *m,
                           struct mh__json *j);
int mh__trace_event(struct mh__trace *t, const struct mh_event *ev);
void mh__trace_events_end(struct mh__trace *t);
/* The session pass that writes the events into `j` (begin, event, end). */
int mh__trace_events_pass(struct mh__trace *t, struct mh__session *s, struct mh__json *j);
/* "123.456": microseconds relative to the base, clamped at 0. */
const char *mh__trace_ts(const struct mh__trace *t, uint64_t ns, char buf[32]);
/* Marks pid/tid (tid -1: the process) as named already, by the profile the
 * tracks are merged into, so its names stay. */
int mh__trace_name_taken(struct mh__trace *t, int64_t pid, int64_t tid);

#endif
