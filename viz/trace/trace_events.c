/* trace_events.c - one .memhist event -> Chrome trace events (the write pass
 * of trace_writer.c). Replays the model alongside, so counters and OOM
 * explanations come from the same state every other output reads. Ranges and
 * steps are buffered until they end and written as complete "X" slices;
 * counter samples falling in the same microsecond are merged, keeping a peak
 * within it (trace_int.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "memhist/model.h"
#include "stacks.h"
#include "trace_int.h"
#include "grow.h"

#define HOST_PID_DEFAULT 4194305 /* above Linux's pid_max: never a real pid */
#define TID_STEPS 0
#define TID_SEGMENTS 2147483000  /* allocator segments and OOMs, per GPU */
#define TID_DRIVER 2147483001    /* driver-level allocations */

const char *mh__trace_ts(const struct mh__trace *t, uint64_t ns, char buf[32])
{
    /* events before the origin (a profile's base time) get negative times */
    int before = ns < t->base_ns;
    uint64_t rel = before ? t->base_ns - ns : ns - t->base_ns;
    snprintf(buf, 32, "%s%" PRIu64 ".%03u", before ? "-" : "", rel / 1000, (unsigned)(rel % 1000));
    return buf;
}

static void kv_ts(struct mh__trace *t, const char *key, uint64_t ns)
{
    char b[32];
    mh__json_key(t->j, key);
    mh__json_raw(t->j, mh__trace_ts(t, ns, b));
}

