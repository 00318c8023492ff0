/* trace_pfevents.c - one .memhist event -> Perfetto TrackEvents (the write
 * pass of trace_pftrace.c), the same choices as the JSON's trace_events.c:
 * the window and device filter, counter samples merged per device and
 * microsecond with the model's values, flows only where both ends are in
 * the window, slices clipped to the window.
 *
 * Slices are begin and end events on one track, so a viewer nests them by
 * their order: op ranges and steps are begun when they begin (or when the
 * window starts, for those open before it; outer ones first) and ended when
 * they end, in the file's order; device activity and API calls, whose
 * records carry their duration, are written as a begin and an end at once,
 * API calls on a track of their own under their thread (a call that
 * overlaps an op's end on another clock cannot unbalance the op's track).
 * A memory counter sample writes only the series that changed since the
 * device's previous sample; the viewer holds a counter's value until the
 * next. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "memhist/model.h"
#include "grow.h"
#include "stacks.h"
#include "trace_pf.h"

/* Starts the packet and its TrackEvent; te_end closes both. */
static struct mh__pb *te_begin(struct mh__trace *t, uint64_t ns, unsigned type, uint64_t track)
{
    mh__pf_packet(t, ns);
    struct mh__pb *p = &t->pf->pb;
    mh__pb_begin(p, PF_PKT_TRACK_EVENT);
    mh__pb_uint(p, PF_TE_TYPE, type);
    mh__pf_event_track(t, track);
    return p;
}

static void te_end(struct mh__trace *t)
{
    mh__pb_end(&t->pf->pb);
    mh__pf_packet_end(t);
}

static void slice_end(struct mh__trace *t, uint64_t ns, uint64_t track)
{
    te_begin(t, ns, PF_TYPE_SLICE_END, track);
    te_end(t);
}

static uint64_t flow_id(const struct mh__trace *t, uint32_t correlation)
{
    return (uint64_t)(t->pf->file_index + 1) << 32 | correlation;
}

/* ---- memory counters ------------------------------------------------------------------- */
static void write_sample(struct mh__trace *t, int device, const struct mh__counter_sample *c)
{
    struct mh__pftrace *pf = t->pf;
    const uint64_t v[PF_SERIES_COUNT] = {c->st.allocated, c->st.reserved, c->st.driver_outside,
                                         c->st.reserved + c->st.driver_outside};
    for (int s = 0; s < PF_SERIES_COUNT; s++) {
        if (pf->have_written[device] && pf->written_value[device][s] == v[s])
            continue;
        uint64_t track = mh__pf_track(t, PF_TRACK_COUNTER, device, (uint64_t)s);
        struct mh__pb *p = te_begin(t, c->time_ns, PF_TYPE_COUNTER, track);
        mh__pb_int(p, PF_TE_COUNTER_VALUE, (int64_t)v[s]);
        te_end(t);
        pf->written_value[device][s] = v[s];
    }
    pf->have_written[device] = 1;
}

static void write_counter(struct mh__trace *t, int device)
{
    struct mh__counter_sample s[3];
    size_t n = mh__counter_take(&t->counters[device], s);
    for (size_t i = 0; i < n; i++)
        write_sample(t, device, &s[i]);
}

static void counter(struct mh__trace *t, int device, uint64_t ns)
{
    if (device < 0 || device >= MH__TRACE_MAX_DEVICES)
        return;
    struct mh__counter_state *c = &t->counters[device];
    int64_t us = (int64_t)(ns - t->base_ns) / 1000;
    if (mh__counter_ends(c, us))
        write_counter(t, device);
    struct mh_mem_stats st;
    if (mh_model_stats(t->m, device, &st) != 0)
        memset(&st, 0, sizeof st);
    mh__counter_add(c, us, ns, &st);
}

/* ---- memory instants ------------------------------------------------------------------ */
static enum pf_name segment_name(unsigned kind)
{
    switch (kind) {
    case MH_EV_SEGMENT_ALLOC: return PF_NAME_SEGMENT_ALLOC;
    case MH_EV_SEGMENT_FREE: return PF_NAME_SEGMENT_FREE;
    case MH_EV_SEGMENT_MAP: return PF_NAME_SEGMENT_MAP;
    case MH_EV_SEGMENT_UNMAP: return PF_NAME_SEGMENT_UNMAP;
    case MH_EV_DRIVER_ALLOC: return PF_NAME_DRIVER_ALLOC;
    default: return PF_NAME_DRIVER_FREE;
    }
}

