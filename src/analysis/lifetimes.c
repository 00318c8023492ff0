/* lifetimes.c - the lifetimes of one pass over a recording (see
 * categories.h): fed every event right after the model applied it, it holds
 * a record per allocation alive now (a slot pool, each slot named by the
 * model's first word of the allocation's block: MH_BLOCK_WORDS), the
 * step and pass spans, the facts categories depend on, each device's
 * allocated curve with its peaks, the distinct strings of the allocations
 * and the roles of their sites (site_roles.h),
 * and copies of the records live at the event indices it was asked to keep.
 * Memory follows the live allocations, the steps and the strings, never the
 * number of events. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "category_rule.h"
#include "addrmap.h"
#include "grow.h"
#include "site_roles.h"

struct slot {
    struct mh__alloc_rec rec;
    uint32_t kept;      /* index + 1 of its copy in `kept`, 0 = none */
    uint32_t next_free; /* free list: index + 1 */
    uint8_t used;
};

/* One device's allocated curve and the peak of each pass span on it. */
struct curve {
    int device;
    int64_t now;
    struct mh__life_curve c;
    struct mh__step_peak *pass_peaks; /* one per span of `passes` */
    size_t npeaks, cappeaks;
    struct mh__step_peak before; /* the highest point before the first span, which
                                 * counts as the first span's */
    /* with kept peaks: the records live at the peak whose lives ended since */
    struct mh__alloc_rec *since;
    size_t nsince, capsince;
};

/* What a later pass takes from the first (mh__lifetimes_new_after). */
struct first_pass {
    int known;
    struct mh__cat_facts facts;
    int relabeled;          /* its first step was made set-up at relabel_index */
    uint64_t relabel_index;
    int64_t relabel_step;
};

/* The block word (MH_BLOCK_WORDS) that names an allocation's slot. */
#define LIFETIMES_WORD MH__WORD_LIFETIMES

/* Strings noted lately, by id modulo the size: most allocations repeat one. */
#define RECENT_STRS 64

struct mh__lifetimes {
    struct slot *slots;
    size_t nslots, capslots;
    uint32_t free_head;
    uint64_t *moments;    /* event indices to keep the live records of, sorted */
    size_t nmoments, capmoments, next_moment;
    int keep_peaks;       /* keep the records live at each device's allocated peak */
    struct mh__alloc_rec *kept;
    size_t nkept, capkept;
    struct mh__step_span *steps;
    size_t nsteps, capsteps;
    struct mh__step_span *passes; /* steps cut again where a forward follows a backward */
    size_t npasses, cappasses;
    struct curve *curves;
    size_t ncurves, capcurves;
    uint32_t *strs; /* distinct metadata strings of the allocations */
    size_t nstrs, capstrs;
    struct mh__hmap strs_seen;
    uint32_t recent_strs[RECENT_STRS];
    uint64_t nevents;
    int64_t last_step;
    int forward_seen;  /* the current step has entered its forward phase */
    int pass_backward; /* the current pass has entered its backward phase */
    int tagged, grads_tagged;
    uint64_t ended_before; /* index of the last STEP_END + 1, 0 = none yet */
    uint32_t first_thread; /* the thread of the first allocator event */
    int thread_known, threaded;
    int relabeled;
    uint64_t relabel_index;
    int64_t relabel_step;
    int64_t newest[MH__NEWEST_DEVICES];
    struct first_pass first;
    struct mh__site_roles roles; /* once a record is tagged */
};

int mh__lifetimes_new(struct mh__lifetimes **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return MH_ENOMEM;
    (*out)->last_step = -1;
    for (size_t d = 0; d < MH__NEWEST_DEVICES; d++)
        (*out)->newest[d] = -1;
    return 0;
}

