/* view_answers.c - the OOM cards and the layers answer of one device in
 * `memhist view`'s JSON: each OOM case's request, pool, free blocks,
 * verdict, live layers and stacks and checked suggestions (oom_explain.h);
 * the layers at the peak, the checkpointing plan and the estimated peak
 * after each prefix of the ranking, the K-curve (layers_answer.h). */
#include "analysis.h"
#include "layers_answer.h"
#include "oom_explain.h"
#include "oom_json.h"
#include "view_int.h"

static void json_stack_id(void *ctx, struct mh__json *j, uint32_t stack)
{
    struct mh__vdev *v = ctx;
    mh__json_kv_uint(j, "label", mh__vstr_stack(v->s, v->r, stack));
}

void mh__vdev_oom_case(struct mh__json *j, struct mh__vdev *v, const struct mh__oom_case *c)
{
    const struct mh__oom_json_opts o = {10, json_stack_id, v};
    mh__oom_case_json(j, c, &o);
}

static void json_layer(struct mh__json *j, const struct mh__layer_stats *l)
{
    mh__json_begin_object(j);
    mh__json_kv_string(j, "name", l->name);
    mh__json_kv_uint(j, "live_at_peak", l->live_at_peak);
    mh__json_key(j, "by_category");
    mh__json_begin_object(j);
    for (int c = 0; c < MH__CAT_COUNT; c++)
        if (l->by_category[c])
            mh__json_kv_uint(j, mh__category_name(c), l->by_category[c]);
    mh__json_end_object(j);
    mh__json_kv_uint(j, "saved_at_peak", l->saved_at_peak);
    mh__json_kv_uint(j, "reduction", l->reduction);
    mh__json_kv_bool(j, "candidate", l->candidate);
    mh__json_kv_bool(j, "compiled", l->compiled);
    mh__json_end_object(j);
}

void mh__vdev_layers(struct mh__json *j, const struct mh__layers_answer *la)
{
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "peak", la->peak);
    mh__json_kv_uint(j, "peak_index", la->peak_index);
    mh__json_kv_int(j, "peak_step", la->peak_step);
    mh__json_key(j, "layers"); /* largest live at the peak first */
    mh__json_begin_array(j);
    for (size_t i = 0; i < la->nlayers; i++)
        json_layer(j, &la->layers[la->by_live[i]]);
    mh__json_end_array(j);
    mh__json_key(j, "k_curve"); /* [layer added, estimated peak with it and those before] */
    mh__json_begin_array(j);
    for (size_t i = 0; i < la->nranking; i++) {
        mh__json_begin_array(j);
        mh__json_string(j, la->layers[la->ranking[i]].name);
        mh__json_uint(j, la->peak_after[i]);
        mh__json_end_array(j);
    }
    mh__json_end_array(j);
    mh__json_kv_uint(j, "plan_layers", la->best);
    mh__json_kv_uint(j, "plan_peak", la->plan_peak);
    mh__json_kv_double(j, "recompute_share", la->recompute_share, 4);
    mh__json_kv_string(j, "no_plan", mh__no_plan_name(la->none_because));
    mh__json_kv_uint(j, "no_plan_bytes", la->none_bytes);
    mh__json_end_object(j);
}
