/* view_timeline.c - the timeline of `memhist view`: one streaming pass over
 * the recording (a session observer, session.h) that keeps, per device,
 * the lowest and highest allocated and reserved bytes in each bucket of
 * events at two levels of detail (2048 buckets over the whole run, then
 * 32768), each step's first and last event, and the allocator events
 * themselves for a few chosen steps (or, without steps, around the
 * allocated peak), so the page zooms down to single events without ever
 * holding every event; the whole-run level also keeps, at each bucket's
 * highest point, the bytes of the sites largest at the peak, and the pass
 * notes where each phase starts. Memory follows the buckets and the kept
 * events, not the run. A bucket no event of the device falls in carries
 * the state from its left. The pass is usually the layers analysis's, which
 * this observer rides (view_part.c). */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "grow.h"
#include "session.h"
#include "view_int.h"

#define VT_LEVELS 2
#define VT_GROUPS 8
#define VT_MAX_PHASES 60000
static const size_t level_buckets[VT_LEVELS] = {2048, 32768};

struct vt_level {
    size_t n;     /* buckets */
    int64_t last; /* last bucket filled, -1 before the first */
    uint64_t *amin, *amax, *rmin, *rmax;
};

struct vt_span {
    int64_t step;
    uint64_t first, last, count;
};

struct vt_event {
    uint64_t index, size, allocated, reserved;
    uint32_t stack;
    uint8_t kind;
    int64_t step;
};

struct vt_device {
    int device;
    int64_t allocated, reserved;
    struct vt_level lv[VT_LEVELS];
    struct vt_span *spans;
    size_t nspans, capspans;
    int64_t *want_steps; /* sorted: steps whose events are kept */
    size_t nwant;
    uint64_t lo, hi; /* without steps: the window of kept events */
    struct vt_event *ev;
    size_t nev, capev;
    uint64_t step_kept; /* events kept of the current span */
    uint64_t dropped;   /* events of wanted steps past the limits */
    /* the whole-run level stacked by site: the largest groups at the
     * allocated peak (device_report.h), then everything else */
    uint32_t gstack[VT_GROUPS];
    size_t ng;
    int64_t gnow[VT_GROUPS + 1];
    uint64_t *gcol; /* (ng + 1) per bucket of level 0, at its allocated maximum */
};

struct vt_phase {
    uint64_t index;
    uint32_t phase; /* enum mh_phase */
};

struct mh__vt {
    uint64_t events;         /* of the first pass: what the buckets divide */
    struct vt_phase *phases; /* where each phase starts, at most VT_MAX_PHASES */
    size_t nphases, capphases;
    uint64_t phases_dropped;
    struct vt_device *dev;
    size_t ndev;
    size_t max_events, max_step_events;
    int coarse_only;
    int done; /* a pass it observed ended */
    struct mh__observer ob;
};

static int is_allocator(unsigned kind)
{
    return kind <= MH_EV_OOM && kind != MH_EV_SNAPSHOT;
}

static struct vt_device *find_device(struct mh__vt *t, int device)
{
    for (size_t i = 0; i < t->ndev; i++)
        if (t->dev[i].device == device)
            return &t->dev[i];
    return NULL;
}

static void fill_to(struct vt_level *l, int64_t b, uint64_t a, uint64_t r)
{
    while (l->last < b) {
        size_t i = (size_t)++l->last;
        l->amin[i] = l->amax[i] = a;
        l->rmin[i] = l->rmax[i] = r;
    }
}

static void copy_groups(struct vt_device *d, size_t bucket)
{
    for (size_t g = 0; g <= d->ng; g++)
        d->gcol[bucket * (d->ng + 1) + g] = d->gnow[g] > 0 ? (uint64_t)d->gnow[g] : 0;
}

/* Level 0's buckets up to `b` carry the state before the event, groups too. */
static void fill_groups_to(struct vt_device *d, int64_t b, uint64_t a, uint64_t r)
{
    struct vt_level *l = &d->lv[0];
    while (l->last < b) {
        copy_groups(d, (size_t)l->last + 1);
        fill_to(l, l->last + 1, a, r);
    }
}

