/* trace_writer.c - Chrome trace: options, the scan pass, the document
 * (see trace_writer.h). The scan is a session pass that learns the window's
 * span, which launches have a device activity in the window (so every flow
 * start gets its finish) and how large the output will be. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "memhist/model.h"
#include "trace_int.h"
#include "grow.h"

int mh__trace_new(const struct mh__trace_opts *opts, struct mh__trace **out)
{
    struct mh__trace *t = calloc(1, sizeof *t);
    if (!t)
        return MH_ENOMEM;
    if (opts)
        t->o = *opts;
    else
        t->o.device = -1;
    if (!t->o.warn_bytes)
        t->o.warn_bytes = MH__TRACE_VIEWER_LIMIT;
    *out = t;
    return 0;
}

void mh__trace_free(struct mh__trace *t)
{
    if (!t)
        return;
    free(t->corr.keys);
    free(t->corr.flags);
    free(t->step_times);
    free(t->tracks); /* left by a merge that stopped before its events (no overlap) */
    for (size_t i = 0; i < t->nthreads; i++)
        free(t->threads[i].stack);
    free(t->threads);
    free(t);
}

void mh__trace_set_perfetto(struct mh__trace *t, int perfetto)
{
    t->o.perfetto = perfetto;
}

const struct mh__trace_plan *mh__trace_get_plan(const struct mh__trace *t)
{
    return &t->plan;
}

/* ---- correlation ids: open addressing, grown at half load ------------------ */
static size_t corr_slot(const struct mh__corr_map *c, uint32_t key)
{
    size_t i = (size_t)(key * 2654435761u) & (c->cap - 1);
    while (c->keys[i] && c->keys[i] != key)
        i = (i + 1) & (c->cap - 1);
    return i;
}

static int corr_grow(struct mh__corr_map *c)
{
    struct mh__corr_map n = {0};
    n.cap = c->cap ? c->cap * 2 : 1024;
    n.keys = calloc(n.cap, sizeof *n.keys);
    n.flags = calloc(n.cap, sizeof *n.flags);
    if (!n.keys || !n.flags) {
        free(n.keys);
        free(n.flags);
        return MH_ENOMEM;
    }
    for (size_t i = 0; i < c->cap; i++)
        if (c->keys[i]) {
            size_t s = corr_slot(&n, c->keys[i]);
            n.keys[s] = c->keys[i];
            n.flags[s] = c->flags[i];
            n.len++;
        }
    free(c->keys);
    free(c->flags);
    *c = n;
    return 0;
}

int mh__corr_add(struct mh__corr_map *c, uint32_t key, uint8_t flag)
{
    if (key == 0)
        return 0;
    if ((c->len + 1) * 2 > c->cap && corr_grow(c) != 0)
        return MH_ENOMEM;
    size_t s = corr_slot(c, key);
    if (!c->keys[s]) {
        c->keys[s] = key;
        c->len++;
    }
    c->flags[s] |= flag;
    return 0;
}

uint8_t mh__corr_get(const struct mh__corr_map *c, uint32_t key)
{
    if (key == 0 || c->cap == 0)
        return 0;
    return c->flags[corr_slot(c, key)];
}

/* ---- memory counter samples, one microsecond at a time ------------------------- */
int mh__counter_ends(const struct mh__counter_state *c, int64_t us)
{
    return c->pending && c->ts_us != us;
}

void mh__counter_add(struct mh__counter_state *c, int64_t us, uint64_t ns,
                     const struct mh_mem_stats *st)
{
    struct mh__counter_sample s = {ns, c->pending ? c->n + 1 : 0, *st};
    if (!c->pending) {
        c->pending = 1;
        c->ts_us = us;
        c->top_allocated = c->top_reserved = s;
    }
    c->n = s.n;
    c->last = s;
    if (st->allocated > c->top_allocated.st.allocated)
        c->top_allocated = s;
    if (st->reserved > c->top_reserved.st.reserved)
        c->top_reserved = s;
}

/* Whether a moment of the microsecond before its end is a new peak. */
static int new_peak(const struct mh__counter_state *c, const struct mh__counter_sample *s)
{
    return s->n != c->last.n && ((s->st.allocated > c->written_allocated &&
                                  s->st.allocated > c->last.st.allocated) ||
                                 (s->st.reserved > c->written_reserved &&
                                  s->st.reserved > c->last.st.reserved));
}