static void kv_dur(struct mh__trace *t, uint64_t ns)
{
    char b[32];
    snprintf(b, sizeof b, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
    mh__json_key(t->j, "dur");
    mh__json_raw(t->j, b);
}

static void kv_hex(struct mh__json *j, const char *key, uint64_t v)
{
    char b[24];
    snprintf(b, sizeof b, "0x%" PRIx64, v);
    mh__json_kv_string(j, key, b);
}

static const char *str_of(const struct mh__trace *t, uint32_t id, const char *dflt)
{
    const char *s = id ? mh_reader_string(t->r, id) : NULL;
    return s && *s ? s : dflt;
}

/* ---- process and thread names ("M" events), once per track ------------------ */
static void meta_event(struct mh__trace *t, const char *name, int64_t pid, int64_t tid,
                       const char *key, const char *sval, int64_t ival)
{
    struct mh__json *j = t->j;
    mh__json_begin_object(j);
    mh__json_kv_string(j, "ph", "M");
    mh__json_kv_string(j, "name", name);
    mh__json_kv_int(j, "pid", pid);
    mh__json_kv_int(j, "tid", tid);
    mh__json_kv_int(j, "ts", 0);
    mh__json_key(j, "args");
    mh__json_begin_object(j);
    if (sval)
        mh__json_kv_string(j, key, sval);
    else
        mh__json_kv_int(j, key, ival);
    mh__json_end_object(j);
    mh__json_end_object(j);
}

/* 1 if the track was new (and is now registered). */
static int new_track(struct mh__trace *t, int64_t pid, int64_t tid)
{
    for (size_t i = 0; i < t->ntracks; i++)
        if (t->tracks[i].pid == pid && t->tracks[i].tid == tid)
            return 0;
    if (MH__GROW(t->tracks, t->ntracks, t->tracks_cap, 32) < 0)
        return 0;
    t->tracks[t->ntracks++] = (struct mh__track){pid, tid};
    return 1;
}

/* The pid of a GPU's tracks: its index, offset per file in a trace of several. */
static int64_t gpu_pid(const struct mh__trace *t, int device)
{
    return t->o.gpu_pid_base + device;
}

static void device_process(struct mh__trace *t, int device)
{
    int64_t pid = gpu_pid(t, device);
    if (!new_track(t, pid, -1))
        return;
    char name[200], label[32];
    const char *who = t->o.process_label ? t->o.process_label : "";
    snprintf(label, sizeof label, "GPU %d", device);
    snprintf(name, sizeof name, "%s%sGPU %d", who, *who ? " " : "", device);
    struct mh_device_info info;
    for (size_t i = 0; i < mh_reader_device_count(t->r); i++)
        if (mh_reader_device(t->r, i, &info) == 0 && info.device == device && info.name &&
            *info.name)
            snprintf(name, sizeof name, "%s%sGPU %d (%s)", who, *who ? " " : "", device, info.name);
    meta_event(t, "process_name", pid, 0, "name", name, 0);
    meta_event(t, "process_labels", pid, 0, "labels", label, 0);
    meta_event(t, "process_sort_index", pid, 0, "sort_index", NULL, 5000000 + pid);
}

int mh__trace_name_taken(struct mh__trace *t, int64_t pid, int64_t tid)
{
    return new_track(t, pid, tid) ? 0 : MH_ENOMEM;
}

/* Names a track the first time it is used: pid/tid of a GPU or host thread. */
static void track(struct mh__trace *t, int64_t pid, int64_t tid)
{
    if (pid != t->host_pid)
        device_process(t, (int)(pid - t->o.gpu_pid_base));
    if (!new_track(t, pid, tid))
        return;
    char name[64];
    int64_t sort = tid;
    if (tid == TID_SEGMENTS) {
        snprintf(name, sizeof name, "allocator segments");
        sort = -2;
    } else if (tid == TID_DRIVER) {
        snprintf(name, sizeof name, "driver memory");
        sort = -1;
    } else if (pid == t->host_pid && tid == TID_STEPS) {
        snprintf(name, sizeof name, "steps");
        sort = -3;
    } else if (pid == t->host_pid) {
        snprintf(name, sizeof name, "thread %" PRId64, tid);
    } else {
        snprintf(name, sizeof name, "stream %" PRId64, tid);
    }
    meta_event(t, "thread_name", pid, tid, "name", name, 0);
    meta_event(t, "thread_sort_index", pid, tid, "sort_index", NULL, sort);
}

/* ---- slices, instants, flows ------------------------------------------------------ */
static void begin_event(struct mh__trace *t, const char *ph, const char *cat, const char *name,
                        int64_t pid, int64_t tid, uint64_t ns)
{
    track(t, pid, tid);
    struct mh__json *j = t->j;
    mh__json_begin_object(j);
    mh__json_kv_string(j, "ph", ph);
    if (cat)
        mh__json_kv_string(j, "cat", cat);
    mh__json_kv_string(j, "name", name);
    mh__json_kv_int(j, "pid", pid);
    mh__json_kv_int(j, "tid", tid);
    kv_ts(t, "ts", ns);
}

/* A flow's id is the launch's correlation id, apart per file in a trace of
 * several (each process numbers its own from 1). */
static void flow(struct mh__trace *t, const char *ph, uint32_t id, int64_t pid, int64_t tid,
                 uint64_t ns)
{
    begin_event(t, ph, "ac2g", "ac2g", pid, tid, ns);
    mh__json_kv_uint(t->j, "id", (uint64_t)t->o.file_index << 32 | id);
    if (ph[0] == 'f')
        mh__json_kv_string(t->j, "bp", "e");
    mh__json_end_object(t->j);
}

static void complete(struct mh__trace *t, const char *cat, const char *name, int64_t pid,
                     int64_t tid, uint64_t ns, uint64_t dur)
{
    begin_event(t, "X", cat, name, pid, tid, ns);
    kv_dur(t, dur);
}

static void instant(struct mh__trace *t, const char *cat, const char *name, const char *scope,
                    int64_t pid, int64_t tid, uint64_t ns)
{
    begin_event(t, "i", cat, name, pid, tid, ns);
    mh__json_kv_string(t->j, "s", scope);
}

/* ---- memory counters ------------------------------------------------------------ */
static void write_sample(struct mh__trace *t, int device, const struct mh__counter_sample *c)
{
    char name[32];
    snprintf(name, sizeof name, "GPU %d memory", device);
    device_process(t, device);
    struct mh__json *j = t->j;
    mh__json_begin_object(j);
    mh__json_kv_string(j, "ph", "C");
    mh__json_kv_string(j, "cat", "gpu_memory");
    mh__json_kv_string(j, "name", name);
    mh__json_kv_int(j, "pid", gpu_pid(t, device));
    mh__json_kv_int(j, "tid", 0);
    kv_ts(t, "ts", c->time_ns);
    mh__json_key(j, "args");
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "allocated", c->st.allocated);
    mh__json_kv_uint(j, "reserved", c->st.reserved);
    mh__json_kv_uint(j, "outside allocator", c->st.driver_outside);
    mh__json_kv_uint(j, "total", c->st.reserved + c->st.driver_outside);
    mh__json_end_object(j);
    mh__json_end_object(j);
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

/* ---- memory instants -------------------------------------------------------------- */
static const char *segment_name(unsigned kind)
{
    switch (kind) {
    case MH_EV_SEGMENT_ALLOC: return "segment alloc";
    case MH_EV_SEGMENT_FREE: return "segment free";
    case MH_EV_SEGMENT_MAP: return "segment map";
    case MH_EV_SEGMENT_UNMAP: return "segment unmap";
    case MH_EV_DRIVER_ALLOC: return "driver alloc";
    default: return "driver free";
    }
}

static void memory_instant(struct mh__trace *t, const struct mh_event *ev)
{
    int driver = ev->kind == MH_EV_DRIVER_ALLOC || ev->kind == MH_EV_DRIVER_FREE;
    int64_t pid = ev->device >= 0 ? gpu_pid(t, ev->device) : t->host_pid;
    instant(t, "gpu_memory", segment_name(ev->kind), "t", pid, driver ? TID_DRIVER : TID_SEGMENTS,
            ev->time_ns);
    struct mh__json *j = t->j;
    mh__json_key(j, "args");
    mh__json_begin_object(j);
    kv_hex(j, "addr", ev->addr);
    mh__json_kv_uint(j, "bytes", ev->size);
    if (driver)
        mh__json_kv_string(j, "memory kind", mh_memory_kind_name(ev->aux));
    else
        kv_hex(j, "stream", ev->stream);
    if (ev->correlation)
        mh__json_kv_uint(j, "correlation", ev->correlation);
    if (ev->stack) {
        char label[512];
        mh__json_kv_string(j, "stack", mh__stack_label(t->r, ev->stack, label, sizeof label));
    }
    mh__json_end_object(j);
    mh__json_end_object(j);
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
    int64_t pid = ev->device >= 0 ? gpu_pid(t, ev->device) : t->host_pid;
    instant(t, "gpu_memory", "OOM", "p", pid, TID_SEGMENTS, ev->time_ns);
    struct mh__json *j = t->j;
    mh__json_key(j, "args");
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "request", info.request);
    mh__json_kv_uint(j, "device_free", info.device_free);
    mh__json_kv_uint(j, "allocated", info.allocated);
    mh__json_kv_uint(j, "reserved", info.reserved);
    mh__json_kv_uint(j, "largest free block", info.largest_free_any);
    mh__json_kv_uint(j, "largest free block on the stream", info.largest_free_same_stream);
    mh__json_kv_uint(j, "reserved but unallocated", info.reserved - info.allocated);
    mh__json_kv_int(j, "step", info.step);
    kv_hex(j, "stream", info.stream);
    if (info.stack || ev->stack) {
        char label[512];
        mh__stack_label(t->r, info.stack ? info.stack : ev->stack, label, sizeof label);
        mh__json_kv_string(j, "stack", label);
    }
    mh__json_end_object(j);
    mh__json_end_object(j);
}