/* The site group of an allocation's stack (the last one: everything else). */
static size_t group_of(const struct vt_device *d, uint32_t stack)
{
    for (size_t g = 0; g < d->ng; g++)
        if (d->gstack[g] == stack)
            return g;
    return d->ng;
}

static void bucket_event(struct mh__vt *t, struct vt_device *d, uint64_t index,
                         const struct mh_apply_result *res)
{
    uint64_t a0 = (uint64_t)d->allocated, r0 = (uint64_t)d->reserved;
    d->allocated += res->allocated_delta;
    d->reserved += res->reserved_delta;
    uint64_t a = (uint64_t)d->allocated, r = (uint64_t)d->reserved;
    for (int k = 0; k < VT_LEVELS; k++) {
        struct vt_level *l = &d->lv[k];
        uint64_t b = t->events ? index * l->n / t->events : 0;
        if (b >= l->n)
            b = l->n - 1;
        if (k == 0) {
            fill_groups_to(d, (int64_t)b, a0, r0);
            d->gnow[group_of(d, res->block_stack)] += res->allocated_delta;
            if (a > l->amax[b])
                copy_groups(d, b);
        }
        fill_to(l, (int64_t)b, a0, r0);
        l->amin[b] = a < l->amin[b] ? a : l->amin[b];
        l->amax[b] = a > l->amax[b] ? a : l->amax[b];
        l->rmin[b] = r < l->rmin[b] ? r : l->rmin[b];
        l->rmax[b] = r > l->rmax[b] ? r : l->rmax[b];
    }
}

static int wanted(const struct vt_device *d, int64_t step, uint64_t index)
{
    if (!d->nwant)
        return index >= d->lo && index <= d->hi;
    size_t lo = 0, hi = d->nwant;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->want_steps[mid] < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < d->nwant && d->want_steps[lo] == step;
}

static int track_step(struct vt_device *d, int64_t step, uint64_t index)
{
    struct vt_span *s = d->nspans ? &d->spans[d->nspans - 1] : NULL;
    if (s && s->step == step) {
        s->last = index;
        s->count++;
        return 0;
    }
    if (MH__GROW(d->spans, d->nspans, d->capspans, 64) < 0)
        return MH_ENOMEM;
    d->spans[d->nspans++] = (struct vt_span){step, index, index, 1};
    d->step_kept = 0;
    return 0;
}

static int keep_event(struct mh__vt *t, struct vt_device *d, const struct mh_event *ev,
                      const struct mh_apply_result *res, uint64_t index, int64_t step)
{
    if (!wanted(d, step, index))
        return 0;
    if (d->nev >= t->max_events || d->step_kept >= t->max_step_events) {
        d->dropped++;
        return 0;
    }
    if (MH__GROW(d->ev, d->nev, d->capev, 1024) < 0)
        return MH_ENOMEM;
    uint32_t stack = res->block_size ? res->block_stack : ev->stack;
    d->ev[d->nev++] = (struct vt_event){
        index, ev->size, (uint64_t)d->allocated, (uint64_t)d->reserved, stack, ev->kind, step};
    d->step_kept++;
    return 0;
}

static int note_phase(struct mh__vt *t, uint64_t index, uint32_t phase)
{
    if (t->nphases && t->phases[t->nphases - 1].phase == phase)
        return 0;
    if (t->nphases >= VT_MAX_PHASES) {
        t->phases_dropped++;
        return 0;
    }
    if (MH__GROW(t->phases, t->nphases, t->capphases, 256) < 0)
        return MH_ENOMEM;
    t->phases[t->nphases++] = (struct vt_phase){index, phase};
    return 0;
}

static int on_event(void *user, struct mh__session *s, const struct mh_event *ev,
                    const struct mh_apply_result *res)
{
    struct mh__vt *t = user;
    if (ev->kind == MH_EV_PHASE)
        return note_phase(t, mh__session_index(s), ev->aux);
    if (!is_allocator(ev->kind))
        return 0;
    struct vt_device *d = find_device(t, ev->device);
    if (!d)
        return 0;
    uint64_t index = mh__session_index(s);
    int64_t step = mh_model_device_step(mh__session_model(s), d->device);
    bucket_event(t, d, index, res);
    int rc = track_step(d, step, index);
    return rc ? rc : keep_event(t, d, ev, res, index, step);
}

