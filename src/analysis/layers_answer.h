/* layers_answer.h - the answer of `memhist layers` for one device, as the
 * printers (text, JSON) and every other output read it: the layers at the
 * allocated peak largest first, the ranked checkpointing plan with its
 * estimates, or why there is none, and each step's largest layers. Made
 * from the layers analysis (layers.h), which it owns. */
#ifndef MH_ANALYSIS_LAYERS_ANSWER_H
#define MH_ANALYSIS_LAYERS_ANSWER_H

#include "layers.h"

/* Why a device has no checkpointing plan, in the order they are told
 * apart. */
enum mh__no_plan {
    MH__NO_PLAN_NONE,      /* there is a plan */
    MH__NO_PLAN_COMPILED,  /* activations made in code torch.compile generated */
    MH__NO_PLAN_SMALL,     /* the most any prefix saves is under MH__PLAN_MIN_SHARE */
    MH__NO_PLAN_NO_SCOPES, /* no module scopes: no layer's backward is seen */
    MH__NO_PLAN_UNKNOWN,   /* no scopes and no steps: no memory is told to be activations */
    MH__NO_PLAN_NO_GAIN,   /* saved activations live at the peak, but no layer's recompute lowers it */
    MH__NO_PLAN_NOTHING,   /* no saved activation live at the peak */
    MH__NO_PLAN_COUNT
};

/* "compiled_code", "saving_under_1_percent", "no_module_scopes",
 * "unknown_categories", "no_gain", "no_saved_activations" (NULL for
 * MH__NO_PLAN_NONE): the names `layers --json` gives them. */
const char *mh__no_plan_name(int reason);

struct mh__layers_answer {
    int device;
    struct mh__layers *ly; /* owned */
    uint64_t peak, peak_index;
    int64_t peak_step;
    const uint64_t *category_at_peak; /* MH__CAT_COUNT block bytes live at the peak */
    const struct mh__layer_stats *layers; /* first-seen order */
    size_t nlayers;
    size_t *by_live;                  /* layer indices, largest live_at_peak first, then by name */
    /* the ranking of the candidates, each with the estimated peak when it
     * and those before it are checkpointed; the plan is its first `best` */
    const size_t *ranking;
    const uint64_t *peak_after;
    size_t nranking, best;
    uint64_t plan_peak;               /* estimated peak with the plan (the peak if none) */
    double recompute_share;           /* the plan's share of the forward allocation volume */
    uint64_t compiled_outside_plan;   /* activations live at the peak made by compiled code
                                       * in layers the plan leaves out */
    enum mh__no_plan none_because;     /* MH__NO_PLAN_NONE when best > 0 */
    uint64_t none_bytes;              /* what the reason is about: the largest saving, the
                                       * compiled activations, the activations or the unknown
                                       * bytes at the peak */
    const struct mh__layer_step *steps; /* each closed step's peak and largest layers */
    size_t nsteps;
};

struct mh__analysis;

/* The answer for `device` of a file opened as an analysis (one more pass
 * over the file). Returns 0 or a negative MH_E* code. */
int mh__layers_answer(const struct mh__analysis *a, int device, struct mh__layers_answer *out);
void mh__layers_answer_free(struct mh__layers_answer *ans);

#endif