static void stack_arg(struct mh__trace *t, uint32_t stack)
{
    char label[512];
    mh__pf_arg_string(&t->pf->pb, PF_ARG_STACK, mh__stack_label(t->r, stack, label, sizeof label));
}

static void memory_instant(struct mh__trace *t, const struct mh_event *ev)
{
    int driver = ev->kind == MH_EV_DRIVER_ALLOC || ev->kind == MH_EV_DRIVER_FREE;
    int device = ev->device >= 0 ? ev->device : -1;
    uint64_t track = mh__pf_track(t, driver ? PF_TRACK_DRIVER : PF_TRACK_SEGMENTS, device, 0);
    struct mh__pb *p = te_begin(t, ev->time_ns, PF_TYPE_INSTANT, track);
    mh__pb_uint(p, PF_TE_CATEGORY_IIDS, PF_CAT_GPU_MEMORY);
    mh__pb_uint(p, PF_TE_NAME_IID, segment_name(ev->kind));
    mh__pf_arg_pointer(p, PF_ARG_ADDR, ev->addr);
    mh__pf_arg_uint(p, PF_ARG_BYTES, ev->size);
    if (driver)
        mh__pf_arg_string(p, PF_ARG_MEMORY_KIND, mh_memory_kind_name(ev->aux));
    else
        mh__pf_arg_pointer(p, PF_ARG_STREAM, ev->stream);
    if (ev->correlation)
        mh__pf_arg_uint(p, PF_ARG_CORRELATION, ev->correlation);
    if (ev->stack)
        stack_arg(t, ev->stack);
    te_end(t);
}

/* The OOM with the model's explanation of why the request failed. */
static void oom_instant(struct mh__trace *t, const struct mh_event *ev)
{
    struct mh_oom_info info;
    size_t n = mh_model_oom_count(t->m);
    if (n == 0 || mh_model_oom(t->m, n - 1, &info) != 0) {
        memset(&info, 0, sizeof info);
        info.request = ev->size;
        info.device_free = ev->addr;
        info.step = mh_model_current_step(t->m);
    }
    uint64_t track = mh__pf_track(t, PF_TRACK_OOMS, ev->device >= 0 ? ev->device : -1, 0);
    struct mh__pb *p = te_begin(t, ev->time_ns, PF_TYPE_INSTANT, track);
    mh__pb_uint(p, PF_TE_CATEGORY_IIDS, PF_CAT_GPU_MEMORY);
    mh__pb_uint(p, PF_TE_NAME_IID, PF_NAME_OOM);
    mh__pf_arg_uint(p, PF_ARG_REQUEST, info.request);
    mh__pf_arg_uint(p, PF_ARG_DEVICE_FREE, info.device_free);
    mh__pf_arg_uint(p, PF_ARG_ALLOCATED, info.allocated);
    mh__pf_arg_uint(p, PF_ARG_RESERVED, info.reserved);
    mh__pf_arg_uint(p, PF_ARG_LARGEST_FREE, info.largest_free_any);
    mh__pf_arg_uint(p, PF_ARG_LARGEST_FREE_STREAM, info.largest_free_same_stream);
    mh__pf_arg_uint(p, PF_ARG_RESERVED_UNALLOCATED, info.reserved - info.allocated);
    mh__pf_arg_int(p, PF_ARG_STEP, info.step);
    mh__pf_arg_pointer(p, PF_ARG_STREAM, info.stream);
    if (info.stack || ev->stack)
        stack_arg(t, info.stack ? info.stack : ev->stack);
    te_end(t);
}

/* ---- device activity and the calls that launched it ---------------------------------- */
/* 1 when this end of the correlation's flow is to be written (once). */
static int flow_end(struct mh__trace *t, uint32_t correlation, uint8_t done)
{
    uint8_t f = mh__corr_get(&t->corr, correlation);
    if ((f & (CORR_API | CORR_DEVICE)) != (CORR_API | CORR_DEVICE) || (f & done))
        return 0;
    mh__corr_add(&t->corr, correlation, done);
    return 1;
}

