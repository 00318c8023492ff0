/* steps.c - training steps, phases, peaks and per-step statistics.
 *
 * Step numbering. Events before any step marker belong to step -1, which is
 * never listed; when a STEP_BEGIN ends it, its statistics are kept apart as
 * the set-up (mh_model_setup). A STEP_BEGIN(N) while N is the first step
 * and still open (a recorder opens step 0 when it starts, the model's first
 * forward opens it again) turns what N held so far into that set-up. STEP_BEGIN(N) closes the open step and opens N. STEP_END(N)
 * closes the open step and records it as step N (the marker's number wins);
 * step N+1 then opens implicitly at the next event that carries a time, so
 * traces with only STEP_END markers still get per-step statistics. When the
 * first marker is a STEP_END(N), the period from the start of the trace is
 * step N (there is no other place its allocations could belong), and peaks,
 * OOMs and live blocks recorded as step -1 are relabelled N.
 *
 * The "reserved peak" moment of a step is the event at which reserved is at
 * its maximum for the step and, among those, allocated is highest: the
 * moment of greatest memory use, not the SEGMENT_ALLOC just before the
 * allocation that needed it. fragmentation, inactive split bytes and the
 * largest free block are taken at that moment.
 *
 * Retries (an approximation from the trace alone): a burst of SEGMENT_FREE /
 * SEGMENT_UNMAP events on a device immediately followed by a SEGMENT_ALLOC,
 * SEGMENT_MAP or OOM on that device counts one retry, which is what a
 * malloc that released cached blocks and tried again leaves behind. An
 * empty_cache() directly followed by an allocation that needs a new segment
 * looks the same and is counted too.
 *
 * Steps per device. A STEP_END flagged MH_EVF_DEVICE_STEP (an Optimizer.step
 * over parameters on its device) closes that device's step only; from the
 * first such marker on, the device follows its own markers and markers for
 * every device leave it alone. A period in which a device did nothing
 * (no allocator event) is not one of its steps. When steps are closed by
 * STEP_END markers, what follows the last one is not a step: it is kept as
 * the device's tail ("after step N", mh_model_tail), out of the step list
 * and so out of every trend. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "model_int.h"

static void acc_begin(struct mh__device *d, int64_t step, uint64_t t)
{
    struct mh_step_stats *s = &d->acc.s;
    memset(&d->acc, 0, sizeof d->acc);
    d->acc.open = 1;
    s->step = step;
    s->begin_ns = t;
    s->peak_allocated = d->stats.allocated;
    s->peak_reserved = d->stats.reserved;
    s->allocated_at_reserved_peak = d->stats.allocated;
    s->inactive_split_at_reserved_peak = d->stats.inactive_split;
    s->largest_free_at_reserved_peak = mh__fheap_max(&d->free_heap);
}

static int push_step(struct mh__device *d, const struct mh_step_stats *s)
{
    if (d->nsteps == d->capsteps) {
        size_t cap = d->capsteps ? d->capsteps * 2 : 16;
        struct mh_step_stats *v = realloc(d->steps, cap * sizeof *v);
        if (!v)
            return -1;
        d->steps = v;
        d->capsteps = cap;
    }
    d->steps[d->nsteps++] = *s;
    return 0;
}

/* The device had no allocator event in the period. */
static int idle(const struct mh_step_stats *s)
{
    return !(s->allocs | s->frees | s->segment_allocs | s->segment_frees | s->ooms);
}

/* Ends d's open period as `label`. */
static struct mh_step_stats *acc_end(struct mh__device *d, int64_t label, uint64_t t)
{
    struct mh_step_stats *s = &d->acc.s;
    d->acc.open = 0;
    s->step = label;
    s->end_ns = t;
    s->end_allocated = d->stats.allocated;
    s->end_reserved = d->stats.reserved;
    s->segments_at_end = d->stats.segments;
    s->fragmentation =
        s->peak_reserved ? 1.0 - (double)s->allocated_at_reserved_peak / (double)s->peak_reserved
                         : 0.0;
    return s;
}

/* Closes the period on every device that follows the markers for all
 * devices; `listed` steps are kept where the device did something. */
static int close_period(struct mh_model *m, int64_t label, uint64_t t, int listed)
{
    int rc = 0;
    for (size_t i = 0; i < m->ndev; i++) {
        struct mh__device *d = m->dev[m->devlist[i]];
        if (!d->acc.open || d->own_steps)
            continue;
        struct mh_step_stats *s = acc_end(d, label, t);
        if (listed)
            m->step_closed = 1;
        if (listed && !idle(s) && push_step(d, s))
            rc = MH_ENOMEM;
        else if (!listed && label < 0) { /* set-up, closed by the first STEP_BEGIN */
            d->setup = *s;
            d->has_setup = 1;
        }
    }
    return rc;
}

static void open_period(struct mh_model *m, int64_t step, uint64_t t)
{
    m->step_state = MH__STEPS_OPEN;
    m->cur_step = step;
    m->period_begin_ns = t;
    for (size_t i = 0; i < m->ndev; i++)
        if (!m->dev[m->devlist[i]]->own_steps)
            acc_begin(m->dev[m->devlist[i]], step, t);
}