size_t mh__counter_take(struct mh__counter_state *c, struct mh__counter_sample out[3])
{
    size_t k = 0;
    if (!c->pending)
        return 0;
    const struct mh__counter_sample *a = &c->top_allocated, *r = &c->top_reserved;
    if (a->n > r->n) { /* earlier first */
        const struct mh__counter_sample *x = a;
        a = r;
        r = x;
    }
    if (new_peak(c, a))
        out[k++] = *a;
    if (r->n != a->n && new_peak(c, r))
        out[k++] = *r;
    out[k++] = c->last;
    for (size_t i = 0; i < k; i++) {
        if (out[i].st.allocated > c->written_allocated)
            c->written_allocated = out[i].st.allocated;
        if (out[i].st.reserved > c->written_reserved)
            c->written_reserved = out[i].st.reserved;
    }
    c->pending = 0;
    return k;
}

/* ---- the window ----------------------------------------------------------------- */
int mh__trace_device_ok(const struct mh__trace *t, int device)
{
    return t->o.device < 0 || device < 0 || device == t->o.device;
}

int mh__trace_in_window(struct mh__trace *t, const struct mh_event *ev, int64_t step)
{
    if (t->clip_hi_ns &&
        (ev->time_ns + ev->dur_ns < t->clip_lo_ns || ev->time_ns > t->clip_hi_ns))
        return 0;
    if (t->o.has_steps)
        return step >= t->o.step_lo && step <= t->o.step_hi;
    if (t->o.has_time) {
        uint64_t rel = ev->time_ns >= t->t0_ns ? ev->time_ns - t->t0_ns : 0;
        return rel >= t->o.t_lo_ns && rel <= t->o.t_hi_ns;
    }
    return 1;
}

static int arrives_late(unsigned kind)
{
    return kind == MH_EV_KERNEL || kind == MH_EV_MEMCPY || kind == MH_EV_MEMSET ||
           kind == MH_EV_API_CALL;
}

int64_t mh__trace_step_of(const struct mh__trace *t, const struct mh_event *ev, int64_t model_step)
{
    if (ev->kind == MH_EV_STEP_BEGIN || ev->kind == MH_EV_STEP_END)
        return (int64_t)ev->aux; /* the step it opens or closes */
    if (!arrives_late(ev->kind))
        return model_step;
    size_t lo = 0, hi = t->nstep_times; /* last begin <= time */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->step_times[mid].begin_ns <= ev->time_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == 0 ? -1 : t->step_times[lo - 1].step;
}

static void note_step_begin(struct mh__trace *t, const struct mh_event *ev)
{
    if (t->nstep_times > 0 && t->step_times[t->nstep_times - 1].begin_ns > ev->time_ns)
        return; /* keep the table sorted */
    if (MH__GROW(t->step_times, t->nstep_times, t->step_times_cap, 64) < 0)
        return;
    t->step_times[t->nstep_times++] = (struct mh__step_time){ev->time_ns, (int64_t)ev->aux};
}

static int is_host_detail(unsigned kind)
{
    return kind == MH_EV_KERNEL || kind == MH_EV_MEMCPY || kind == MH_EV_MEMSET ||
           kind == MH_EV_API_CALL || kind == MH_EV_RANGE_BEGIN || kind == MH_EV_RANGE_END;
}

struct step_bytes {
    int64_t step;
    uint64_t bytes;
};

struct scan {
    struct step_bytes *steps;
    size_t n, cap;
    struct mh__trace_estimate est;
};

static void scan_step(struct scan *sc, int64_t step, uint64_t bytes)
{
    if (sc->n > 0 && sc->steps[sc->n - 1].step == step) {
        sc->steps[sc->n - 1].bytes += bytes;
        return;
    }
    if (MH__GROW(sc->steps, sc->n, sc->cap, 64) < 0)
        return; /* the suggestion is best effort */
    sc->steps[sc->n++] = (struct step_bytes){step, bytes};
}

/* A window of about half the limit: the first steps, or the first seconds. */
static void suggest(struct mh__trace *t, const struct scan *sc)
{
    struct mh__trace_plan *p = &t->plan;
    uint64_t budget = t->o.warn_bytes / 2, sum = 0;
    size_t first = 0; /* the set-up before the first step is left out */
    while (first < sc->n && sc->steps[first].step < 0)
        first++;
    if (sc->n - first >= 2) {
        size_t i = first;
        while (i + 1 < sc->n && sum + sc->steps[i].bytes <= budget)
            sum += sc->steps[i++].bytes;
        int64_t last = sc->steps[i > first ? i - 1 : first].step;
        snprintf(p->suggestion, sizeof p->suggestion, "--steps %lld:%lld",
                 (long long)sc->steps[first].step, (long long)last);
        return;
    }
    double frac = (double)budget / (double)p->est_bytes;
    double lo = (double)(p->first_ns > t->t0_ns ? p->first_ns - t->t0_ns : 0) / 1e9;
    double span = (double)(p->last_ns - p->first_ns) / 1e9 * frac;
    snprintf(p->suggestion, sizeof p->suggestion, "--time %.3f:%.3f", lo,
             lo + (span > 0.001 ? span : 0.001));
}