/* ---- device activity and the calls that launched it ------------------------------ */
static const char *copy_name(unsigned kind)
{
    static const char *const names[] = {"Memcpy", "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA",
                                        "Memcpy AtoH", "Memcpy AtoA", "Memcpy AtoD",
                                        "Memcpy DtoA", "Memcpy DtoD", "Memcpy HtoH",
                                        "Memcpy PtoP"};
    return kind < sizeof names / sizeof names[0] ? names[kind] : "Memcpy";
}

static void device_activity(struct mh__trace *t, const struct mh_event *ev)
{
    const char *cat = "kernel", *name;
    if (ev->kind == MH_EV_KERNEL)
        name = str_of(t, ev->str, "kernel");
    else if (ev->kind == MH_EV_MEMCPY) {
        cat = "gpu_memcpy";
        name = copy_name(ev->aux);
    } else {
        cat = "gpu_memset";
        name = "Memset";
    }
    int64_t pid = gpu_pid(t, ev->device >= 0 ? ev->device : 0);
    complete(t, cat, name, pid, (int64_t)ev->stream, ev->time_ns, ev->dur_ns);
    struct mh__json *j = t->j;
    mh__json_key(j, "args");
    mh__json_begin_object(j);
    mh__json_kv_int(j, "device", ev->device);
    mh__json_kv_uint(j, "stream", ev->stream);
    mh__json_kv_uint(j, "correlation", ev->correlation);
    if (ev->kind != MH_EV_KERNEL)
        mh__json_kv_uint(j, "bytes", ev->size);
    mh__json_end_object(j);
    mh__json_end_object(j);
    uint8_t f = mh__corr_get(&t->corr, ev->correlation);
    if ((f & (CORR_API | CORR_DEVICE)) == (CORR_API | CORR_DEVICE) && !(f & CORR_F_DONE)) {
        flow(t, "f", ev->correlation, pid, (int64_t)ev->stream, ev->time_ns);
        mh__corr_add(&t->corr, ev->correlation, CORR_F_DONE);
    }
}

