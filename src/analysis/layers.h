/* layers.h - peak attribution to layers and activation-checkpointing
 * estimates, over the allocation lifetimes of categories.h.
 *
 * Layer of an allocation (mh__layer_name, layer_names.h):
 *   1. its user metadata, when that is a module path ("transformer.h.11.mlp.
 *      c_fc"): the path up to and including its first component that is an
 *      index (all digits: the entry of a ModuleList/Sequential), so
 *      "transformer.h.11", or a numbered block kept as an attribute (a name
 *      with a digit that holds modules and has a sibling of the same stem:
 *      "block2" of "block2.mlp.c_fc", "features.denseblock1", "inception3a";
 *      not ResNet's "layer1", a Sequential whose index follows), whichever
 *      comes first; a path with neither is cut at its first module that
 *      holds others, has a sibling and no block below it ("bert.embeddings",
 *      a module called several times as "shared"; not a lone wrapper such as
 *      a compiled model's graph module under its root), else kept whole
 *      ("lm_head", "transformer.ln_f", a leaf such as "conv1");
 *   2. else its stack: the `Class.forward` frames of user code (not torch or
 *      the interpreter), outermost first; the root module's child names the
 *      layer ("GPT.Block"), or the only such class; identical blocks cannot be
 *      told apart this way and share one entry;
 *   3. else the stack's most informative frame ("train.py:61 get_batch").
 *
 * Checkpointing model, per layer L, pass (a step, or under gradient
 * accumulation each micro-batch's forward and backward) and call of L's
 * module (layer_calls.c: a module called several times per pass has each
 * call recomputed at its own backward): L's backward starts at the first
 * allocation of the call's backward attributed to L. L's saved activations are the allocations it made in that pass's
 * forward (category activation) that are freed in that step's backward at
 * or after L's backward start; tensors freed before it (L's output, kept by the next
 * layer) or after the step (held by the program) are not dropped.
 * Checkpointing L moves the start of each saved activation's lifetime to L's
 * backward start (recomputation) and adds, at that moment, the recompute
 * transient: L's largest forward working set beyond its saved activations
 * (max over L's forward of its live forward allocations, minus the saved
 * ones). The estimated peak is the maximum of the allocated curve modified
 * this way, so a peak that moves elsewhere is accounted for. */
#ifndef MH_ANALYSIS_LAYERS_H
#define MH_ANALYSIS_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/reader.h"
#include "categories.h"

struct mh_layer_stats {
    const char *name;              /* owned by the analysis */
    uint64_t live_at_peak;         /* block bytes live at the allocated peak */
    uint64_t by_category[MH_CAT_COUNT];
    uint64_t saved_at_peak;        /* saved activations (peak step) live at the peak */
    uint64_t saved_total;          /* all saved activations of the peak step */
    uint64_t transient;            /* recompute transient (peak step) */
    uint64_t forward_volume;       /* bytes allocated in the peak step's forward */
    uint64_t reduction;            /* peak reduction if only this layer were checkpointed */
    int candidate;                 /* has saved activations and a backward in the peak step */
    int compiled;                  /* some of its allocations were made in code torch.compile
                                    * generated (mh__stack_is_compiled) */
};

struct mh_step_peak {
    int64_t step;
    uint64_t index;  /* event index of the step's allocated peak */
    uint64_t bytes;
};

struct mh_layers;

/* Analyses `device` of a finished lifetimes collection, which must outlive
 * the analysis; the reader names layers and is borrowed for the call only. */
int mh__layers_analyze(const struct mh_lifetimes *lt, const struct mh_reader *r, int device,
                       struct mh_layers **out);
void mh__layers_free(struct mh_layers *ly);

/* The allocated peak (from the lifetimes; equals the model's). */
uint64_t mh__layers_peak(const struct mh_layers *ly, uint64_t *index, int64_t *step);
/* Layers in first-seen order (borrowed); record layer indices refer to it. */
const struct mh_layer_stats *mh__layers_list(const struct mh_layers *ly, size_t *n);
/* Layer index of each lifetimes record (-1 for other devices; borrowed). */
const int32_t *mh__layers_of_records(const struct mh_layers *ly);
/* The allocated peak of each step (borrowed). */
const struct mh_step_peak *mh__layers_step_peaks(const struct mh_layers *ly, size_t *n);

/* Estimated allocated peak with the listed layers (indices into the list)
 * checkpointed, and their recompute cost as a share of the peak step's
 * forward allocation volume (a proxy for forward FLOPs). */
int mh__layers_estimate(const struct mh_layers *ly, const size_t *layers, size_t n, uint64_t *peak,
                        double *recompute_share);

/* A plan saving less than this share of the peak is no plan: the recompute
 * costs more than the memory is worth (a model already checkpointed). */
#define MH__PLAN_MIN_SHARE 0.01

/* Ranked plan: candidates by their single-layer reduction (largest first)
 * in order[0..*n); peak_after[i] = estimated peak with order[0..i]
 * checkpointed; *best = the smallest prefix length reaching 95 % of the
 * largest saving (0 if no candidate saves MH__PLAN_MIN_SHARE of the peak).
 * Caller frees the two arrays. */
int mh__layers_plan(const struct mh_layers *ly, size_t **order, uint64_t **peak_after, size_t *n,
                    size_t *best);

#endif
