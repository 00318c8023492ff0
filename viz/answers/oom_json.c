/* oom_json.c - one OOM case as JSON (oom_json.h): the same object for
 * `memhist oom --json` and `memhist view`'s OOM cards. */
#include "oom_json.h"
#include "layers.h"
#include "oom_explain.h"
#include "whatif_check.h"

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

static void json_suggestions(struct mh__json *j, const struct mh__oom_case *c)
{
    size_t nl;
    const struct mh__layer_stats *st = mh__layers_list(c->ly, &nl);
    mh__json_kv_double(j, "replay_match_percent", c->replay_match, 1);
    mh__json_kv_double(j, "replay_checked_from_percent", MH__WHATIF_CHECKED_MATCH, 1);
    mh__json_kv_bool(j, "replay_checked", !c->estimates);
    mh__json_kv_uint(j, "replay_seeded_segments", c->baseline.seeded_segments);
    mh__json_kv_uint(j, "replay_seeded_blocks", c->baseline.seeded_blocks);
    mh__json_kv_uint(j, "replay_seeded_unknown_sizes", c->baseline.seeded_unknown);
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
        mh__json_kv_uint(j, "peak_allocated", s->peak_allocated);
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
    mh__json_kv_uint(j, "peak_allocated", c->peak_allocated);
    mh__json_kv_uint(j, "estimated_peak_allocated", c->plan_peak_after);
    mh__json_kv_uint(j, "freed_at_oom", c->plan_freed);
    mh__json_kv_bool(j, "request_would_fit", c->plan_fits);
    mh__json_end_object(j);
}

static void json_live(struct mh__json *j, const struct mh__oom_case *c,
                      const struct mh__oom_json_opts *o)
{
    mh__json_kv_uint(j, "live_bytes", c->live_bytes);
    mh__json_kv_uint(j, "live_blocks", c->live_count);
    mh__json_key(j, "live_by_layer");
    mh__json_begin_array(j);
    for (size_t i = 0; i < c->nlayers && i < o->top; i++) {
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
        o->stack(o->ctx, j, c->stacks[i].stack);
        mh__json_kv_uint(j, "bytes", c->stacks[i].bytes);
        mh__json_kv_uint(j, "count", c->stacks[i].count);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
}

void mh__oom_case_json(struct mh__json *j, const struct mh__oom_case *c,
                       const struct mh__oom_json_opts *o)
{
    const struct mh_oom_info *x = &c->oom;
    mh__json_begin_object(j);
    mh__json_kv_int(j, "device", c->device);
    mh__json_kv_string(j, "kind", c->verdict == MH__OOM_VERDICT_NONE ? "peak" : "oom");
    mh__json_kv_uint(j, "time_ns", x->time_ns);
    mh__json_kv_int(j, "step", x->step);
    mh__json_kv_uint(j, "event_index", x->event_index);
    mh__json_kv_uint(j, "request", x->request);
    mh__json_kv_string(j, "pool", c->small_pool ? "small" : "large");
    mh__json_kv_uint(j, "stream", x->stream);
    mh__json_kv_uint(j, "capacity", c->capacity);
    mh__json_kv_bool(j, "capacity_estimated", c->capacity_estimated);
    mh__json_kv_uint(j, "device_free", x->device_free);
    mh__json_kv_uint(j, "reserved", x->reserved);
    mh__json_kv_uint(j, "allocated", x->allocated);
    mh__json_kv_uint(j, "reserved_unallocated", x->reserved - x->allocated);
    mh__json_kv_uint(j, "outside_allocator", c->outside);
    mh__json_kv_uint(j, "largest_free_same_stream", x->largest_free_same_stream);
    mh__json_kv_uint(j, "largest_free_any", x->largest_free_any);
    mh__json_kv_string(j, "verdict", mh__oom_verdict_name(c->verdict));
    json_free_blocks(j, c);
    json_live(j, c, o);
    json_suggestions(j, c);
    mh__json_end_object(j);
}