static void relabel_device_setup(struct mh_model *m, struct mh__device *d, int64_t step);

int64_t mh__device_step(const struct mh_model *m, const struct mh__device *d)
{
    return d->own_steps ? d->own_step : m->cur_step;
}

/* STEP_END(N) flagged for device d: d's open period is its step N (unless d
 * did nothing in it) and its step N+1 opens at once; a period still open at
 * the end of the input is the tail. */
int mh__steps_device_end(struct mh_model *m, struct mh__device *d, const struct mh_event *ev)
{
    uint64_t t = ev->time_ns ? ev->time_ns : m->last_time_ns;
    int64_t n = (int64_t)ev->aux;
    int rc = 0;
    if (!d->acc.open) /* between a global STEP_END and the next event, or set-up */
        acc_begin(d, n, m->step_state == MH__STEPS_SETUP ? m->period_begin_ns : t);
    if (!d->own_steps && m->step_state == MH__STEPS_SETUP)
        relabel_device_setup(m, d, n); /* no step opened before: the start is step N */
    struct mh_step_stats *s = acc_end(d, n, t);
    if (!idle(s))
        rc = push_step(d, s) ? MH_ENOMEM : 0;
    d->own_steps = 1;
    d->own_step = n + 1;
    if (n + 1 > m->cur_step) /* the process's step: its most advanced device's */
        m->cur_step = n + 1;
    acc_begin(d, n + 1, t);
    m->step_closed = 1;
    m->any_step = 1;
    m->saw_end = 1;
    return rc;
}

static int relabel_block(void *user, struct mh__segment *s)
{
    int64_t step = *(const int64_t *)user;
    for (struct mh__block *b = s->first; b; b = b->next)
        if (b->state != MH_BLOCK_INACTIVE && b->alloc_step == -1)
            b->alloc_step = step;
    return 0;
}

/* Blocks of step *user go back to the set-up (-1). */
static int relabel_from(void *user, struct mh__segment *s)
{
    int64_t step = *(const int64_t *)user;
    for (struct mh__block *b = s->first; b; b = b->next)
        if (b->state != MH_BLOCK_INACTIVE && b->alloc_step == step)
            b->alloc_step = -1;
    return 0;
}

/* Device d's set-up period turned out to be its step N. */
static void relabel_device_setup(struct mh_model *m, struct mh__device *d, int64_t step)
{
    if (d->peak_allocated.step == -1)
        d->peak_allocated.step = step;
    if (d->peak_reserved.step == -1)
        d->peak_reserved.step = step;
    mh__segtree_walk(d->root, relabel_block, &step);
    for (size_t i = 0; i < m->nooms; i++)
        if (m->ooms[i].device == d->index && m->ooms[i].step == -1)
            m->ooms[i].step = step;
}

/* The setup period turned out to be step N (first marker was STEP_END(N)). */
static void relabel_setup(struct mh_model *m, int64_t step)
{
    for (size_t i = 0; i < m->ndev; i++)
        relabel_device_setup(m, m->dev[m->devlist[i]], step);
}

void mh__steps_device_init(struct mh_model *m, struct mh__device *d)
{
    d->peak_allocated.step = d->peak_reserved.step = -1;
    if (m->step_state != MH__STEPS_PENDING)
        acc_begin(d, m->cur_step, m->period_begin_ns);
}

void mh__steps_event(struct mh_model *m, const struct mh_event *ev)
{
    if (!ev->time_ns)
        return;
    if (m->step_state == MH__STEPS_SETUP && !m->period_begin_ns) {
        m->period_begin_ns = ev->time_ns;
        for (size_t i = 0; i < m->ndev; i++)
            m->dev[m->devlist[i]]->acc.s.begin_ns = ev->time_ns;
    }
    if (m->step_state == MH__STEPS_PENDING && ev->kind != MH_EV_STEP_BEGIN)
        open_period(m, m->cur_step, ev->time_ns);
    if (ev->time_ns > m->last_time_ns)
        m->last_time_ns = ev->time_ns;
}

/* The first step, opened at the recording's start, opened again by the
 * model's first forward: what it held so far was the set-up (step -1). */
static int reopen_as_setup(struct mh_model *m, uint64_t t)
{
    int64_t step = m->cur_step, setup = -1;
    for (size_t i = 0; i < m->ndev; i++) {
        struct mh__device *d = m->dev[m->devlist[i]];
        if (d->peak_allocated.step == step)
            d->peak_allocated.step = setup;
        if (d->peak_reserved.step == step)
            d->peak_reserved.step = setup;
        mh__segtree_walk(d->root, relabel_from, &step);
    }
    return close_period(m, setup, t, 0);
}

static int step_end(struct mh_model *m, int64_t n, uint64_t t)
{
    int rc = 0;
    if (m->step_state == MH__STEPS_PENDING) /* untimed marker right after another */
        open_period(m, m->cur_step, t);
    if (m->step_state == MH__STEPS_SETUP)
        relabel_setup(m, n);
    rc = close_period(m, n, t, 1);
    m->saw_end = 1;
    m->step_state = MH__STEPS_PENDING;
    m->cur_step = n + 1;
    m->any_step = 1;
    return rc;
}

