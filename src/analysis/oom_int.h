/* oom_int.h - the parts of one OOM case (oom_explain.c) that the cases of
 * a device (oom_cases.c) put together: the case's set-up, the allocator
 * state read at its moment, and the rest (layers, verdict, plan, checked
 * suggestions), with the what-if replays shared by the device's cases.
 * Internal to src/analysis. */
#ifndef MH_ANALYSIS_OOM_INT_H
#define MH_ANALYSIS_OOM_INT_H

#include "oom_explain.h"
#include "whatif_check.h"

/* A what-if replay one case ran, for the next cases of the device. */
struct mh__oom_replay {
    struct mh_alloc_conf conf;
    uint64_t capacity;
    int baseline, rc;
    struct mh__whatif_outcome out;
};

#define MH__OOM_REPLAYS 256

struct mh__oom_replays {
    struct mh__oom_replay r[MH__OOM_REPLAYS];
    size_t n;
};

/* The case's device information, capacity and what lies outside it. */
void mh__oom_setup(const struct mh__analysis *a, struct mh__layers *ly, const struct mh__oom_opts *o,
                   struct mh__oom_case *c);
/* Reads the allocator state of model `at` (the state right after the
 * case's event): free blocks, the figures at the peak, the live groups. */
int mh__oom_read_state(const struct mh_model *at, struct mh__oom_case *c, size_t top);
/* Layers at the moment, verdict, plan and suggestions (replays in `rs`). */
int mh__oom_conclude(const struct mh__analysis *a, const struct mh__whatif_input *in,
                     struct mh__oom_case *c, struct mh__oom_replays *rs);

#endif