/* A pass starts: everything a pass before gathered is forgotten. */
static int on_begin(void *user, struct mh__session *s)
{
    struct mh__vt *t = user;
    (void)s;
    t->done = 0;
    t->nphases = 0;
    t->phases_dropped = 0;
    for (size_t i = 0; i < t->ndev; i++) {
        struct vt_device *d = &t->dev[i];
        d->allocated = d->reserved = 0;
        for (int k = 0; k < VT_LEVELS; k++)
            d->lv[k].last = -1;
        d->nspans = d->nev = 0;
        d->step_kept = d->dropped = 0;
        memset(d->gnow, 0, sizeof d->gnow);
    }
    return 0;
}

static int on_end(void *user, struct mh__session *s)
{
    struct mh__vt *t = user;
    (void)s;
    t->done = 1;
    for (size_t i = 0; i < t->ndev; i++) {
        struct vt_device *d = &t->dev[i];
        uint64_t a = (uint64_t)d->allocated, r = (uint64_t)d->reserved;
        fill_groups_to(d, (int64_t)d->lv[0].n - 1, a, r);
        for (int k = 1; k < VT_LEVELS; k++)
            fill_to(&d->lv[k], (int64_t)d->lv[k].n - 1, a, r);
    }
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The allocator events a step holds, as the model counted them. */
static size_t step_cost(const struct mh_model *m, int device, int64_t step)
{
    struct mh_step_stats st;
    int rc = step < 0 ? mh_model_setup(m, device, &st) : mh__step_find(m, device, step, &st);
    if (rc != 0 && mh_model_tail(m, device, &st) == 0 && st.step == step)
        rc = 0;
    return rc ? 0 : st.allocs + st.frees * 2 + st.segment_allocs + st.segment_frees;
}

/* Adds a step to those kept when `force`d or while its events fit. */
static void want_step(struct vt_device *d, const struct mh_model *m, int64_t step, int force,
                      size_t *used, size_t budget)
{
    for (size_t i = 0; i < d->nwant; i++)
        if (d->want_steps[i] == step)
            return;
    size_t cost = step_cost(m, d->device, step);
    if (!force && *used + cost > budget)
        return;
    *used += cost;
    d->want_steps[d->nwant++] = step;
}

/* The steps whose events are kept: the peaks' and the OOMs' first, then
 * the set-up, the steps in order and the tail while their events fit. */
static int choose_steps(struct vt_device *d, const struct mh_model *m, size_t budget)
{
    size_t nsteps = mh_model_step_count(m, d->device), used = 0;
    d->want_steps = calloc(nsteps + 5 + mh_model_oom_count(m), sizeof *d->want_steps);
    if (!d->want_steps)
        return MH_ENOMEM;
    struct mh_peak pa, pr;
    mh_model_peak_allocated(m, d->device, &pa);
    mh_model_peak_reserved(m, d->device, &pr);
    want_step(d, m, pa.step, 1, &used, budget);
    want_step(d, m, pr.step, 1, &used, budget);
    for (size_t i = 0; i < mh_model_oom_count(m); i++) {
        struct mh_oom_info o;
        if (mh_model_oom(m, i, &o) == 0 && o.device == d->device)
            want_step(d, m, o.step, 1, &used, budget);
    }
    want_step(d, m, -1, 0, &used, budget);
    for (size_t i = 0; i < nsteps && used < budget; i++) {
        struct mh_step_stats st;
        if (mh_model_step(m, d->device, i, &st) == 0)
            want_step(d, m, st.step, 0, &used, budget);
    }
    struct mh_step_stats tail;
    if (mh_model_tail(m, d->device, &tail) == 0)
        want_step(d, m, tail.step, 0, &used, budget);
    qsort(d->want_steps, d->nwant, sizeof *d->want_steps, cmp_i64);
    d->nwant = nsteps ? d->nwant : 0;
    uint64_t half = budget / 2;
    d->lo = pa.event_index > half ? pa.event_index - half : 0;
    d->hi = pa.event_index + half;
    return 0;
}

static int device_new(struct mh__vt *t, struct vt_device *d, int device, const struct mh_model *m)
{
    d->device = device;
    for (int k = 0; k < VT_LEVELS; k++) {
        struct vt_level *l = &d->lv[k];
        size_t want = t->coarse_only ? level_buckets[0] : level_buckets[k];
        l->n = t->events < want ? (t->events ? t->events : 1) : want;
        l->last = -1;
        l->amin = calloc(l->n * 4, sizeof *l->amin);
        if (!l->amin)
            return MH_ENOMEM;
        l->amax = l->amin + l->n;
        l->rmin = l->amax + l->n;
        l->rmax = l->rmin + l->n;
    }
    return choose_steps(d, m, t->max_events);
}

/* The site groups the whole-run level is stacked by. */
static int device_groups(struct vt_device *d, const struct mh__analysis *a)
{
    struct mh__stack_group *top = NULL;
    size_t n = 0;
    uint64_t bytes, count;
    if (a->peaks && mh__peak_groups_get(a->peaks, a->rp.model, d->device, VT_GROUPS, &top, &n,
                                        &bytes, &count) < 0)
        return MH_ENOMEM;
    for (size_t g = 0; g < n && g < VT_GROUPS; g++)
        d->gstack[d->ng++] = top[g].stack;
    free(top);
    d->gcol = calloc(d->lv[0].n * (d->ng + 1), sizeof *d->gcol);
    return d->gcol ? 0 : MH_ENOMEM;
}

void mh__vt_free(struct mh__vt *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->ndev; i++) {
        for (int k = 0; k < VT_LEVELS; k++)
            free(t->dev[i].lv[k].amin);
        free(t->dev[i].spans);
        free(t->dev[i].want_steps);
        free(t->dev[i].ev);
        free(t->dev[i].gcol);
    }
    free(t->dev);
    free(t->phases);
    free(t);
}