static void device_activity(struct mh__trace *t, const struct mh_event *ev)
{
    unsigned cat = ev->kind == MH_EV_KERNEL   ? PF_CAT_KERNEL
                   : ev->kind == MH_EV_MEMCPY ? PF_CAT_MEMCPY
                                              : PF_CAT_MEMSET;
    int device = ev->device >= 0 ? ev->device : 0;
    uint64_t track = mh__pf_track(t, PF_TRACK_STREAM, device, ev->stream);
    struct mh__pb *p = te_begin(t, ev->time_ns, PF_TYPE_SLICE_BEGIN, track);
    mh__pb_uint(p, PF_TE_CATEGORY_IIDS, cat);
    if (ev->kind == MH_EV_KERNEL)
        mh__pf_name_string(t, ev->str, PF_NAME_KERNEL);
    else if (ev->kind == MH_EV_MEMCPY)
        mh__pb_uint(p, PF_TE_NAME_IID, PF_NAME_MEMCPY + (ev->aux < 11 ? ev->aux : 0));
    else
        mh__pb_uint(p, PF_TE_NAME_IID, PF_NAME_MEMSET);
    mh__pf_arg_int(p, PF_ARG_DEVICE, ev->device);
    mh__pf_arg_uint(p, PF_ARG_STREAM, ev->stream);
    mh__pf_arg_uint(p, PF_ARG_CORRELATION, ev->correlation);
    if (ev->kind != MH_EV_KERNEL)
        mh__pf_arg_uint(p, PF_ARG_BYTES, ev->size);
    if (flow_end(t, ev->correlation, CORR_F_DONE))
        mh__pb_fixed64(p, PF_TE_TERMINATING_FLOW_IDS, flow_id(t, ev->correlation));
    te_end(t);
    slice_end(t, ev->time_ns + ev->dur_ns, track);
}

static void api_call(struct mh__trace *t, const struct mh_event *ev)
{
    const char *name = ev->str ? mh_reader_string(t->r, ev->str) : NULL;
    unsigned cat = name && strncmp(name, "cuda", 4) == 0 ? PF_CAT_CUDA_RUNTIME : PF_CAT_CUDA_DRIVER;
    uint64_t track = mh__pf_track(t, PF_TRACK_API, -1, ev->thread);
    struct mh__pb *p = te_begin(t, ev->time_ns, PF_TYPE_SLICE_BEGIN, track);
    mh__pb_uint(p, PF_TE_CATEGORY_IIDS, cat);
    mh__pf_name_string(t, ev->str, PF_NAME_API_CALL);
    mh__pf_arg_uint(p, PF_ARG_CBID, ev->aux);
    mh__pf_arg_uint(p, PF_ARG_CORRELATION, ev->correlation);
    if (ev->size)
        mh__pf_arg_uint(p, PF_ARG_BYTES, ev->size);
    if (ev->addr)
        mh__pf_arg_pointer(p, PF_ARG_ADDR, ev->addr);
    if (flow_end(t, ev->correlation, CORR_S_DONE))
        mh__pb_fixed64(p, PF_TE_FLOW_IDS, flow_id(t, ev->correlation));
    te_end(t);
    slice_end(t, ev->time_ns + ev->dur_ns, track);
}

/* ---- op ranges and steps: begun when they begin, clipped to the window ------------ */
static int window_empty(const struct mh__trace *t)
{
    return t->plan.events == 0;
}

/* Writes the begin of an op range (on its thread) or a step at ns. */
static void open_begin(struct mh__trace *t, struct pf_open *o, uint32_t thread, int is_step,
                       uint64_t ns)
{
    struct mh__pb *p;
    if (is_step) {
        char name[48];
        snprintf(name, sizeof name, "step %" PRId64, o->step);
        p = te_begin(t, ns, PF_TYPE_SLICE_BEGIN, mh__pf_track(t, PF_TRACK_STEPS, -1, 0));
        mh__pb_uint(p, PF_TE_CATEGORY_IIDS, PF_CAT_STEP);
        mh__pf_string(p, PF_TE_NAME, name);
    } else {
        p = te_begin(t, ns, PF_TYPE_SLICE_BEGIN, mh__pf_track(t, PF_TRACK_THREAD, -1, thread));
        mh__pb_uint(p, PF_TE_CATEGORY_IIDS, PF_CAT_CPU_OP);
        mh__pf_name_string(t, o->str, PF_NAME_RANGE);
    }
    te_end(t);
    o->begun = 1;
}

