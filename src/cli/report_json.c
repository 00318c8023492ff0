/* report_json.c - the JSON form of `memhist report` (see device_report.h).
 *
 * One object per file in the output's "files" list (cmd_report.c writes the
 * head and the worst rank): file, source, events, dropped, damaged, devices
 * (a list), and anomalies. Per device: device, name, total_bytes, peak_allocated(+_time_ns,
 * _step), peak_reserved(+_time_ns, _step), final, top_at_peak, category_at_peak,
 * fragmentation_trend, growth, setup and tail (when present), steps, ooms. */
#include <ctype.h>
#include <string.h>

#include "printers.h"
#include "json.h"

/* JSON key of an anomaly: its enum name without the prefix, lower case. */
static const char *anomaly_key(int a, char buf[48])
{
    static const char *const names[] = {
#define MH__X_ANOM_NAME(name, value, text) [value] = #name,
        MH_ANOMALY_LIST(MH__X_ANOM_NAME)
#undef MH__X_ANOM_NAME
    };
    const char *src = names[a] + strlen("MH_ANOM_");
    size_t i = 0;
    for (; src[i] && i < 47; i++)
        buf[i] = (char)tolower((unsigned char)src[i]);
    buf[i] = '\0';
    return buf;
}

static void json_frames(struct mh__json *j, const struct mh_reader *r, uint32_t stack)
{
    const uint32_t *frames;
    size_t n = 0;
    mh__json_begin_array(j);
    if (stack && mh_reader_stack(r, stack, &frames, &n) == 0) {
        for (size_t i = 0; i < n; i++) {
            struct mh_frame f;
            if (mh_reader_frame(r, frames[i], &f) != 0)
                continue;
            mh__json_begin_object(j);
            mh__json_kv_string(j, "filename", f.file);
            mh__json_kv_uint(j, "line", f.line);
            mh__json_kv_string(j, "name", f.func);
            mh__json_end_object(j);
        }
    }
    mh__json_end_array(j);
}

