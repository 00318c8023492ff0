/* view_answers.c - the OOM cards and the layers answer of one device in
 * `memhist view`'s JSON: each OOM case's request, pool, free blocks,
 * verdict, live layers and stacks and checked suggestions (oom_explain.h);
 * the layers at the peak, the checkpointing plan and the estimated peak
 * after each prefix of the ranking, the K-curve (layers_answer.h). */
#include "analysis.h"
#include "layers_answer.h"
#include "oom_explain.h"
#include "view_int.h"

static void json_free_blocks(struct mh__json *j, const struct mh__oom_case *c)
{
    mh__json_key(j, "free_blocks");
    mh__json_begin_array(j);
    for (size_t i = 0; i < c->nfree; i++) {
        mh__json_begin_object(j);
        mh__json_kv_uint(j, "stream", c->free[i].stream);
        mh__json_kv_string(j, "pool", c->free[i].small_pool ? "small" : "large");
        mh__json_kv_uint(j, "largest", c->free[i].largest);
        mh__json_kv_uint(j, "total", c->free[i].total);
        mh__json_kv_uint(j, "blocks", c->free[i].blocks);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
}

static void json_live(struct mh__json *j, struct mh__vdev *v, const struct mh__oom_case *c)
{
    mh__json_kv_uint(j, "live_bytes", c->live_bytes);
    mh__json_kv_uint(j, "live_blocks", c->live_count);
    mh__json_key(j, "live_by_layer");
    mh__json_begin_array(j);
    for (size_t i = 0; i < c->nlayers && i < 10; i++) {
        mh__json_begin_object(j);
        mh__json_kv_string(j, "layer", c->layers[i].name);
        mh__json_kv_uint(j, "bytes", c->layers[i].bytes);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
    mh__json_key(j, "live_by_stack");
    mh__json_begin_array(j);
    for (size_t i = 0; i < c->nstacks; i++) {
        mh__json_begin_object(j);
        mh__json_kv_uint(j, "label", mh__vstr_stack(v->s, v->r, c->stacks[i].stack));
        mh__json_kv_uint(j, "bytes", c->stacks[i].bytes);
        mh__json_kv_uint(j, "count", c->stacks[i].count);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
}

static void json_suggestions(struct mh__json *j, const struct mh__oom_case *c)
{
    size_t nl;
    const struct mh__layer_stats *st = mh__layers_list(c->ly, &nl);
    mh__json_kv_double(j, "replay_match_percent", c->replay_match, 1);
    mh__json_kv_double(j, "replay_checked_from_percent", MH__WHATIF_CHECKED_MATCH, 1);
    mh__json_kv_bool(j, "replay_checked", !c->estimates);
    mh__json_key(j, "suggestions");
    mh__json_begin_array(j);
    for (size_t i = 0; i < c->nsugg; i++) {
        const struct mh__suggestion *s = &c->sugg[i];
        mh__json_begin_object(j);
        mh__json_kv_string(j, "setting", s->setting);
        mh__json_kv_bool(j, "checked", s->ok && !c->estimates);
        mh__json_kv_bool(j, "in_effect", s->in_effect);
        mh__json_kv_bool(j, "oom", s->ooms > 0);
        mh__json_kv_uint(j, "peak_reserved", s->peak_reserved);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
    mh__json_key(j, "checkpoint");
    mh__json_begin_object(j);
    mh__json_key(j, "layers");
    mh__json_begin_array(j);
    for (size_t i = 0; i < c->nplan; i++)
        mh__json_string(j, st[c->plan[i]].name);
    mh__json_end_array(j);
    mh__json_kv_uint(j, "freed_at_oom", c->plan_freed);
    mh__json_kv_bool(j, "request_would_fit", c->plan_fits);
    mh__json_end_object(j);
}

void mh__vdev_oom_case(struct mh__json *j, struct mh__vdev *v, const struct mh__oom_case *c)
{
    const struct mh_oom_info *x = &c->oom;
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "time_ns", x->time_ns);
    mh__json_kv_int(j, "step", x->step);
    mh__json_kv_uint(j, "index", x->event_index);
    mh__json_kv_uint(j, "request", x->request);
    mh__json_kv_string(j, "pool", c->small_pool ? "small" : "large");
    mh__json_kv_uint(j, "stream", x->stream);
    mh__json_kv_uint(j, "capacity", c->capacity);
    mh__json_kv_bool(j, "capacity_estimated", c->capacity_estimated);
    mh__json_kv_uint(j, "device_free", x->device_free);
    mh__json_kv_uint(j, "reserved", x->reserved);
    mh__json_kv_uint(j, "allocated", x->allocated);
    mh__json_kv_uint(j, "outside_allocator", c->outside);
    mh__json_kv_uint(j, "largest_free_same_stream", x->largest_free_same_stream);
    mh__json_kv_uint(j, "largest_free_any", x->largest_free_any);
    mh__json_kv_string(j, "verdict", mh__oom_verdict_name(c->verdict));
    json_free_blocks(j, c);
    json_live(j, v, c);
    json_suggestions(j, c);
    mh__json_end_object(j);
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