static void api_call(struct mh__trace *t, const struct mh_event *ev)
{
    const char *name = str_of(t, ev->str, "api call");
    const char *cat = strncmp(name, "cuda", 4) == 0 ? "cuda_runtime" : "cuda_driver";
    complete(t, cat, name, t->host_pid, ev->thread, ev->time_ns, ev->dur_ns);
    struct mh__json *j = t->j;
    mh__json_key(j, "args");
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "cbid", ev->aux);
    mh__json_kv_uint(j, "correlation", ev->correlation);
    if (ev->size)
        mh__json_kv_uint(j, "bytes", ev->size);
    if (ev->addr)
        kv_hex(j, "addr", ev->addr);
    mh__json_end_object(j);
    mh__json_end_object(j);
    uint8_t f = mh__corr_get(&t->corr, ev->correlation);
    if ((f & (CORR_API | CORR_DEVICE)) == (CORR_API | CORR_DEVICE) && !(f & CORR_S_DONE)) {
        flow(t, "s", ev->correlation, t->host_pid, ev->thread, ev->time_ns);
        mh__corr_add(&t->corr, ev->correlation, CORR_S_DONE);
    }
}

/* ---- op ranges and steps: complete slices when they end -------------------------- */
static int overlaps_window(const struct mh__trace *t, uint64_t b, uint64_t e)
{
    return t->plan.events > 0 && b <= t->plan.last_ns && e >= t->plan.first_ns;
}

/* A slice clipped to the window, so windows never leave half-open slices. */
static void clipped_slice(struct mh__trace *t, const char *cat, const char *name, int64_t tid,
                          uint64_t b, uint64_t e)
{
    if (!overlaps_window(t, b, e))
        return;
    if (b < t->plan.first_ns)
        b = t->plan.first_ns;
    if (e > t->plan.last_ns)
        e = t->plan.last_ns;
    complete(t, cat, name, t->host_pid, tid, b, e > b ? e - b : 0);
    mh__json_end_object(t->j);
}

static struct mh__thread_ranges *thread_ranges(struct mh__trace *t, uint32_t thread)
{
    for (size_t i = 0; i < t->nthreads; i++)
        if (t->threads[i].thread == thread)
            return &t->threads[i];
    struct mh__thread_ranges *n = realloc(t->threads, (t->nthreads + 1) * sizeof *n);
    if (!n)
        return NULL;
    t->threads = n;
    n = &t->threads[t->nthreads++];
    memset(n, 0, sizeof *n);
    n->thread = thread;
    return n;
}