/* The smallest step >= 0 of the spans, INT64_MAX if none. */
static int64_t first_step_of(const struct mh__lifetimes *lt)
{
    int64_t first = INT64_MAX;
    for (size_t i = 0; i < lt->nsteps; i++)
        if (lt->steps[i].step >= 0 && lt->steps[i].step < first)
            first = lt->steps[i].step;
    return first;
}

static struct mh__cat_facts facts_of(const struct mh__lifetimes *lt)
{
    return (struct mh__cat_facts){first_step_of(lt), lt->tagged, lt->grads_tagged,
                                  lt->ended_before};
}

int mh__lifetimes_new_after(const struct mh__lifetimes *first, struct mh__lifetimes **out)
{
    int rc = mh__lifetimes_new(out);
    if (rc < 0)
        return rc;
    (*out)->first = (struct first_pass){1, facts_of(first), first->relabeled,
                                        first->relabel_index, first->relabel_step};
    return 0;
}

void mh__lifetimes_free(struct mh__lifetimes *lt)
{
    if (!lt)
        return;
    mh__addrmap_destroy(&lt->strs_seen);
    mh__site_roles_free(&lt->roles);
    for (size_t i = 0; i < lt->ncurves; i++) {
        free(lt->curves[i].pass_peaks);
        free(lt->curves[i].since);
    }
    free(lt->curves);
    free(lt->slots);
    free(lt->moments);
    free(lt->kept);
    free(lt->steps);
    free(lt->passes);
    free(lt->strs);
    free(lt);
}

void mh__lifetimes_keep_peaks(struct mh__lifetimes *lt)
{
    lt->keep_peaks = 1;
}

int mh__lifetimes_keep_at(struct mh__lifetimes *lt, uint64_t index)
{
    size_t i = 0;
    while (i < lt->nmoments && lt->moments[i] < index)
        i++;
    if (i < lt->nmoments && lt->moments[i] == index)
        return 0;
    if (MH__GROW(lt->moments, lt->nmoments, lt->capmoments, 8) < 0)
        return MH_ENOMEM;
    memmove(lt->moments + i + 1, lt->moments + i, (lt->nmoments - i) * sizeof *lt->moments);
    lt->moments[i] = index;
    lt->nmoments++;
    return 0;
}

/* ---- curves -------------------------------------------------------------------- */
static struct curve *curve_of(struct mh__lifetimes *lt, int device)
{
    for (size_t i = 0; i < lt->ncurves; i++)
        if (lt->curves[i].device == device)
            return &lt->curves[i];
    if (MH__GROW(lt->curves, lt->ncurves, lt->capcurves, 4) < 0)
        return NULL;
    struct curve *c = &lt->curves[lt->ncurves++];
    memset(c, 0, sizeof *c);
    c->device = device;
    for (size_t p = 0; p < lt->npasses; p++) { /* spans before its first allocation */
        if (MH__GROW(c->pass_peaks, c->npeaks, c->cappeaks, 64) < 0)
            return NULL;
        c->pass_peaks[c->npeaks++] = (struct mh__step_peak){0, lt->passes[p].first_index, 0};
    }
    return c;
}

/* After event `index` moved a curve to c->now, or began a pass span. */
static void curve_note(struct mh__lifetimes *lt, struct curve *c, uint64_t index)
{
    uint64_t v = c->now > 0 ? (uint64_t)c->now : 0;
    if (v > c->c.peak) {
        c->c.peak = v;
        c->c.peak_index = index;
        c->c.peak_pass = lt->npasses ? lt->npasses - 1 : 0;
        c->nsince = 0; /* what is live now is the peak's */
    }
    struct mh__step_peak *p = c->npeaks ? &c->pass_peaks[c->npeaks - 1] : &c->before;
    if (v > p->bytes) {
        p->index = index;
        p->bytes = v;
    }
}

