/* view_device.c - one device's answers in `memhist view`'s JSON, as the
 * other commands print them: report's peaks, live groups and categories at
 * the peak, per-step table, fragmentation trend with its what-if verdict and
 * growth (device_report.h); the layers, checkpointing plan and its K-curve
 * (layers_answer.h); the OOM cases with their checked suggestions
 * (oom_explain.h). Only writes what those structs hold. */
#include <string.h>

#include "analysis.h"
#include "layers_answer.h"
#include "oom_explain.h"
#include "stacks.h"
#include "view_int.h"

static void json_peak(struct mh__json *j, const char *key, const struct mh_peak *p)
{
    mh__json_key(j, key);
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "value", p->value);
    mh__json_kv_uint(j, "time_ns", p->time_ns);
    mh__json_kv_int(j, "step", p->step);
    mh__json_kv_uint(j, "index", p->event_index);
    mh__json_end_object(j);
}

static void json_categories(struct mh__json *j, const char *key, const uint64_t *bytes)
{
    mh__json_key(j, key);
    mh__json_begin_object(j);
    for (int c = 0; c < MH__CAT_COUNT; c++)
        mh__json_kv_uint(j, mh__category_name(c), bytes[c]);
    mh__json_end_object(j);
}

static void json_top(struct mh__json *j, struct mh__vdev *v, const struct mh__device_report *d)
{
    mh__json_key(j, "top_at_peak");
    mh__json_begin_array(j);
    for (size_t i = 0; i < d->ntop; i++) {
        mh__json_begin_object(j);
        mh__json_kv_uint(j, "bytes", d->top[i].bytes);
        mh__json_kv_uint(j, "count", d->top[i].count);
        mh__json_kv_uint(j, "label", mh__vstr_stack(v->s, v->r, d->top[i].stack));
        mh__json_key(j, "frames");
        mh__vstr_frames(v->s, j, v->r, d->top[i].stack);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
}

static void json_trend(struct mh__json *j, const struct mh__frag_trend *t)
{
    mh__json_key(j, "fragmentation_trend");
    if (t->steps < 2) {
        mh__json_null(j);
        return;
    }
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "steps", t->steps);
    mh__json_kv_int(j, "first_step", t->first_step);
    mh__json_kv_int(j, "last_step", t->last_step);
    mh__json_kv_int(j, "reserved_growth", t->reserved_growth);
    mh__json_kv_int(j, "allocated_growth", t->allocated_growth);
    mh__json_kv_bool(j, "fragmentation", t->fragmenting);
    mh__json_key(j, "whatif_expandable_peak_reserved");
    if (t->whatif_ok)
        mh__json_uint(j, t->whatif_peak_reserved);
    else
        mh__json_null(j);
    mh__json_key(j, "whatif_checked");
    if (t->whatif_ok && t->fragmenting)
        mh__json_bool(j, t->whatif_checked);
    else
        mh__json_null(j);
    mh__json_kv_double(j, "baseline_match_percent", t->baseline_match, 1);
    mh__json_end_object(j);
}

static void json_growth(struct mh__json *j, struct mh__vdev *v, const struct mh__device_report *d)
{
    mh__json_key(j, "growth");
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "window_steps", d->growth_window);
    mh__json_key(j, "entries");
    mh__json_begin_array(j);
    for (size_t i = 0; i < d->ngrowth; i++) {
        const struct mh__growth_entry *e = &d->growth[i];
        mh__json_begin_object(j);
        mh__json_kv_uint(j, "label", mh__vstr_stack(v->s, v->r, e->stack));
        mh__json_kv_string(j, "module", e->module ? mh_reader_string(v->r, e->module) : NULL);
        mh__json_kv_uint(j, "bytes_per_step", e->bytes_per_step);
        mh__json_kv_uint(j, "live_bytes", e->live_bytes);
        mh__json_kv_int(j, "first_step", e->first_step);
        mh__json_kv_uint(j, "steps_grown", e->steps_grown);
        mh__json_kv_uint(j, "steps", e->steps);
        mh__json_key(j, "frames");
        mh__vstr_frames(v->s, j, v->r, e->stack);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
    mh__json_end_object(j);
}