static int range_event(struct mh__trace *t, const struct mh_event *ev)
{
    struct mh__thread_ranges *th = thread_ranges(t, ev->thread);
    if (!th)
        return MH_ENOMEM;
    if (ev->kind == MH_EV_RANGE_BEGIN) {
        if (MH__GROW(th->stack, th->len, th->cap, 16) < 0)
            return MH_ENOMEM;
        th->stack[th->len++] = (struct mh__open_range){ev->str, ev->time_ns};
        return 0;
    }
    /* the innermost open range of that name; ends without a begin are ignored */
    size_t i = th->len;
    while (i > 0 && th->stack[i - 1].str != ev->str)
        i--;
    if (i == 0)
        return 0;
    for (size_t k = th->len; k >= i; k--) { /* close ranges left open inside it too */
        struct mh__open_range *o = &th->stack[k - 1];
        clipped_slice(t, "cpu_op", str_of(t, o->str, "range"), ev->thread, o->begin_ns,
                      ev->time_ns);
    }
    th->len = i - 1;
    return 0;
}

static void step_event(struct mh__trace *t, const struct mh_event *ev)
{
    char name[48];
    if (t->open_step >= 0) {
        snprintf(name, sizeof name, "step %" PRId64, t->open_step);
        clipped_slice(t, "step", name, TID_STEPS, t->step_begin_ns, ev->time_ns);
        t->open_step = -1;
    }
    if (ev->kind == MH_EV_STEP_BEGIN) {
        t->open_step = ev->aux;
        t->step_begin_ns = ev->time_ns;
    }
}

static void mark_event(struct mh__trace *t, const struct mh_event *ev)
{
    const char *name = ev->kind == MH_EV_PHASE ? mh_phase_name(ev->aux) : str_of(t, ev->str, "mark");
    instant(t, ev->kind == MH_EV_PHASE ? "phase" : "mark", name, "t", t->host_pid, TID_STEPS,
            ev->time_ns);
    mh__json_end_object(t->j);
}

/* ---- driving ------------------------------------------------------------------------ */
int64_t mh__trace_host_pid(const struct mh_reader *r)
{
    const char *pid = mh_reader_meta(r, "pid");
    char *end;
    long long v = pid ? strtoll(pid, &end, 10) : 0;
    return pid && *end == '\0' && v > MH__TRACE_MAX_DEVICES ? v : HOST_PID_DEFAULT;
}

int mh__trace_events_begin(struct mh__trace *t, const struct mh_reader *r, struct mh_model *m,
                           struct mh__json *j)
{
    t->j = j;
    t->r = r;
    t->m = m;
    t->open_step = -1;
    t->host_pid = mh__trace_host_pid(r);
    const char *prog = mh_reader_meta(r, "program");
    if (new_track(t, t->host_pid, -1)) { /* not named by a profile merged into */
        char name[200];
        snprintf(name, sizeof name, "%s%s%s", t->o.process_label ? t->o.process_label : "",
                 t->o.process_label ? " " : "", prog && *prog ? prog : "host");
        meta_event(t, "process_name", t->host_pid, 0, "name", name, 0);
        meta_event(t, "process_labels", t->host_pid, 0, "labels", "CPU", 0);
        meta_event(t, "process_sort_index", t->host_pid, 0, "sort_index", NULL, 0);
    }
    return 0;
}

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

int mh__trace_event(struct mh__trace *t, const struct mh_event *ev)
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

void mh__trace_events_end(struct mh__trace *t)
{
    for (int d = 0; d < MH__TRACE_MAX_DEVICES; d++)
        write_counter(t, d);
    struct mh_event end;
    memset(&end, 0, sizeof end);
    end.time_ns = t->plan.last_ns;
    end.kind = MH_EV_STEP_END;
    step_event(t, &end); /* the step still open at the end of the file */
    for (size_t i = 0; i < t->nthreads; i++) {
        struct mh__thread_ranges *th = &t->threads[i];
        for (size_t k = th->len; k > 0; k--)
            clipped_slice(t, "cpu_op", str_of(t, th->stack[k - 1].str, "range"), th->thread,
                          th->stack[k - 1].begin_ns, t->plan.last_ns);
        free(th->stack);
    }
    free(t->threads);
    free(t->tracks);
    t->threads = NULL;
    t->tracks = NULL;
    t->nthreads = t->ntracks = t->tracks_cap = 0;
    memset(t->counters, 0, sizeof t->counters);
    t->m = NULL;
}