static int curves_add_pass(struct mh__lifetimes *lt, uint64_t index)
{
    for (size_t i = 0; i < lt->ncurves; i++) {
        struct curve *c = &lt->curves[i];
        if (MH__GROW(c->pass_peaks, c->npeaks, c->cappeaks, 64) < 0)
            return MH_ENOMEM;
        c->pass_peaks[c->npeaks] = (struct mh__step_peak){0, index, 0};
        if (c->npeaks == 0 && c->before.bytes > 0)
            c->pass_peaks[0] = c->before;
        c->npeaks++;
    }
    return 0;
}

/* ---- spans ------------------------------------------------------------------- */
static int add_pass(struct mh__lifetimes *lt, int64_t step, uint64_t index)
{
    if (MH__GROW(lt->passes, lt->npasses, lt->cappasses, 64) < 0)
        return MH_ENOMEM;
    lt->passes[lt->npasses++] = (struct mh__step_span){step, index};
    lt->pass_backward = 0;
    return curves_add_pass(lt, index);
}

static int add_step(struct mh__lifetimes *lt, int64_t step, uint64_t index)
{
    if (MH__GROW(lt->steps, lt->nsteps, lt->capsteps, 64) < 0)
        return MH_ENOMEM;
    lt->steps[lt->nsteps++] = (struct mh__step_span){step, index};
    return add_pass(lt, step, index);
}

/* A STEP_BEGIN of the step the model has counted since the first event:
 * what came before it was set-up, so the first step and the allocations
 * made in it so far become set-up (step -1). */
static void relabel_first_step(struct mh__lifetimes *lt, int64_t step, uint64_t index)
{
    for (size_t i = 0; i < lt->nslots; i++)
        if (lt->slots[i].used && lt->slots[i].rec.alloc_step == step)
            lt->slots[i].rec.alloc_step = -1;
    for (size_t i = 0; i < lt->nkept; i++)
        if (lt->kept[i].alloc_step == step)
            lt->kept[i].alloc_step = -1;
    for (size_t c = 0; c < lt->ncurves; c++)
        for (size_t i = 0; i < lt->curves[c].nsince; i++)
            if (lt->curves[c].since[i].alloc_step == step)
                lt->curves[c].since[i].alloc_step = -1;
    lt->steps[0].step = -1;
    for (size_t i = 0; i < lt->npasses; i++)
        lt->passes[i].step = -1;
    lt->last_step = -1;
    if (!lt->relabeled) {
        lt->relabeled = 1;
        lt->relabel_index = index;
        lt->relabel_step = step;
    }
}

/* Spans and phases at event `index`; returns 1 if a pass span began. */
static int track_spans(struct mh__lifetimes *lt, const struct mh_model *m, const struct mh_event *ev,
                       uint64_t index, int *rc)
{
    int64_t step = mh_model_current_step(m);
    size_t passes = lt->npasses;
    if (ev->kind == MH_EV_STEP_END)
        lt->ended_before = index + 1;
    if (ev->kind == MH_EV_STEP_BEGIN && lt->nsteps == 1 && lt->steps[0].step == step &&
        (int64_t)ev->aux == step)
        relabel_first_step(lt, step, index);
    if (step != lt->last_step) {
        lt->last_step = step;
        lt->forward_seen = 0;
        *rc = add_step(lt, step, index);
    }
    if (ev->kind == MH_EV_PHASE && ev->aux == MH_PHASE_FORWARD) {
        lt->forward_seen = 1;
        if (lt->pass_backward && *rc == 0) /* the next micro-batch of gradient accumulation */
            *rc = add_pass(lt, step, index);
    }
    if (ev->kind == MH_EV_PHASE && ev->aux == MH_PHASE_BACKWARD)
        lt->pass_backward = 1;
    return lt->npasses != passes;
}

/* ---- allocations --------------------------------------------------------------- */
static int take_slot(struct mh__lifetimes *lt, uint32_t *idx)
{
    if (lt->free_head) {
        *idx = lt->free_head - 1;
        lt->free_head = lt->slots[*idx].next_free;
        return 0;
    }
    if (lt->nslots >= UINT32_MAX - 1 || MH__GROW(lt->slots, lt->nslots, lt->capslots, 1024) < 0)
        return MH_ENOMEM;
    *idx = (uint32_t)lt->nslots++;
    return 0;
}