static void json_step(struct mh__json *j, const struct mh_step_stats *s)
{
    mh__json_begin_array(j);
    mh__json_int(j, s->step);
    mh__json_uint(j, s->begin_ns);
    mh__json_uint(j, s->end_ns);
    mh__json_uint(j, s->peak_allocated);
    mh__json_uint(j, s->peak_reserved);
    mh__json_uint(j, s->end_allocated);
    mh__json_uint(j, s->end_reserved);
    mh__json_double(j, s->fragmentation, 4);
    mh__json_uint(j, s->inactive_split_at_reserved_peak);
    mh__json_uint(j, s->largest_free_at_reserved_peak);
    mh__json_uint(j, s->segments_at_end);
    mh__json_uint(j, s->segment_allocs);
    mh__json_uint(j, s->segment_frees);
    mh__json_uint(j, s->retries);
    mh__json_uint(j, s->ooms);
    mh__json_end_array(j);
}

static void json_steps(struct mh__json *j, const struct mh_model *m, int device, size_t max)
{
    struct mh_step_stats s;
    mh__json_key(j, "step_columns");
    mh__json_raw(j, "[\"step\",\"begin_ns\",\"end_ns\",\"peak_allocated\",\"peak_reserved\","
                    "\"end_allocated\",\"end_reserved\",\"fragmentation\",\"inactive_split\","
                    "\"largest_free\",\"segments\",\"segment_allocs\",\"segment_frees\","
                    "\"retries\",\"ooms\"]");
    mh__json_key(j, "setup");
    if (mh_model_setup(m, device, &s) == 0 && s.peak_reserved > 0)
        json_step(j, &s);
    else
        mh__json_null(j);
    mh__json_key(j, "tail");
    if (mh_model_tail(m, device, &s) == 0)
        json_step(j, &s);
    else
        mh__json_null(j);
    size_t n = mh_model_step_count(m, device);
    mh__json_kv_uint(j, "step_count", n);
    mh__json_key(j, "steps");
    mh__json_begin_array(j);
    for (size_t i = 0; i < n && i < max; i++)
        if (mh_model_step(m, device, i, &s) == 0)
            json_step(j, &s);
    mh__json_end_array(j);
}

static void json_ooms(struct mh__json *j, struct mh__vdev *v, const struct mh__oom_cases *cs)
{
    mh__json_key(j, "oom_cases");
    mh__json_begin_array(j);
    for (size_t i = 0; cs && i < cs->n; i++)
        mh__vdev_oom_case(j, v, &cs->c[i]);
    mh__json_end_array(j);
}

void mh__vdev_json(struct mh__json *j, struct mh__vdev *v, const struct mh__device_report *d,
                   const struct mh__layers_answer *la, const struct mh__oom_cases *cs)
{
    const struct mh_model *m = v->a->rp.model;
    mh__json_kv_int(j, "device", d->device);
    mh__json_kv_string(j, "name", d->info.name ? d->info.name : "");
    mh__json_kv_uint(j, "total_bytes", d->info.total_bytes);
    json_peak(j, "peak_allocated", &d->peak_allocated);
    json_peak(j, "peak_reserved", &d->peak_reserved);
    mh__json_kv_uint(j, "live_at_peak_bytes", d->live_at_peak_bytes);
    mh__json_kv_uint(j, "live_at_peak_count", d->live_at_peak_count);
    mh__json_kv_uint(j, "final_allocated", d->final.allocated);
    mh__json_kv_uint(j, "final_reserved", d->final.reserved);
    mh__json_kv_uint(j, "peak_driver_outside", d->peak_driver_outside);
    json_categories(j, "category_at_peak", d->category_at_peak);
    json_top(j, v, d);
    json_trend(j, &d->trend);
    json_growth(j, v, d);
    json_steps(j, m, d->device, v->o->max_steps_table);
    json_ooms(j, v, cs);
    mh__json_key(j, "layers");
    if (la)
        mh__vdev_layers(j, la);
    else
        mh__json_null(j);
}
