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
#include "session.h"

struct mh__layer_stats {
    const char *name;              /* owned by the analysis */
    uint64_t live_at_peak;         /* block bytes live at the allocated peak */
    uint64_t by_category[MH__CAT_COUNT];
    uint64_t saved_at_peak;        /* saved activations (peak step) live at the peak */
    uint64_t saved_total;          /* all saved activations of the peak step */
    uint64_t transient;            /* recompute transient (peak step) */
    uint64_t forward_volume;       /* bytes allocated in the peak step's forward */
    uint64_t reduction;            /* peak reduction if only this layer were checkpointed */
    int candidate;                 /* has saved activations and a backward in the peak step */
    int compiled;                  /* some of its allocations were made in code torch.compile
                                    * generated (mh__stack_is_compiled) */
};

/* A step's allocated peak and the layers holding most at it. */
struct mh__layer_step {
    int64_t step;
    uint64_t index; /* event index of the step's allocated peak */
    uint64_t bytes;
    size_t top[3];  /* layer indices, largest first; SIZE_MAX where fewer */
    uint64_t top_bytes[3];
};

struct mh__layers;

struct mh__analysis;

/* Analyses `device` of a file opened as an analysis (analysis.h: its first
 * pass made), with one more pass over the file. Keeps, besides the records
 * live at the device's allocated peak, those live right after each of the
 * `nkeep` event indices `keep` (mh__layers_records). The analysis is
 * borrowed until mh__layers_free. */
int mh__layers_analyze(const struct mh__analysis *a, int device, const uint64_t *keep,
                       size_t nkeep, struct mh__layers **out);
void mh__layers_free(struct mh__layers *ly);

/* The allocated peak (from the lifetimes; equals the model's). */
uint64_t mh__layers_peak(const struct mh__layers *ly, uint64_t *index, int64_t *step);
/* Layers in first-seen order (borrowed). */
const struct mh__layer_stats *mh__layers_list(const struct mh__layers *ly, size_t *n);
/* The layer of a record of the lifetimes (-1 for another device or on
 * ENOMEM). */
int32_t mh__layers_layer_of(struct mh__layers *ly, const struct mh__alloc_rec *rec);
/* The records live at the peak or at the indices asked for (borrowed, in
 * allocation order, classified). */
const struct mh__alloc_rec *mh__layers_records(const struct mh__layers *ly, size_t *n);
/* Block bytes of the device live at the allocated peak, by category. */
const uint64_t *mh__layers_category_at_peak(const struct mh__layers *ly);
/* Each step's allocated peak (the highest of its passes) with its largest
 * layers, for the steps the model closed (borrowed). */
const struct mh__layer_step *mh__layers_steps(const struct mh__layers *ly, size_t *n);

/* A plan saving less than this share of the peak is no plan: the recompute
 * costs more than the memory is worth (a model already checkpointed). */
#define MH__PLAN_MIN_SHARE 0.01

/* Ranked plan: candidates by their single-layer reduction (largest first)
 * in order[0..*n); peak_after[i] = estimated peak with order[0..i]
 * checkpointed; *best = the smallest prefix length reaching 95 % of the
 * largest saving (0 if no candidate saves MH__PLAN_MIN_SHARE of the peak).
 * Made with one more pass over the file the first time; the arrays are
 * borrowed from the analysis. */
int mh__layers_plan(struct mh__layers *ly, const size_t **order, const uint64_t **peak_after,
                    size_t *n, size_t *best);
/* The estimated peak with the layers `layers[0..n)` checkpointed (from the
 * summaries the analysis keeps of each step, no pass over the file). */
int mh__layers_estimate(struct mh__layers *ly, const size_t *layers, size_t n, uint64_t *peak);
/* The recompute cost of checkpointing the layers `layers[0..n)`: their
 * share of the peak step's forward allocation volume (a proxy for forward
 * FLOPs). */
double mh__layers_recompute_share(const struct mh__layers *ly, const size_t *layers, size_t n);

#endif