/* A slice that began at `o->begin_ns`: begun at once when that is in the
 * window, at the window's start later (open_catch_up), never after it. */
static void open_start(struct mh__trace *t, struct pf_open *o, uint32_t thread, int is_step)
{
    o->begun = 0;
    if (!window_empty(t) && o->begin_ns >= t->plan.first_ns && o->begin_ns <= t->plan.last_ns)
        open_begin(t, o, thread, is_step, o->begin_ns);
}

/* Slices open since before the window, once the file reaches it (`now`). */
static void open_catch_up(struct mh__trace *t, struct pf_open *o, size_t n, uint32_t thread,
                          int is_step, uint64_t now)
{
    if (window_empty(t) || now < t->plan.first_ns)
        return;
    for (size_t i = 0; i < n; i++) /* outer first */
        if (!o[i].begun && o[i].begin_ns < t->plan.first_ns)
            open_begin(t, &o[i], thread, is_step, t->plan.first_ns);
}

static void open_close(struct mh__trace *t, struct pf_open *o, uint32_t thread, int is_step,
                       uint64_t ns)
{
    if (!o->begun)
        return;
    uint64_t track = is_step ? mh__pf_track(t, PF_TRACK_STEPS, -1, 0)
                             : mh__pf_track(t, PF_TRACK_THREAD, -1, thread);
    slice_end(t, ns < t->plan.last_ns ? ns : t->plan.last_ns, track);
    o->begun = 0;
}

static struct pf_thread *thread_of(struct mh__pftrace *pf, uint32_t thread)
{
    for (size_t i = 0; i < pf->nthreads; i++)
        if (pf->threads[i].thread == thread)
            return &pf->threads[i];
    if (MH__GROW(pf->threads, pf->nthreads, pf->threads_cap, 8) < 0)
        return NULL;
    struct pf_thread *th = &pf->threads[pf->nthreads++];
    memset(th, 0, sizeof *th);
    th->thread = thread;
    return th;
}

static int range_event(struct mh__trace *t, const struct mh_event *ev)
{
    struct pf_thread *th = thread_of(t->pf, ev->thread);
    if (!th)
        return MH_ENOMEM;
    if (ev->kind == MH_EV_RANGE_BEGIN) {
        open_catch_up(t, th->stack, th->len, th->thread, 0, ev->time_ns);
        if (MH__GROW(th->stack, th->len, th->cap, 16) < 0)
            return MH_ENOMEM;
        struct pf_open *o = &th->stack[th->len++];
        *o = (struct pf_open){ev->str, -1, ev->time_ns, 0};
        open_start(t, o, th->thread, 0);
        return 0;
    }
    /* the innermost open range of that name; ends without a begin are ignored */
    size_t i = th->len;
    while (i > 0 && th->stack[i - 1].str != ev->str)
        i--;
    if (i == 0)
        return 0;
    open_catch_up(t, th->stack, th->len, th->thread, 0, ev->time_ns);
    for (size_t k = th->len; k >= i; k--) /* close ranges left open inside it too */
        open_close(t, &th->stack[k - 1], th->thread, 0, ev->time_ns);
    th->len = i - 1;
    return 0;
}

static void step_event(struct mh__trace *t, const struct mh_event *ev)
{
    struct pf_open *o = &t->pf->step;
    if (o->step >= 0) {
        open_catch_up(t, o, 1, 0, 1, ev->time_ns);
        open_close(t, o, 0, 1, ev->time_ns);
        o->step = -1;
    }
    if (ev->kind == MH_EV_STEP_BEGIN) {
        *o = (struct pf_open){0, (int64_t)ev->aux, ev->time_ns, 0};
        open_start(t, o, 0, 1);
    }
}

