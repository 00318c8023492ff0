/* layers_answer.c - the answer of `memhist layers` for one device (see
 * layers_answer.h): the layers analysed, ordered by what they hold at the
 * peak, the plan taken from the ranking, and the reason when there is
 * none. Owns the analysis and the order. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "analysis.h"
#include "layers_answer.h"

const char *mh__no_plan_name(int reason)
{
    static const char *const names[MH__NO_PLAN_COUNT] = {
        NULL,        "compiled_code", "saving_under_1_percent", "no_module_scopes",
        "unknown_categories", "no_gain", "no_saved_activations"};
    return reason > 0 && reason < MH__NO_PLAN_COUNT ? names[reason] : NULL;
}

/* A layer's sort key: largest live bytes first, then by name. */
struct by_live {
    uint64_t live;
    const char *name;
    size_t layer;
};

static int by_live_desc(const void *a, const void *b)
{
    const struct by_live *x = a, *y = b;
    if (x->live != y->live)
        return x->live < y->live ? 1 : -1;
    return strcmp(x->name, y->name);
}

static int order_by_live(struct mh__layers_answer *ans)
{
    size_t n = ans->nlayers;
    struct by_live *k = malloc((n ? n : 1) * sizeof *k);
    ans->by_live = malloc((n ? n : 1) * sizeof *ans->by_live);
    if (!k || !ans->by_live) {
        free(k);
        return MH_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        k[i] = (struct by_live){ans->layers[i].live_at_peak, ans->layers[i].name, i};
    qsort(k, n, sizeof *k, by_live_desc);
    for (size_t i = 0; i < n; i++)
        ans->by_live[i] = k[i].layer;
    free(k);
    return 0;
}

/* Activation bytes live at the peak in layers made by compiled code, but
 * for the ranking's first `planned` layers. */
static uint64_t compiled_activations(const struct mh__layers_answer *ans, size_t planned)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < ans->nlayers; i++) {
        size_t k = 0;
        while (k < planned && ans->ranking[k] != i)
            k++;
        if (k == planned && ans->layers[i].compiled)
            bytes += ans->layers[i].by_category[MH__CAT_ACTIVATION];
    }
    return bytes;
}

static enum mh__no_plan no_plan_reason(const struct mh__analysis *a,
                                      const struct mh__layers_answer *ans, uint64_t *bytes)
{
    uint64_t lowest = ans->peak;
    for (size_t k = 0; k < ans->nranking; k++)
        if (ans->peak_after[k] < lowest)
            lowest = ans->peak_after[k];
    if ((*bytes = compiled_activations(ans, 0)) > 0)
        return MH__NO_PLAN_COMPILED;
    if ((*bytes = ans->peak - lowest) > 0)
        return MH__NO_PLAN_SMALL;
    const uint64_t *kinds = a->rp.summary.events_by_kind;
    int scopes = kinds[MH_EV_SCOPE_ENTER] > 0, steps = kinds[MH_EV_STEP_END] > 0;
    if ((*bytes = ans->category_at_peak[MH__CAT_ACTIVATION]) > 0 && !scopes)
        return MH__NO_PLAN_NO_SCOPES;
    if (!*bytes && !scopes && !steps && (*bytes = ans->category_at_peak[MH__CAT_UNKNOWN]) > 0)
        return MH__NO_PLAN_UNKNOWN;
    for (size_t i = 0; i < ans->nlayers; i++)
        if (ans->layers[i].saved_at_peak)
            return MH__NO_PLAN_NO_GAIN;
    return MH__NO_PLAN_NOTHING;
}

static int decide(const struct mh__analysis *a, struct mh__layers_answer *ans)
{
    int rc = mh__layers_plan(ans->ly, &ans->ranking, &ans->peak_after, &ans->nranking, &ans->best);
    if (rc < 0)
        return rc;
    ans->plan_peak = ans->best ? ans->peak_after[ans->best - 1] : ans->peak;
    ans->recompute_share = mh__layers_recompute_share(ans->ly, ans->ranking, ans->best);
    ans->compiled_outside_plan = compiled_activations(ans, ans->best);
    ans->none_because = ans->best ? MH__NO_PLAN_NONE : no_plan_reason(a, ans, &ans->none_bytes);
    return 0;
}

int mh__layers_answer(const struct mh__analysis *a, int device, struct mh__layers_answer *out)
{
    memset(out, 0, sizeof *out);
    out->device = device;
    int rc = mh__layers_analyze(a, device, NULL, 0, &out->ly);
    if (rc < 0)
        return rc;
    out->peak = mh__layers_peak(out->ly, &out->peak_index, &out->peak_step);
    out->category_at_peak = mh__layers_category_at_peak(out->ly);
    out->layers = mh__layers_list(out->ly, &out->nlayers);
    out->steps = mh__layers_steps(out->ly, &out->nsteps);
    if ((rc = order_by_live(out)) < 0 || (rc = decide(a, out)) < 0)
        mh__layers_answer_free(out);
    return rc;
}

void mh__layers_answer_free(struct mh__layers_answer *ans)
{
    mh__layers_free(ans->ly);
    free(ans->by_live);
    memset(ans, 0, sizeof *ans);
}