static void release_slot(struct mh__lifetimes *lt, uint32_t idx)
{
    lt->slots[idx].used = 0;
    lt->slots[idx].next_free = lt->free_head;
    lt->free_head = idx + 1;
}

static int note_string(struct mh__lifetimes *lt, uint32_t str)
{
    uint32_t *recent = &lt->recent_strs[str % RECENT_STRS];
    if (!str || *recent == str)
        return 0;
    *recent = str;
    if (mh__addrmap_get(&lt->strs_seen, str))
        return 0;
    if (MH__GROW(lt->strs, lt->nstrs, lt->capstrs, 256) < 0)
        return MH_ENOMEM;
    lt->strs[lt->nstrs++] = str;
    return mh__addrmap_put(&lt->strs_seen, str, (void *)(uintptr_t)1);
}

/* The first pass made its first step set-up at relabel_index: an
 * allocation made before that in that step is set-up from the start. */
static void relabel_as_first(const struct mh__lifetimes *lt, struct mh__alloc_rec *r)
{
    const struct first_pass *f = &lt->first;
    if (f->known && f->relabeled && r->alloc_index < f->relabel_index &&
        r->alloc_step == f->relabel_step)
        r->alloc_step = -1;
}

static int on_alloc(struct mh__lifetimes *lt, const struct mh_model *m, const struct mh_event *ev,
                    const struct mh_apply_result *res, uint64_t index, struct mh__life_change *ch)
{
    uint32_t idx;
    struct curve *c = curve_of(lt, ev->device);
    if (!c || take_slot(lt, &idx) < 0)
        return MH_ENOMEM;
    struct slot *sl = &lt->slots[idx];
    memset(sl, 0, sizeof *sl);
    sl->used = 1;
    mh__alloc_rec_fill(&sl->rec, m, ev, res, index, lt->forward_seen);
    relabel_as_first(lt, &sl->rec);
    mh__newest_note(lt->newest, sl->rec.device, sl->rec.alloc_step);
    c->now += (int64_t)sl->rec.size;
    if (sl->rec.requested > c->c.max_requested)
        c->c.max_requested = sl->rec.requested;
    curve_note(lt, c, index);
    ch->began = &sl->rec;
    if (res->block_words)
        res->block_words[LIFETIMES_WORD] = idx + 1;
    return note_string(lt, sl->rec.str);
}

/* The slot of the live allocation of block words `w` (NULL: none) at
 * `addr` on `device`, or NULL. */
static struct slot *slot_of(struct mh__lifetimes *lt, const uint32_t *w, int device, uint64_t addr)
{
    uint32_t i = w ? w[LIFETIMES_WORD] : 0;
    if (i == 0 || i > lt->nslots)
        return NULL;
    struct slot *sl = &lt->slots[i - 1];
    return sl->used && sl->rec.addr == addr && sl->rec.device == device ? sl : NULL;
}

/* With kept peaks: a record live at its device's peak whose life ended. */
static int note_since_peak(struct mh__lifetimes *lt, struct curve *c, const struct mh__alloc_rec *r)
{
    if (!lt->keep_peaks || !c || !c->c.peak || r->alloc_index > c->c.peak_index)
        return 0;
    if (MH__GROW(c->since, c->nsince, c->capsince, 256) < 0)
        return MH_ENOMEM;
    c->since[c->nsince++] = *r;
    return 0;
}

