/* oom_explain.h - the data behind `memhist oom`: one explained moment (an
 * OOM, or the allocated peak) of one device, gathered in oom_explain.c and
 * printed as text or JSON by src/cli (report_oom_print.c). */
#ifndef MH_ANALYSIS_OOM_EXPLAIN_H
#define MH_ANALYSIS_OOM_EXPLAIN_H

#include "device_report.h"
#include "analysis.h"
#include "whatif_check.h"

struct mh__oom_opts {
    int at_peak, json;
    uint64_t top;
};

enum mh__oom_verdict {
    MH__OOM_VERDICT_NONE,          /* --at peak: nothing failed */
    MH__OOM_VERDICT_FRAGMENTATION,
    MH__OOM_VERDICT_CROSS_STREAM,
    MH__OOM_VERDICT_EXHAUSTION
};
const char *mh__oom_verdict_name(int verdict);

struct mh__free_stat {
    uint64_t stream;
    int small_pool;
    uint64_t largest, total, blocks;
};

struct mh__named_bytes {
    const char *name; /* borrowed from the layer analysis */
    uint64_t bytes;
};

struct mh__suggestion {
    char setting[96];
    int ok;               /* the replay ran */
    int in_effect;        /* the recording already ran with this setting */
    uint64_t ooms;        /* OOMs of the what-if run */
    uint64_t peak_reserved, peak_allocated;
};

struct mh__oom_case {
    int device;
    struct mh_oom_info oom;       /* at peak: time, step, allocated, reserved, event_index */
    struct mh_device_info info;
    uint64_t capacity;            /* recorded total, else reserved + CUDA free (estimate) */
    uint64_t usable;              /* set by the caller: what the recorded allocator could use
                                   * (mh__whatif_capacity), which replays get; 0 = capacity */
    int capacity_estimated;
    int mid_run;                  /* an imported trace that starts mid-run (meta trace_start) */
    double replay_match;          /* percent of the run's allocator events the replay under
                                   * its own settings reproduces (-1: not replayed) */
    int estimates;                /* the replay reproduces the run poorly (a match under
                                   * MH__WHATIF_CHECKED_MATCH): no checks */
    struct mh__whatif_outcome baseline; /* that replay (seeded from the trace's start) */
    int baseline_given;           /* set by the caller with `baseline`: that replay at
                                   * `usable`, not run again where the case replays there */
    uint64_t outside;             /* capacity - CUDA free - reserved (0 if unknown) */
    int small_pool;
    int verdict;
    struct mh__free_stat *free;
    size_t nfree;
    struct mh__stack_group *stacks;
    size_t nstacks;
    uint64_t live_bytes, live_count;
    struct mh__named_bytes *layers;
    size_t nlayers;
    struct mh__suggestion sugg[3];
    size_t nsugg;
    uint64_t recorded_peak_reserved;
    /* activation checkpointing plan */
    struct mh__layers *ly;
    size_t *plan;
    size_t nplan;
    uint64_t plan_peak_after, peak_allocated; /* --at peak */
    uint64_t plan_freed;                      /* at an OOM: activations dropped minus transient */
    int plan_fits;
};

/* The moments to explain on one device: its OOMs (at most `max`), or its
 * allocated peak with `at_peak`. Returns how many were written to `out`. */
size_t mh__oom_moments(const struct mh_model *m, int device, int at_peak, struct mh_oom_info *out,
                       size_t max);
void mh__oom_case_free(struct mh__oom_case *c);

/* The cases explained on one device, at most MH__OOM_CASES_MAX OOMs. */
#define MH__OOM_CASES_MAX 64
struct mh__oom_cases {
    struct mh__oom_case *c;
    size_t n;
    struct mh__layers *ly; /* the layers analysis the cases name layers by (owned) */
};

/* Every moment to explain on `device` of a file opened as an analysis
 * (with MH__WANT_WHATIF_OOM): its OOMs, or its allocated peak with
 * o->at_peak; each with the state at its moment, free blocks, verdict,
 * live stacks and layers, the checkpointing plan and the checked
 * suggestions. No case (out->n 0) when the device has none. Returns 0 or a
 * negative MH_E* code. */
int mh__oom_cases(const struct mh__analysis *a, int device, const struct mh__oom_opts *o,
                  struct mh__oom_cases *out);
void mh__oom_cases_free(struct mh__oom_cases *cs);

#endif