static void scan_event(struct mh__trace *t, struct scan *sc, const struct mh_event *ev,
                       int64_t step)
{
    if (!t->have_t0) {
        t->t0_ns = t->o.origin_ns && t->o.origin_ns <= ev->time_ns ? t->o.origin_ns : ev->time_ns;
        t->have_t0 = 1;
    }
    if (ev->kind == MH_EV_STEP_BEGIN)
        note_step_begin(t, ev);
    struct mh__trace_plan *p = &t->plan;
    if (!p->file_first_ns || ev->time_ns < p->file_first_ns)
        p->file_first_ns = ev->time_ns;
    if (ev->time_ns + ev->dur_ns > p->file_last_ns)
        p->file_last_ns = ev->time_ns + ev->dur_ns;
    step = mh__trace_step_of(t, ev, step);
    if (!mh__trace_in_window(t, ev, step) || !mh__trace_device_ok(t, ev->device))
        return;
    if (t->o.memory_only && is_host_detail(ev->kind))
        return;
    if (p->events == 0 || ev->time_ns < p->first_ns)
        p->first_ns = ev->time_ns;
    if (ev->time_ns + ev->dur_ns > p->last_ns)
        p->last_ns = ev->time_ns + ev->dur_ns;
    p->events++;
    if ((ev->kind <= MH_EV_OOM || ev->kind == MH_EV_DRIVER_ALLOC ||
         ev->kind == MH_EV_DRIVER_FREE) &&
        ev->device >= 0 && ev->device < MH__TRACE_MAX_DEVICES)
        p->counter_devices |= 1ull << ev->device;
    uint64_t bytes = mh__trace_estimate_event(&sc->est, ev);
    p->est_bytes += bytes;
    scan_step(sc, step, bytes);
    if (ev->kind == MH_EV_API_CALL)
        mh__corr_add(&t->corr, ev->correlation, CORR_API);
    else if (ev->kind == MH_EV_KERNEL || ev->kind == MH_EV_MEMCPY || ev->kind == MH_EV_MEMSET)
        mh__corr_add(&t->corr, ev->correlation, CORR_DEVICE);
}

/* The scan as a session observer. */
struct scan_pass {
    struct mh__trace *t;
    struct scan sc;
};

static int scan_begin(void *user, struct mh__session *s)
{
    struct scan_pass *p = user;
    memset(&p->t->plan, 0, sizeof p->t->plan);
    p->t->have_t0 = 0;
    p->t->nstep_times = 0;
    p->sc.n = 0;
    mh__trace_estimate_begin(&p->sc.est, mh__session_reader(s), mh__session_model(s),
                             p->t->o.pretty);
    return 0;
}

static int scan_on_event(void *user, struct mh__session *s, const struct mh_event *ev,
                         const struct mh_apply_result *res)
{
    struct scan_pass *p = user;
    (void)res;
    scan_event(p->t, &p->sc, ev, mh_model_device_step(mh__session_model(s), ev->device));
    return 0;
}

int mh__trace_scan(struct mh__trace *t, struct mh__session *s)
{
    struct scan_pass p = {t, {0}};
    const struct mh__observer o = {"trace-scan", &p, scan_begin, scan_on_event, NULL};
    int rc = mh__session_pass(s, &o);
    for (size_t i = 0; i < t->corr.cap; i++)
        if ((t->corr.flags[i] & (CORR_API | CORR_DEVICE)) == (CORR_API | CORR_DEVICE))
            t->plan.flows++;
    /* the pending counter samples, the flows' start and finish, the
     * document's head and the tracks' names */
    t->plan.est_bytes += mh__trace_estimate_end(&p.sc.est) +
                         mh__trace_estimate_flows(&p.sc.est, t->plan.flows) + 4096;
    t->plan.too_big = t->plan.est_bytes > t->o.warn_bytes;
    if (t->plan.too_big && t->plan.events > 0)
        suggest(t, &p.sc);
    free(p.sc.steps);
    if (!t->base_fixed)
        t->base_ns = t->o.origin_ns ? t->o.origin_ns : t->plan.first_ns;
    t->scanned = rc == 0;
    return rc;
}

