/* report_oom.h - the data behind `memhist oom`: one explained moment (an
 * OOM, or the allocated peak) of one device, gathered in report_oom.c and
 * printed as text or JSON in report_oom_print.c. */
#ifndef MH_CLI_REPORT_OOM_H
#define MH_CLI_REPORT_OOM_H

#include "cli/report.h"
#include "cli/report_analysis.h"
#include "viz/json.h"

struct mh_oom_opts {
    int at_peak, json;
    uint64_t top;
};

enum mh_oom_verdict {
    MH_OOM_VERDICT_NONE,          /* --at peak: nothing failed */
    MH_OOM_VERDICT_FRAGMENTATION,
    MH_OOM_VERDICT_CROSS_STREAM,
    MH_OOM_VERDICT_EXHAUSTION
};
const char *mh_oom_verdict_name(int verdict);

struct mh_free_stat {
    uint64_t stream;
    int small_pool;
    uint64_t largest, total, blocks;
};

struct mh_named_bytes {
    const char *name; /* borrowed from the layer analysis */
    uint64_t bytes;
};

struct mh_suggestion {
    char setting[96];
    int ok;               /* the replay ran */
    int in_effect;        /* the recording already ran with this setting */
    uint64_t ooms;        /* OOMs of the what-if run */
    uint64_t peak_reserved, peak_allocated;
};

struct mh_oom_case {
    int device;
    struct mh_oom_info oom;       /* at peak: time, step, allocated, reserved, event_index */
    struct mh_device_info info;
    uint64_t capacity;            /* recorded total, else reserved + CUDA free (estimate) */
    int capacity_estimated;
    uint64_t outside;             /* capacity - CUDA free - reserved (0 if unknown) */
    int small_pool;
    int verdict;
    struct mh_free_stat *free;
    size_t nfree;
    struct mh_stack_group *stacks;
    size_t nstacks;
    uint64_t live_bytes, live_count;
    struct mh_named_bytes *layers;
    size_t nlayers;
    struct mh_suggestion sugg[3];
    size_t nsugg;
    uint64_t recorded_peak_reserved;
    /* activation checkpointing plan */
    struct mh_layers *ly;
    size_t *plan;
    size_t nplan;
    uint64_t plan_peak_after, peak_allocated; /* --at peak */
    uint64_t plan_freed;                      /* at an OOM: activations dropped minus transient */
    int plan_fits;
};

int mh_oom_explain_all(struct mh_analysis *a, size_t n, const struct mh_oom_opts *o);

void mh_oom_print_text(const struct mh_analysis *a, const struct mh_oom_case *c,
                       const struct mh_oom_opts *o, size_t number, size_t count);
void mh_oom_print_json(struct mh_json *j, const struct mh_analysis *a, const struct mh_oom_case *c,
                       const struct mh_oom_opts *o);

#endif
