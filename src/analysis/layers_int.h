/* layers_int.h - internals shared by layers.c (naming, grouping,
 * attribution) and checkpoint.c (checkpointing estimates). */
#ifndef MH_ANALYSIS_LAYERS_INT_H
#define MH_ANALYSIS_LAYERS_INT_H

#include "layers.h"

/* One call of a layer's module in one pass of the lifetimes (a step, or
 * under gradient accumulation one micro-batch's forward and backward:
 * mh__lifetimes_passes); a layer whose calls are not told apart has one
 * group per pass (layer_calls.c). */
struct mh__lgroup {
    uint64_t bwd_start; /* first backward allocation of the call; MH_NEVER if none */
    uint64_t fwd_first; /* first forward allocation of the call; MH_NEVER if none */
    uint64_t moved;     /* saved activation bytes that checkpointing recomputes */
    uint64_t transient; /* recompute working set beyond them */
    uint32_t span;      /* its pass */
};

struct mh_layers {
    const struct mh_lifetimes *lt;
    int device;
    size_t nlayers, nspans;
    struct mh_layer_stats *stats; /* by layer index */
    char **names;                 /* by layer index */
    uint8_t *compiled;            /* by layer index: see mh_layer_stats.compiled */
    int32_t *layer_of;            /* per record, -1 = other device */
    uint32_t *span_of;            /* per record: pass of the allocation */
    uint8_t *output;              /* per record: returned by its layer's module or an
                                   * ancestor (MH_ROLE_OUTPUT tags): it leaves the layer */
    struct mh__lgroup *groups;    /* layer l's are [first_group[l], first_group[l + 1]) */
    size_t *first_group;          /* [nlayers + 1] */
    size_t ngroups;
    uint32_t *group_of;           /* per record of the device: its group */
    int64_t *delta;               /* allocated-bytes change at each event index */
    uint64_t nevents;
    uint64_t peak, peak_index;
    int64_t peak_step;
    size_t peak_span;
    uint64_t forward_total;       /* forward allocation volume of the peak pass */
    struct mh_step_peak *step_peaks;
    size_t nstep_peaks;
};

/* 1 if record i is a saved activation that checkpointing its layer drops. */
int mh__layers_is_saved(const struct mh_layers *ly, size_t i);
/* Makes the groups of every layer's calls and each record's group. */
int mh__layers_calls(struct mh_layers *ly, const struct mh_reader *r);
/* Fills the groups (bwd_start, moved, transient). */
int mh__layers_groups(struct mh_layers *ly);
/* Single-layer reductions of every candidate. */
int mh__layers_reductions(struct mh_layers *ly);

#endif