static int on_free(struct mh__lifetimes *lt, const struct mh_model *m, const struct mh_event *ev,
                   const struct mh_apply_result *res, uint64_t index, struct mh__life_change *ch)
{
    struct slot *sl = slot_of(lt, res ? res->block_words : NULL, ev->device, ev->addr);
    if (!sl)
        return 0;
    struct mh__alloc_rec *r = &sl->rec;
    r->free_index = index;
    r->free_step = mh_model_device_step(m, ev->device);
    r->free_phase = (uint8_t)mh_model_current_phase(m);
    r->freed_elsewhere = ev->thread != r->thread;
    mh__newest_note(lt->newest, r->device, r->free_step);
    struct curve *c = curve_of(lt, r->device);
    if (c)
        c->now -= (int64_t)r->size;
    if (lt->first.known) /* the facts are the run's: the category is final */
        r->category = (uint8_t)mh__category_of(r, &lt->first.facts, -1);
    if (sl->kept)
        lt->kept[sl->kept - 1] = *r;
    ch->ended = r; /* the slot is reused by a later event only */
    release_slot(lt, (uint32_t)(sl - lt->slots));
    int rc = lt->tagged ? mh__site_roles_note(&lt->roles, r) : 0;
    return rc ? rc : note_since_peak(lt, c, r);
}

static void on_tag(struct mh__lifetimes *lt, const struct mh_model *m, const struct mh_event *ev)
{
    struct slot *sl =
        slot_of(lt, mh_model_block_words(m, ev->device, ev->addr), ev->device, ev->addr);
    struct mh__alloc_rec *r = sl ? &sl->rec : NULL;
    if (ev->aux == MH_ROLE_OUTPUT) { /* not a role: the module that returned it last */
        if (r)
            r->out_str = ev->str;
        return;
    }
    if (r && ev->aux < MH_ROLE_COUNT)
        r->role = (uint8_t)ev->aux;
    if (r && ev->str)
        r->tag_str = ev->str;
    lt->tagged = 1;
    lt->grads_tagged |= ev->aux == MH_ROLE_GRADIENT;
}

static void note_thread(struct mh__lifetimes *lt, uint32_t thread)
{
    if (!lt->thread_known) {
        lt->thread_known = 1;
        lt->first_thread = thread;
    }
    lt->threaded |= thread != lt->first_thread;
}

/* Copies the records live after event `index` if it is one to keep. */
static int keep_moment(struct mh__lifetimes *lt, uint64_t index)
{
    if (lt->next_moment >= lt->nmoments || lt->moments[lt->next_moment] != index)
        return 0;
    lt->next_moment++;
    for (size_t i = 0; i < lt->nslots; i++) {
        struct slot *sl = &lt->slots[i];
        if (!sl->used || sl->kept)
            continue;
        if (lt->nkept >= UINT32_MAX - 1 || MH__GROW(lt->kept, lt->nkept, lt->capkept, 1024) < 0)
            return MH_ENOMEM;
        lt->kept[lt->nkept++] = sl->rec;
        sl->kept = (uint32_t)lt->nkept;
    }
    return 0;
}

static int observe_allocator(struct mh__lifetimes *lt, const struct mh_model *m,
                             const struct mh_event *ev, const struct mh_apply_result *res,
                             uint64_t index, struct mh__life_change *ch)
{
    if (res && res->anomaly)
        return 0;
    if (ev->kind == MH_EV_TAG) {
        on_tag(lt, m, ev);
        return 0;
    }
    if (ev->kind == MH_EV_ALLOC && res) {
        note_thread(lt, ev->thread);
        return on_alloc(lt, m, ev, res, index, ch);
    }
    if (ev->kind == MH_EV_FREE_REQUESTED ||
        (ev->kind == MH_EV_FREE_COMPLETED && res && res->allocated_delta < 0)) {
        note_thread(lt, ev->thread);
        return on_free(lt, m, ev, res, index, ch);
    }
    return 0;
}