/* ---- the document ----------------------------------------------------------------- */
void mh__trace_write_meta(struct mh__json *j, const struct mh_reader *r)
{
    const char *k, *v;
    mh__json_key(j, "memhist");
    mh__json_begin_object(j);
    for (size_t i = 0; mh_reader_meta_at(r, i, &k, &v) > 0; i++)
        mh__json_kv_string(j, k, v);
    mh__json_end_object(j);
}

/* The events of the document as a session observer. */
static int write_begin(void *user, struct mh__session *s)
{
    struct mh__trace *t = user;
    return mh__trace_events_begin(t, mh__session_reader(s), mh__session_model(s), t->j);
}

static int write_on_event(void *user, struct mh__session *s, const struct mh_event *ev,
                          const struct mh_apply_result *res)
{
    (void)s;
    (void)res;
    return mh__trace_event(user, ev);
}

int mh__trace_events_pass(struct mh__trace *t, struct mh__session *s, struct mh__json *j)
{
    const struct mh__observer o = {"trace-events", t, write_begin, write_on_event, NULL};
    t->j = j;
    int rc = mh__session_pass(s, &o);
    mh__trace_events_end(t);
    return rc;
}

int mh__trace_write(struct mh__trace *t, struct mh__session *ses, struct mh__sink *s)
{
    int rc = t->scanned ? 0 : mh__trace_scan(t, ses);
    if (rc < 0)
        return rc;
    if (t->o.perfetto)
        return mh__trace_write_perfetto(t, ses, s);
    const struct mh_reader *r = mh__session_reader(ses);
    struct mh__json j;
    mh__json_init(&j, s, t->o.pretty);
    mh__json_begin_object(&j);
    mh__json_kv_int(&j, "schemaVersion", 1);
    mh__json_kv_string(&j, "displayTimeUnit", "ms");
    mh__json_kv_uint(&j, "baseTimeNanoseconds", t->base_ns);
    mh__json_kv_string(&j, "traceName", "memhist");
    mh__trace_write_meta(&j, r);
    mh__json_key(&j, "traceEvents");
    mh__json_begin_array(&j);
    rc = mh__trace_events_pass(t, ses, &j);
    mh__json_end_array(&j);
    mh__json_end_object(&j);
    return rc < 0 ? rc : s->error;
}

/* The instant at the job's start that anchors the time axis of a trace of
 * several files. */
static void job_start(struct mh__json *j)
{
    mh__json_begin_object(j);
    mh__json_kv_string(j, "ph", "i");
    mh__json_kv_string(j, "s", "g");
    mh__json_kv_string(j, "cat", "memhist");
    mh__json_kv_string(j, "name", "job start (the earliest recording's start)");
    mh__json_kv_int(j, "pid", 0);
    mh__json_kv_int(j, "tid", 0);
    mh__json_key(j, "ts");
    mh__json_raw(j, "0.000");
    mh__json_end_object(j);
}

int mh__trace_write_files(struct mh__trace *const *t, struct mh__session *const *ses, size_t n,
                          struct mh__sink *s)
{
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        if (!t[i]->scanned)
            rc = mh__trace_scan(t[i], ses[i]);
    if (rc < 0 || n == 0)
        return rc;
    if (t[0]->o.perfetto)
        return mh__trace_write_files_perfetto(t, ses, n, s);
    struct mh__json j;
    mh__json_init(&j, s, t[0]->o.pretty);
    mh__json_begin_object(&j);
    mh__json_kv_int(&j, "schemaVersion", 1);
    mh__json_kv_string(&j, "displayTimeUnit", "ms");
    mh__json_kv_uint(&j, "baseTimeNanoseconds", t[0]->base_ns);
    mh__json_kv_string(&j, "traceName", "memhist");
    mh__json_key(&j, "memhist_files");
    mh__json_begin_array(&j);
    for (size_t i = 0; i < n; i++) {
        mh__json_begin_object(&j);
        mh__json_kv_string(&j, "file", mh__session_path(ses[i]));
        mh__trace_write_meta(&j, mh__session_reader(ses[i]));
        mh__json_end_object(&j);
    }
    mh__json_end_array(&j);
    mh__json_key(&j, "traceEvents");
    mh__json_begin_array(&j);
    job_start(&j);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = mh__trace_events_pass(t[i], ses[i], &j);
    mh__json_end_array(&j);
    mh__json_end_object(&j);
    return rc < 0 ? rc : s->error;
}