int mh__vt_new(const struct mh__analysis *a, const struct mh__view_opts *o, struct mh__vt **out)
{
    const struct mh_model *m = a->rp.model;
    struct mh__vt *t = calloc(1, sizeof *t);
    int rc = t ? 0 : MH_ENOMEM;
    if (t) {
        t->events = a->rp.summary.events;
        t->max_events = o->max_events;
        t->max_step_events = o->max_step_events;
        t->coarse_only = o->coarse_only;
        t->ndev = mh_model_device_count(m);
        t->dev = calloc(t->ndev ? t->ndev : 1, sizeof *t->dev);
        t->ob = (struct mh__observer){"view timeline", t, on_begin, on_event, on_end};
        rc = t->dev ? 0 : MH_ENOMEM;
    }
    for (size_t i = 0; rc == 0 && i < t->ndev; i++) {
        rc = device_new(t, &t->dev[i], mh_model_device_at(m, i), m);
        rc = rc ? rc : device_groups(&t->dev[i], a);
    }
    if (rc < 0) {
        mh__vt_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

const struct mh__observer *mh__vt_observer(struct mh__vt *t)
{
    return &t->ob;
}

int mh__vt_observed(const struct mh__vt *t)
{
    return t->done;
}

int mh__vt_pass(const struct mh__analysis *a, struct mh__vt *t)
{
    return mh__session_pass(a->session, &t->ob);
}

/* Bytes in KiB: the lowest rounded down, the highest up. */
static void json_kib(struct mh__json *j, const char *key, const uint64_t *v, size_t n, int up)
{
    mh__json_key(j, key);
    mh__json_begin_array(j);
    for (size_t i = 0; i < n; i++)
        mh__json_uint(j, up ? (v[i] + 1023) / 1024 : v[i] / 1024);
    mh__json_end_array(j);
}

static void json_groups(const struct vt_device *d, struct mh__json *j, struct mh__vstr *s,
                        const struct mh_reader *r)
{
    mh__json_key(j, "groups"); /* site labels; the last is everything else */
    mh__json_begin_array(j);
    for (size_t g = 0; g < d->ng; g++)
        mh__json_uint(j, mh__vstr_stack(s, r, d->gstack[g]));
    mh__json_end_array(j);
    json_kib(j, "group_bytes", d->gcol, d->lv[0].n * (d->ng + 1), 1);
}

static void json_levels(const struct mh__vt *t, const struct vt_device *d, struct mh__json *j,
                        struct mh__vstr *s, const struct mh_reader *r)
{
    mh__json_key(j, "timeline");
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "events", t->events);
    mh__json_kv_string(j, "unit", "KiB");
    mh__json_key(j, "levels");
    mh__json_begin_array(j);
    for (int k = 0; k < VT_LEVELS; k++) {
        const struct vt_level *l = &d->lv[k];
        if (k > 0 && l->n <= d->lv[k - 1].n)
            break;
        mh__json_begin_object(j);
        mh__json_kv_uint(j, "buckets", l->n);
        json_kib(j, "amin", l->amin, l->n, 0);
        json_kib(j, "amax", l->amax, l->n, 1);
        json_kib(j, "rmin", l->rmin, l->n, 0);
        json_kib(j, "rmax", l->rmax, l->n, 1);
        if (k == 0)
            json_groups(d, j, s, r);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
    mh__json_kv_uint(j, "phases_dropped", t->phases_dropped);
    mh__json_key(j, "phases"); /* [first event, phase]: forward 1, backward 2, optimizer 3 */
    mh__json_begin_array(j);
    for (size_t i = 0; i < t->nphases; i++) {
        mh__json_uint(j, t->phases[i].index);
        mh__json_uint(j, t->phases[i].phase);
    }
    mh__json_end_array(j);
    mh__json_key(j, "spans"); /* [step, first event, last event, events] */
    mh__json_begin_array(j);
    for (size_t i = 0; i < d->nspans; i++) {
        mh__json_begin_array(j);
        mh__json_int(j, d->spans[i].step);
        mh__json_uint(j, d->spans[i].first);
        mh__json_uint(j, d->spans[i].last);
        mh__json_uint(j, d->spans[i].count);
        mh__json_end_array(j);
    }
    mh__json_end_array(j);
    mh__json_end_object(j);
}

static void json_events(const struct mh__vt *t, const struct vt_device *d, struct mh__json *j,
                        struct mh__vstr *s, const struct mh_reader *r)
{
    mh__json_key(j, "events");
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "limit", t->max_events);
    mh__json_kv_uint(j, "step_limit", t->max_step_events);
    mh__json_kv_uint(j, "dropped", d->dropped);
    mh__json_kv_bool(j, "by_step", d->nwant > 0);
    if (!d->nwant) { /* the window kept around the peak, every event of it */
        mh__json_key(j, "window");
        mh__json_begin_array(j);
        mh__json_uint(j, d->lo);
        mh__json_uint(j, d->hi < t->events ? d->hi : t->events);
        mh__json_end_array(j);
    }
    mh__json_key(j, "list"); /* [index, kind, size, allocated, reserved, site, step] */
    mh__json_begin_array(j);
    for (size_t i = 0; i < d->nev; i++) {
        const struct vt_event *e = &d->ev[i];
        mh__json_begin_array(j);
        mh__json_uint(j, e->index);
        mh__json_uint(j, e->kind); /* the page's event_kinds */
        mh__json_uint(j, e->size);
        mh__json_uint(j, e->allocated);
        mh__json_uint(j, e->reserved);
        mh__json_uint(j, mh__vstr_stack(s, r, e->stack));
        mh__json_int(j, e->step);
        mh__json_end_array(j);
    }
    mh__json_end_array(j);
    mh__json_end_object(j);
}

void mh__vt_device_json(const struct mh__vt *t, int device, struct mh__json *j, struct mh__vstr *s,
                        const struct mh_reader *r)
{
    const struct vt_device *d = find_device((struct mh__vt *)t, device);
    if (!d)
        return;
    json_levels(t, d, j, s, r);
    json_events(t, d, j, s, r);
}