int mh__lifetimes_observe(struct mh__lifetimes *lt, const struct mh_model *m,
                          const struct mh_event *ev, const struct mh_apply_result *res,
                          struct mh__life_change *change)
{
    struct mh__life_change own;
    struct mh__life_change *ch = change ? change : &own;
    uint64_t index = lt->nevents++;
    int rc = 0;
    memset(ch, 0, sizeof *ch);
    int began = track_spans(lt, m, ev, index, &rc);
    if (rc < 0)
        return rc;
    if ((rc = observe_allocator(lt, m, ev, res, index, ch)) < 0)
        return rc;
    if (began) /* the span's peak so far is the value after its first event */
        for (size_t i = 0; i < lt->ncurves; i++)
            curve_note(lt, &lt->curves[i], index);
    return keep_moment(lt, index);
}

/* ---- the end of the pass ------------------------------------------------------- */
static int by_alloc_index(const void *a, const void *b)
{
    const struct mh__alloc_rec *x = a, *y = b;
    return (x->alloc_index > y->alloc_index) - (x->alloc_index < y->alloc_index);
}

static int keep_copy(struct mh__lifetimes *lt, const struct mh__alloc_rec *r)
{
    if (MH__GROW(lt->kept, lt->nkept, lt->capkept, 1024) < 0)
        return MH_ENOMEM;
    lt->kept[lt->nkept++] = *r;
    return 0;
}

/* With kept peaks: the records live at each device's peak join the kept
 * ones (those ended since, those alive now that began by then). */
static int keep_peak_records(struct mh__lifetimes *lt)
{
    int rc = 0;
    for (size_t k = 0; k < lt->ncurves && rc == 0 && lt->keep_peaks; k++) {
        const struct curve *c = &lt->curves[k];
        for (size_t i = 0; i < c->nsince && rc == 0; i++)
            rc = keep_copy(lt, &c->since[i]);
        for (size_t i = 0; i < lt->nslots && rc == 0 && c->c.peak; i++) {
            const struct slot *sl = &lt->slots[i];
            if (sl->used && !sl->kept && sl->rec.device == c->device &&
                sl->rec.alloc_index <= c->c.peak_index)
                rc = keep_copy(lt, &sl->rec);
        }
    }
    return rc;
}

/* Drops the copies of one record kept twice (at a moment and a peak). */
static void drop_duplicates(struct mh__lifetimes *lt)
{
    size_t out = 0;
    for (size_t i = 0; i < lt->nkept; i++)
        if (out == 0 || lt->kept[out - 1].alloc_index != lt->kept[i].alloc_index)
            lt->kept[out++] = lt->kept[i];
    lt->nkept = out;
}

int mh__lifetimes_finish(struct mh__lifetimes *lt,
                         int (*alive)(void *user, const struct mh__alloc_rec *r), void *user)
{
    const struct mh__cat_facts f = facts_of(lt);
    int rc = keep_peak_records(lt);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < lt->ncurves; i++)
        for (size_t p = 0; p < lt->curves[i].npeaks && p < lt->npasses; p++)
            lt->curves[i].pass_peaks[p].step = lt->passes[p].step;
    for (size_t i = 0; i < lt->nkept; i++) {
        struct mh__alloc_rec *r = &lt->kept[i];
        r->category = (uint8_t)mh__category_of(r, &f, mh__newest_on(lt->newest, r->device));
    }
    for (size_t i = 0; i < lt->nslots && rc == 0; i++) {
        struct slot *sl = &lt->slots[i];
        if (!sl->used)
            continue;
        sl->rec.category =
            (uint8_t)mh__category_of(&sl->rec, &f, mh__newest_on(lt->newest, sl->rec.device));
        if (sl->kept)
            lt->kept[sl->kept - 1] = sl->rec;
        if (lt->tagged)
            rc = mh__site_roles_note(&lt->roles, &sl->rec);
        if (alive && rc == 0)
            rc = alive(user, &sl->rec);
    }
    if (lt->nkept)
        qsort(lt->kept, lt->nkept, sizeof *lt->kept, by_alloc_index);
    drop_duplicates(lt);
    for (size_t i = 0; i < lt->nslots; i++)
        lt->slots[i].kept = 0; /* the copies were sorted */
    return rc;
}