static void json_top(struct mh__json *j, const struct mh__replay *rp, const struct mh__device_report *d)
{
    mh__json_key(j, "top_at_peak");
    mh__json_begin_array(j);
    for (size_t i = 0; i < d->ntop; i++) {
        mh__json_begin_object(j);
        mh__json_kv_uint(j, "bytes", d->top[i].bytes);
        mh__json_kv_uint(j, "count", d->top[i].count);
        mh__json_key(j, "frames");
        json_frames(j, rp->reader, d->top[i].stack);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
}

static void json_step(struct mh__json *j, const struct mh_step_stats *st);

/* "setup" (the period before step 0, when a step marker opened it; not in a
 * --steps window) and "steps". */
static void json_steps(struct mh__json *j, const struct mh__replay *rp, int device,
                       const struct mh__window *w)
{
    struct mh_step_stats s;
    if (!w->has_steps && mh_model_setup(rp->model, device, &s) == 0 && s.peak_reserved > 0) {
        mh__json_key(j, "setup");
        json_step(j, &s);
    }
    if (!w->has_steps && mh_model_tail(rp->model, device, &s) == 0) {
        mh__json_key(j, "tail");
        json_step(j, &s);
    }
    mh__json_key(j, "steps");
    mh__json_begin_array(j);
    for (size_t i = 0; i < mh_model_step_count(rp->model, device); i++)
        if (mh_model_step(rp->model, device, i, &s) == 0 &&
            !(w->has_steps && (s.step < w->step_lo || s.step > w->step_hi)))
            json_step(j, &s);
    mh__json_end_array(j);
}

static void json_step(struct mh__json *j, const struct mh_step_stats *s)
{
    mh__json_begin_object(j);
    mh__json_kv_int(j, "step", s->step);
    mh__json_kv_uint(j, "begin_ns", s->begin_ns);
    mh__json_kv_uint(j, "end_ns", s->end_ns);
    mh__json_kv_uint(j, "peak_allocated", s->peak_allocated);
    mh__json_kv_uint(j, "peak_reserved", s->peak_reserved);
    mh__json_kv_uint(j, "end_allocated", s->end_allocated);
    mh__json_kv_uint(j, "end_reserved", s->end_reserved);
    mh__json_kv_double(j, "fragmentation", s->fragmentation, 6);
    mh__json_kv_uint(j, "allocated_at_reserved_peak", s->allocated_at_reserved_peak);
    mh__json_kv_uint(j, "inactive_split_at_reserved_peak", s->inactive_split_at_reserved_peak);
    mh__json_kv_uint(j, "largest_free_at_reserved_peak", s->largest_free_at_reserved_peak);
    mh__json_kv_uint(j, "segments", s->segments_at_end);
    mh__json_kv_uint(j, "segment_allocs", s->segment_allocs);
    mh__json_kv_uint(j, "segment_frees", s->segment_frees);
    mh__json_kv_uint(j, "retries", s->retries);
    mh__json_kv_uint(j, "ooms", s->ooms);
    mh__json_end_object(j);
}

static void json_ooms(struct mh__json *j, const struct mh__replay *rp, int device)
{
    mh__json_key(j, "ooms");
    mh__json_begin_array(j);
    for (size_t i = 0; i < mh_model_oom_count(rp->model); i++) {
        struct mh_oom_info o;
        if (mh_model_oom(rp->model, i, &o) != 0 || o.device != device)
            continue;
        mh__json_begin_object(j);
        mh__json_kv_uint(j, "time_ns", o.time_ns);
        mh__json_kv_int(j, "step", o.step);
        mh__json_kv_uint(j, "stream", o.stream);
        mh__json_kv_uint(j, "requested", o.request);
        mh__json_kv_uint(j, "device_free", o.device_free);
        mh__json_kv_uint(j, "allocated", o.allocated);
        mh__json_kv_uint(j, "reserved", o.reserved);
        mh__json_kv_uint(j, "reserved_unallocated", o.reserved - o.allocated);
        mh__json_kv_uint(j, "largest_free_block", o.largest_free_same_stream);
        mh__json_kv_uint(j, "largest_free_block_any_stream", o.largest_free_any);
        mh__json_key(j, "frames");
        json_frames(j, rp->reader, o.stack);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
}

static void json_final(struct mh__json *j, const struct mh_mem_stats *s)
{
    mh__json_key(j, "final");
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "allocated", s->allocated);
    mh__json_kv_uint(j, "reserved", s->reserved);
    mh__json_kv_uint(j, "active", s->active);
    mh__json_kv_uint(j, "requested", s->requested);
    mh__json_kv_uint(j, "segments", s->segments);
    mh__json_kv_uint(j, "driver_outside", s->driver_outside);
    mh__json_end_object(j);
}

static void json_device(struct mh__json *j, const struct mh__replay *rp, const struct mh__window *w,
                        const struct mh__device_report *d)
{
    mh__json_begin_object(j);
    mh__json_kv_int(j, "device", d->device);
    mh__json_kv_string(j, "name", d->info.name ? d->info.name : "");
    mh__json_kv_uint(j, "total_bytes", d->info.total_bytes);
    mh__json_kv_uint(j, "peak_allocated", d->peak_allocated.value);
    mh__json_kv_uint(j, "peak_allocated_time_ns", d->peak_allocated.time_ns);
    mh__json_kv_int(j, "peak_allocated_step", d->peak_allocated.step);
    mh__json_kv_uint(j, "peak_reserved", d->peak_reserved.value);
    mh__json_kv_uint(j, "peak_reserved_time_ns", d->peak_reserved.time_ns);
    mh__json_kv_int(j, "peak_reserved_step", d->peak_reserved.step);
    mh__json_kv_uint(j, "live_at_peak_bytes", d->live_at_peak_bytes);
    mh__json_kv_uint(j, "live_at_peak_count", d->live_at_peak_count);
    json_final(j, &d->final);
    json_top(j, rp, d);
    mh__json_key(j, "category_at_peak");
    mh__json_begin_object(j);
    for (int c = 0; c < MH__CAT_COUNT; c++)
        mh__json_kv_uint(j, mh__category_name(c), d->category_at_peak[c]);
    mh__json_end_object(j);
    mh__json_key(j, "fragmentation_trend");
    if (d->trend.steps < 2) {
        mh__json_null(j);
    } else {
        mh__json_begin_object(j);
        mh__json_kv_int(j, "reserved_growth", d->trend.reserved_growth);
        mh__json_kv_int(j, "allocated_growth", d->trend.allocated_growth);
        mh__json_kv_bool(j, "fragmentation", d->trend.fragmenting);
        mh__json_key(j, "whatif_expandable_peak_reserved");
        if (d->trend.whatif_ok)
            mh__json_uint(j, d->trend.whatif_peak_reserved);
        else
            mh__json_null(j);
        mh__json_key(j, "whatif_checked");
        if (d->trend.whatif_ok && d->trend.fragmenting)
            mh__json_bool(j, d->trend.whatif_checked);
        else
            mh__json_null(j);
        mh__json_end_object(j);
    }
    mh__json_key(j, "growth");
    mh__growth_json(j, rp->reader, d, 10);
    json_steps(j, rp, d->device, w);
    json_ooms(j, rp, d->device);
    mh__json_end_object(j);
}

void mh__report_print_json(struct mh__json *j, const struct mh__replay *rp,
                           const struct mh__device_report *devs, size_t ndev,
                           const struct mh__window *steps)
{
    mh__json_begin_object(j);
    mh__json_kv_string(j, "file", rp->path);
    mh__json_kv_string(j, "source", mh_reader_meta(rp->reader, "source"));
    mh__json_kv_uint(j, "events", rp->summary.events);
    mh__json_kv_uint(j, "dropped", rp->summary.dropped);
    mh__json_kv_bool(j, "damaged", rp->read_error != 0);
    mh__json_key(j, "devices");
    mh__json_begin_array(j);
    for (size_t i = 0; i < ndev; i++)
        json_device(j, rp, steps, &devs[i]);
    mh__json_end_array(j);
    mh__json_key(j, "anomalies");
    mh__json_begin_object(j);
    for (int a = 1; a < MH_ANOM_COUNT; a++) {
        char key[48];
        mh__json_kv_uint(j, anomaly_key(a, key), mh_model_anomaly_count(rp->model, a));
    }
    mh__json_end_object(j);
    mh__json_end_object(j);
}