int mh__steps_marker(struct mh_model *m, const struct mh_event *ev)
{
    uint64_t t = ev->time_ns ? ev->time_ns : m->last_time_ns;
    int rc = 0;
    switch (ev->kind) {
    case MH_EV_STEP_BEGIN:
        if (m->step_state == MH__STEPS_OPEN && !m->step_closed && (int64_t)ev->aux == m->cur_step)
            rc = reopen_as_setup(m, t); /* the first step opened again: set-up so far */
        else if (m->step_state != MH__STEPS_PENDING)
            rc = close_period(m, m->cur_step, t, m->step_state == MH__STEPS_OPEN);
        open_period(m, (int64_t)ev->aux, t);
        m->any_step = 1;
        return rc;
    case MH_EV_STEP_END:
        return step_end(m, (int64_t)ev->aux, t);
    case MH_EV_PHASE:
        m->phase = ev->aux < MH_PHASE_COUNT ? (int)ev->aux : MH_PHASE_NONE;
        return 0;
    default:
        return 0;
    }
}

static void set_peak(struct mh_peak *p, uint64_t v, const struct mh_model *m,
                     const struct mh__device *d, const struct mh_event *ev, uint64_t idx)
{
    p->value = v;
    p->time_ns = ev->time_ns ? ev->time_ns : m->last_time_ns;
    p->step = mh__device_step(m, d);
    p->event_index = idx;
}

static void reserved_peak_moment(struct mh__device *d)
{
    struct mh_step_stats *s = &d->acc.s;
    s->allocated_at_reserved_peak = d->stats.allocated;
    s->inactive_split_at_reserved_peak = d->stats.inactive_split;
    s->largest_free_at_reserved_peak = mh__fheap_max(&d->free_heap);
}

void mh__steps_observe(struct mh_model *m, struct mh__device *d, const struct mh_event *ev,
                       uint64_t idx)
{
    const struct mh_mem_stats *st = &d->stats;
    if (st->allocated > d->peak_allocated.value)
        set_peak(&d->peak_allocated, st->allocated, m, d, ev, idx);
    if (st->reserved > d->peak_reserved.value)
        set_peak(&d->peak_reserved, st->reserved, m, d, ev, idx);
    if (!d->acc.open)
        return;
    struct mh_step_stats *s = &d->acc.s;
    if (st->allocated > s->peak_allocated)
        s->peak_allocated = st->allocated;
    if (st->reserved > s->peak_reserved) {
        s->peak_reserved = st->reserved;
        reserved_peak_moment(d);
    } else if (st->reserved == s->peak_reserved && st->allocated > s->allocated_at_reserved_peak) {
        reserved_peak_moment(d);
    }
}

void mh__steps_retry_check(struct mh__device *d, unsigned kind)
{
    int release = kind == MH_EV_SEGMENT_FREE || kind == MH_EV_SEGMENT_UNMAP;
    if (d->release_burst && !release &&
        (kind == MH_EV_SEGMENT_ALLOC || kind == MH_EV_SEGMENT_MAP || kind == MH_EV_OOM))
        d->acc.s.retries++;
    d->release_burst = release;
}

/* What is open at the end: a device's tail where its steps end with
 * markers, else (steps opened by STEP_BEGIN only) its last step. */
int mh__steps_finish(struct mh_model *m)
{
    int global_tail = m->saw_end;
    for (size_t i = 0; i < m->ndev; i++) {
        struct mh__device *d = m->dev[m->devlist[i]];
        int own = d->own_steps;
        if (!d->acc.open || (!own && (!global_tail || m->step_state != MH__STEPS_OPEN)))
            continue;
        struct mh_step_stats *s = acc_end(d, own ? d->own_step : m->cur_step, m->last_time_ns);
        if (!idle(s)) {
            d->tail = *s;
            d->has_tail = 1;
        }
    }
    if (m->step_state != MH__STEPS_OPEN)
        return 0;
    m->step_state = MH__STEPS_PENDING;
    m->cur_step++;
    return global_tail ? 0 : close_period(m, m->cur_step - 1, m->last_time_ns, 1);
}

int mh_model_setup(const struct mh_model *m, int device, struct mh_step_stats *out)
{
    if (!m || device < 0 || device >= MH__MAX_DEVICES || !m->dev[device] ||
        !m->dev[device]->has_setup)
        return MH_ENOTFOUND;
    *out = m->dev[device]->setup;
    return 0;
}

int mh_model_tail(const struct mh_model *m, int device, struct mh_step_stats *out)
{
    if (!m || device < 0 || device >= MH__MAX_DEVICES || !m->dev[device] ||
        !m->dev[device]->has_tail)
        return MH_ENOTFOUND;
    *out = m->dev[device]->tail;
    return 0;
}

int64_t mh_model_device_step(const struct mh_model *m, int device)
{
    if (!m)
        return -1;
    if (device < 0 || device >= MH__MAX_DEVICES || !m->dev[device])
        return m->cur_step;
    return mh__device_step(m, m->dev[device]);
}