/* ---- queries --------------------------------------------------------------------- */
const struct mh__alloc_rec *mh__lifetimes_records(const struct mh__lifetimes *lt, size_t *n)
{
    *n = lt->nkept;
    return lt->kept;
}

const struct mh__step_span *mh__lifetimes_steps(const struct mh__lifetimes *lt, size_t *n)
{
    *n = lt->nsteps;
    return lt->steps;
}

const struct mh__step_span *mh__lifetimes_passes(const struct mh__lifetimes *lt, size_t *n)
{
    *n = lt->npasses;
    return lt->passes;
}

uint64_t mh__lifetimes_event_count(const struct mh__lifetimes *lt)
{
    return lt->nevents;
}

int mh__lifetimes_threaded(const struct mh__lifetimes *lt)
{
    return lt->threaded;
}

int64_t mh__lifetimes_step_of(const struct mh__lifetimes *lt, uint64_t index)
{
    size_t lo = 0, hi = lt->nsteps; /* last span with first_index <= index */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (lt->steps[mid].first_index <= index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lt->steps[lo - 1].step : -1;
}

static const struct curve *find_curve(const struct mh__lifetimes *lt, int device)
{
    for (size_t i = 0; i < lt->ncurves; i++)
        if (lt->curves[i].device == device)
            return &lt->curves[i];
    return NULL;
}

void mh__lifetimes_curve(const struct mh__lifetimes *lt, int device, struct mh__life_curve *out)
{
    const struct curve *c = find_curve(lt, device);
    memset(out, 0, sizeof *out);
    if (c)
        *out = c->c;
}

const struct mh__step_peak *mh__lifetimes_pass_peaks(const struct mh__lifetimes *lt, int device)
{
    const struct curve *c = find_curve(lt, device);
    return c ? c->pass_peaks : NULL;
}

int mh__lifetimes_site_role(const struct mh__lifetimes *lt, uint32_t str, uint32_t stack)
{
    return mh__site_roles_of(&lt->roles, str, stack);
}

const uint32_t *mh__lifetimes_strings(const struct mh__lifetimes *lt, size_t *n)
{
    *n = lt->nstrs;
    return lt->strs;
}

static int kept_moment(const struct mh__lifetimes *lt, uint64_t index)
{
    for (size_t i = 0; i < lt->nmoments; i++)
        if (lt->moments[i] == index)
            return 1;
    for (size_t i = 0; i < lt->ncurves && lt->keep_peaks; i++)
        if (lt->curves[i].c.peak && lt->curves[i].c.peak_index == index)
            return 1;
    return 0;
}

int mh__lifetimes_peaks_kept(const struct mh__lifetimes *lt)
{
    return lt->keep_peaks && !lt->relabeled;
}

int mh__lifetimes_holds(const struct mh__lifetimes *lt, uint64_t index)
{
    return kept_moment(lt, index) && (!lt->relabeled || lt->first.known);
}

int mh__lifetimes_live_by_category(const struct mh__lifetimes *lt, int device, uint64_t index,
                                   uint64_t bytes[MH__CAT_COUNT], uint64_t *requested)
{
    memset(bytes, 0, MH__CAT_COUNT * sizeof *bytes);
    if (requested)
        memset(requested, 0, MH__CAT_COUNT * sizeof *requested);
    if (!kept_moment(lt, index))
        return MH_EINVAL;
    for (size_t i = 0; i < lt->nkept; i++) {
        const struct mh__alloc_rec *r = &lt->kept[i];
        if (r->device != device || !mh__alloc_rec_live_at(r, index))
            continue;
        bytes[r->category] += r->size;
        if (requested)
            requested[r->category] += r->requested;
    }
    return 0;
}