static void mark_event(struct mh__trace *t, const struct mh_event *ev)
{
    int phase = ev->kind == MH_EV_PHASE;
    uint64_t track = mh__pf_track(t, PF_TRACK_STEPS, -1, 0);
    struct mh__pb *p = te_begin(t, ev->time_ns, PF_TYPE_INSTANT, track);
    mh__pb_uint(p, PF_TE_CATEGORY_IIDS, phase ? PF_CAT_PHASE : PF_CAT_MARK);
    if (phase)
        mh__pf_string(p, PF_TE_NAME, mh_phase_name(ev->aux));
    else
        mh__pf_name_string(t, ev->str, PF_NAME_MARK);
    te_end(t);
}

/* ---- driving ------------------------------------------------------------------------------ */
static int dispatch(struct mh__trace *t, const struct mh_event *ev)
{
    switch (ev->kind) {
    case MH_EV_ALLOC: case MH_EV_FREE_REQUESTED: case MH_EV_FREE_COMPLETED:
        counter(t, ev->device, ev->time_ns);
        break;
    case MH_EV_SEGMENT_ALLOC: case MH_EV_SEGMENT_FREE: case MH_EV_SEGMENT_MAP:
    case MH_EV_SEGMENT_UNMAP: case MH_EV_DRIVER_ALLOC: case MH_EV_DRIVER_FREE:
        memory_instant(t, ev);
        counter(t, ev->device, ev->time_ns);
        break;
    case MH_EV_OOM:
        oom_instant(t, ev);
        counter(t, ev->device, ev->time_ns);
        break;
    case MH_EV_KERNEL: case MH_EV_MEMCPY: case MH_EV_MEMSET:
        if (!t->o.memory_only)
            device_activity(t, ev);
        break;
    case MH_EV_API_CALL:
        if (!t->o.memory_only)
            api_call(t, ev);
        break;
    case MH_EV_MARK: case MH_EV_PHASE:
        mark_event(t, ev);
        break;
    default: /* steps and ranges are handled before the window test */
        break;
    }
    return 0;
}

int mh__pf_event(struct mh__trace *t, const struct mh_event *ev)
{
    int64_t step = mh__trace_step_of(t, ev, mh_model_device_step(t->m, ev->device));
    if (ev->kind == MH_EV_STEP_BEGIN || ev->kind == MH_EV_STEP_END) {
        step_event(t, ev);
        return 0;
    }
    if (ev->kind == MH_EV_RANGE_BEGIN || ev->kind == MH_EV_RANGE_END)
        return t->o.memory_only ? 0 : range_event(t, ev);
    if (!mh__trace_in_window(t, ev, step) || !mh__trace_device_ok(t, ev->device))
        return 0;
    return dispatch(t, ev);
}

void mh__pf_events_end(struct mh__trace *t)
{
    for (int d = 0; d < MH__TRACE_MAX_DEVICES; d++)
        write_counter(t, d);
    struct mh_event end;
    memset(&end, 0, sizeof end);
    end.time_ns = t->plan.last_ns;
    end.kind = MH_EV_STEP_END;
    step_event(t, &end); /* the step still open at the end of the file */
    struct mh__pftrace *pf = t->pf;
    for (size_t i = 0; i < pf->nthreads; i++) {
        struct pf_thread *th = &pf->threads[i];
        open_catch_up(t, th->stack, th->len, th->thread, 0, t->plan.last_ns);
        for (size_t k = th->len; k > 0; k--)
            open_close(t, &th->stack[k - 1], th->thread, 0, t->plan.last_ns);
        th->len = 0;
    }
}

/* The instant at the job's start that anchors the time axis of a trace of
 * several files (at the origin: timestamp 0). */
void mh__pf_job_start(struct mh__trace *t)
{
    uint64_t track = mh__pf_track(t, PF_TRACK_JOB, -1, 0);
    struct mh__pb *p = te_begin(t, t->base_ns, PF_TYPE_INSTANT, track);
    mh__pb_uint(p, PF_TE_CATEGORY_IIDS, PF_CAT_MEMHIST);
    mh__pf_string(p, PF_TE_NAME, "job start (the earliest recording's start)");
    te_end(t);
}
