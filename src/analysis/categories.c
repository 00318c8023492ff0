/* categories.c - allocation lifetimes and their categories (see
 * categories.h). Fed after the model, so block sizes are the model's (torch's
 * allocated bytes). Owns the record array, the step spans and an address map
 * from live blocks to their records. The streaming variant (mh_livecat, at
 * the end) shares the classification rule and owns only the records of
 * allocations not yet completely freed. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "categories.h"
#include "addrmap.h"
#include "grow.h"

struct mh_lifetimes {
    struct mh_alloc_rec *recs;
    size_t n, cap;
    struct mh_step_span *steps;
    size_t nsteps, capsteps;
    struct mh_step_span *passes; /* steps cut again where a forward follows a backward */
    size_t npasses, cappasses;
    struct mh_scope_mark *marks;
    size_t nmarks, capmarks;
    int pass_backward;           /* the current pass has entered its backward phase */
    struct mh__hmap live; /* device-tagged block address -> record index + 1 */
    uint64_t nevents;
    int64_t last_step;
    int forward_seen;     /* the current step has entered its forward phase */
    int tagged;           /* the file carries tensor roles (MH_EV_TAG) */
    int grads_tagged;     /* ... and gradients among them (the optimizer hooks ran) */
    uint64_t ended_before; /* index of the last STEP_END + 1, 0 = none yet */
    uint32_t first_thread; /* the thread of the first allocator event */
    int thread_known;      /* first_thread is set */
    int threaded;          /* an allocator event came from another thread */
};

const char *mh__category_name(int category)
{
    static const char *const names[MH_CAT_COUNT] = {
        "parameter", "gradient", "optimizer_state", "activation", "temporary", "input", "unknown"};
    return category >= 0 && category < MH_CAT_COUNT ? names[category] : "unknown";
}

int mh__lifetimes_new(struct mh_lifetimes **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return MH_ENOMEM;
    (*out)->last_step = -1;
    return 0;
}

void mh__lifetimes_free(struct mh_lifetimes *lt)
{
    if (!lt)
        return;
    mh__addrmap_destroy(&lt->live);
    free(lt->recs);
    free(lt->steps);
    free(lt->passes);
    free(lt->marks);
    free(lt);
}

/* Device addresses fit in 48 bits; the device goes above them. */
static uint64_t live_key(int device, uint64_t addr)
{
    return addr ^ ((uint64_t)(uint16_t)device << 48);
}

static int add_pass(struct mh_lifetimes *lt, int64_t step, uint64_t index)
{
    if (MH__GROW(lt->passes, lt->npasses, lt->cappasses, 64) < 0)
        return MH_ENOMEM;
    lt->passes[lt->npasses++] = (struct mh_step_span){step, index};
    lt->pass_backward = 0;
    return 0;
}

static int add_step(struct mh_lifetimes *lt, int64_t step, uint64_t index)
{
    if (MH__GROW(lt->steps, lt->nsteps, lt->capsteps, 64) < 0)
        return MH_ENOMEM;
    lt->steps[lt->nsteps++] = (struct mh_step_span){step, index};
    return add_pass(lt, step, index);
}

/* A record of the allocation `ev` (event number `index`) as the model
 * applied it: its block, stack, scope, step and phase. */
static void fill_rec(struct mh_alloc_rec *r, const struct mh_model *m, const struct mh_event *ev,
                     const struct mh_apply_result *res, uint64_t index, int forward_seen)
{
    memset(r, 0, sizeof *r);
    r->alloc_index = index;
    r->free_index = MH_NEVER;
    r->addr = ev->addr;
    r->size = res->block_size;
    r->requested = ev->size;
    r->alloc_step = mh_model_device_step(m, ev->device);
    r->free_step = -1;
    r->stack = ev->stack;
    r->str = ev->str ? ev->str : mh_model_scope(m, ev->thread);
    r->device = ev->device;
    r->thread = ev->thread;
    r->alloc_phase = (uint8_t)mh_model_current_phase(m);
    r->before_forward = r->alloc_step >= 0 && !forward_seen;
    r->category = MH_CAT_UNKNOWN;
}

static int on_alloc(struct mh_lifetimes *lt, const struct mh_model *m, const struct mh_event *ev,
                    const struct mh_apply_result *res, uint64_t index)
{
    if (MH__GROW(lt->recs, lt->n, lt->cap, 4096) < 0)
        return MH_ENOMEM;
    fill_rec(&lt->recs[lt->n], m, ev, res, index, lt->forward_seen);
    lt->n++;
    return mh__addrmap_put(&lt->live, live_key(ev->device, ev->addr), (void *)(uintptr_t)lt->n);
}

static void on_free(struct mh_lifetimes *lt, const struct mh_model *m, const struct mh_event *ev,
                    uint64_t index)
{
    uintptr_t i = (uintptr_t)mh__addrmap_del(&lt->live, live_key(ev->device, ev->addr));
    if (!i)
        return;
    struct mh_alloc_rec *r = &lt->recs[i - 1];
    r->free_index = index;
    r->free_step = mh_model_device_step(m, ev->device);
    r->free_phase = (uint8_t)mh_model_current_phase(m);
    r->freed_elsewhere = ev->thread != r->thread;
}

static void note_thread(struct mh_lifetimes *lt, uint32_t thread)
{
    if (!lt->thread_known) {
        lt->thread_known = 1;
        lt->first_thread = thread;
    }
    lt->threaded |= thread != lt->first_thread;
}

int mh__lifetimes_observe(struct mh_lifetimes *lt, const struct mh_model *m,
                          const struct mh_event *ev, const struct mh_apply_result *res)
{
    uint64_t index = lt->nevents++;
    int64_t step = mh_model_current_step(m);
    int rc = 0;
    if (ev->kind == MH_EV_STEP_END)
        lt->ended_before = index + 1;
    if (ev->kind == MH_EV_STEP_BEGIN && lt->nsteps == 1 && lt->steps[0].step == step &&
        (int64_t)ev->aux == step) { /* the model made the first step so far set-up */
        for (size_t i = 0; i < lt->n; i++)
            lt->recs[i].alloc_step = lt->recs[i].alloc_step == step ? -1 : lt->recs[i].alloc_step;
        lt->steps[0].step = -1;
        for (size_t i = 0; i < lt->npasses; i++)
            lt->passes[i].step = -1;
        lt->last_step = -1;
    }
    if (step != lt->last_step) {
        lt->last_step = step;
        lt->forward_seen = 0;
        rc = add_step(lt, step, index);
    }
    if (ev->kind == MH_EV_PHASE && ev->aux == MH_PHASE_FORWARD) {
        lt->forward_seen = 1;
        if (lt->pass_backward && rc == 0) /* the next micro-batch of gradient accumulation */
            rc = add_pass(lt, step, index);
    }
    if (ev->kind == MH_EV_PHASE && ev->aux == MH_PHASE_BACKWARD)
        lt->pass_backward = 1;
    if (rc == 0 && ev->kind == MH_EV_SCOPE_ENTER && ev->str &&
        (ev->aux == MH_PHASE_FORWARD || ev->aux == MH_PHASE_BACKWARD)) {
        if (MH__GROW(lt->marks, lt->nmarks, lt->capmarks, 256) < 0)
            return MH_ENOMEM;
        lt->marks[lt->nmarks++] = (struct mh_scope_mark){index, ev->str, (uint8_t)ev->aux};
    }
    if (rc < 0 || (res && res->anomaly))
        return rc;
    if (ev->kind == MH_EV_TAG) {
        uintptr_t i = (uintptr_t)mh__addrmap_get(&lt->live, live_key(ev->device, ev->addr));
        if (ev->aux == MH_ROLE_OUTPUT) { /* not a role: the module that returned it last */
            if (i)
                lt->recs[i - 1].out_str = ev->str;
            return 0;
        }
        if (i && ev->aux < MH_ROLE_COUNT)
            lt->recs[i - 1].role = (uint8_t)ev->aux;
        if (i && ev->str)
            lt->recs[i - 1].tag_str = ev->str;
        lt->tagged = 1;
        lt->grads_tagged |= ev->aux == MH_ROLE_GRADIENT;
        return 0;
    }
    if (ev->kind == MH_EV_ALLOC && res) {
        note_thread(lt, ev->thread);
        return on_alloc(lt, m, ev, res, index);
    }
    if (ev->kind == MH_EV_FREE_REQUESTED ||
        (ev->kind == MH_EV_FREE_COMPLETED && res && res->allocated_delta < 0)) {
        note_thread(lt, ev->thread);
        on_free(lt, m, ev, index);
    }
    return 0;
}

/* The newest step each device reached, from the steps its blocks were
 * allocated and freed in (devices 0 .. NEWEST_DEVICES - 1). */
#define NEWEST_DEVICES 256

static void note_step(int64_t *newest, int device, int64_t step)
{
    if (device >= 0 && device < NEWEST_DEVICES && step > newest[device])
        newest[device] = step;
}

static int64_t newest_on(const int64_t *newest, int device)
{
    return device >= 0 && device < NEWEST_DEVICES ? newest[device] : -1;
}

/* `tagged`: the file carries tensor roles; `grads_tagged`: gradients among
 * them, so an untagged block from the backward of a step that ended
 * (allocated before event `ended_before`) and never freed is not a gradient
 * (a library workspace made on the autograd thread). A step still open when
 * the recording ends (an OOM in backward) keeps the lifetime rule: its
 * gradients were not tagged yet. `newest`: the newest step of the block's
 * device; a block from a forward that lives through the whole next step
 * (freed, or still alive, two steps later) is state that forward made (a
 * DDP gradient bucket rebuilt in forward, a cache a module keeps), not an
 * activation: unknown. */
static int classify(const struct mh_alloc_rec *r, int64_t first_step, int has_steps, int tagged,
                    int grads_tagged, uint64_t ended_before, int64_t newest)
{
    switch (r->role) {
    case MH_ROLE_PARAMETER:
    case MH_ROLE_BUFFER: return MH_CAT_PARAMETER;
    case MH_ROLE_GRADIENT: return MH_CAT_GRADIENT;
    case MH_ROLE_OPTIMIZER_STATE: return MH_CAT_OPTIMIZER_STATE;
    default: break;
    }
    int freed = r->free_index != MH_NEVER;
    int same_phase = freed && r->free_step == r->alloc_step && r->free_phase == r->alloc_phase;
    if (!has_steps)
        return MH_CAT_UNKNOWN;
    if (r->alloc_step < first_step)
        return !freed && !tagged ? MH_CAT_PARAMETER : MH_CAT_UNKNOWN;
    if (r->before_forward)
        return MH_CAT_INPUT;
    if (same_phase)
        return MH_CAT_TEMPORARY;
    switch (r->alloc_phase) {
    case MH_PHASE_FORWARD:
        return (freed ? r->free_step : newest) >= r->alloc_step + 2 ? MH_CAT_UNKNOWN : MH_CAT_ACTIVATION;
    case MH_PHASE_BACKWARD:
        return grads_tagged && !freed && r->alloc_index < ended_before ? MH_CAT_UNKNOWN : MH_CAT_GRADIENT;
    case MH_PHASE_OPTIMIZER: return tagged ? MH_CAT_UNKNOWN : MH_CAT_OPTIMIZER_STATE;
    default: return MH_CAT_UNKNOWN;
    }
}

void mh__lifetimes_finish(struct mh_lifetimes *lt)
{
    int64_t first = INT64_MAX;
    for (size_t i = 0; i < lt->nsteps; i++)
        if (lt->steps[i].step >= 0 && lt->steps[i].step < first)
            first = lt->steps[i].step;
    int has_steps = first != INT64_MAX;
    int64_t newest[NEWEST_DEVICES];
    for (size_t d = 0; d < NEWEST_DEVICES; d++)
        newest[d] = -1;
    for (size_t i = 0; i < lt->n; i++) {
        note_step(newest, lt->recs[i].device, lt->recs[i].alloc_step);
        note_step(newest, lt->recs[i].device, lt->recs[i].free_step);
    }
    for (size_t i = 0; i < lt->n; i++) {
        struct mh_alloc_rec *r = &lt->recs[i];
        r->category = (uint8_t)classify(r, first, has_steps, lt->tagged, lt->grads_tagged, lt->ended_before,
                                        newest_on(newest, r->device));
    }
}

const struct mh_alloc_rec *mh__lifetimes_records(const struct mh_lifetimes *lt, size_t *n)
{
    *n = lt->n;
    return lt->recs;
}

const struct mh_step_span *mh__lifetimes_steps(const struct mh_lifetimes *lt, size_t *n)
{
    *n = lt->nsteps;
    return lt->steps;
}

const struct mh_step_span *mh__lifetimes_passes(const struct mh_lifetimes *lt, size_t *n)
{
    *n = lt->npasses;
    return lt->passes;
}

uint64_t mh__lifetimes_event_count(const struct mh_lifetimes *lt)
{
    return lt->nevents;
}

const struct mh_scope_mark *mh__lifetimes_scope_marks(const struct mh_lifetimes *lt, size_t *n)
{
    *n = lt->nmarks;
    return lt->marks;
}

int mh__lifetimes_threaded(const struct mh_lifetimes *lt)
{
    return lt->threaded;
}

int64_t mh__lifetimes_step_of(const struct mh_lifetimes *lt, uint64_t index)
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

void mh__lifetimes_live_by_category(const struct mh_lifetimes *lt, int device, uint64_t index,
                                    uint64_t bytes[MH_CAT_COUNT], uint64_t *requested)
{
    memset(bytes, 0, MH_CAT_COUNT * sizeof *bytes);
    if (requested)
        memset(requested, 0, MH_CAT_COUNT * sizeof *requested);
    for (size_t i = 0; i < lt->n; i++) {
        const struct mh_alloc_rec *r = &lt->recs[i];
        if (r->device != device || !mh_alloc_rec_live_at(r, index))
            continue;
        bytes[r->category] += r->size;
        if (requested)
            requested[r->category] += r->requested;
    }
}

/* ---- mh_livecat ---------------------------------------------------------- */

struct livecat_slot {
    struct mh_alloc_rec rec;
    uint64_t tag;
    uint32_t next_free; /* free list, index + 1 */
    uint8_t used, ended;
};

struct mh_livecat {
    struct livecat_slot *slots;
    size_t n, cap;
    uint32_t free_head; /* index + 1, 0 = none */
    struct mh__hmap live; /* device-tagged block address -> slot index + 1 */
    uint64_t nevents;
    int64_t last_step, first_step; /* first_step: smallest step >= 0 seen, INT64_MAX if none */
    int forward_seen;
    int tagged, grads_tagged;
    uint64_t ended_before; /* index of the last STEP_END + 1, 0 = none yet */
    int step_ended; /* a STEP_END was seen */
    int64_t newest[NEWEST_DEVICES]; /* per device, the newest step of a block's allocation or free */
};

int mh__livecat_new(struct mh_livecat **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return MH_ENOMEM;
    (*out)->last_step = -1;
    (*out)->first_step = INT64_MAX;
    for (size_t d = 0; d < NEWEST_DEVICES; d++)
        (*out)->newest[d] = -1;
    return 0;
}

void mh__livecat_free(struct mh_livecat *lc)
{
    if (!lc)
        return;
    mh__addrmap_destroy(&lc->live);
    free(lc->slots);
    free(lc);
}

static int livecat_take(struct mh_livecat *lc, uint32_t *idx)
{
    if (lc->free_head) {
        *idx = lc->free_head - 1;
        lc->free_head = lc->slots[*idx].next_free;
        return 0;
    }
    if (lc->n >= UINT32_MAX || MH__GROW(lc->slots, lc->n, lc->cap, 1024) < 0)
        return MH_ENOMEM;
    *idx = (uint32_t)lc->n++;
    return 0;
}

static void livecat_release(struct mh_livecat *lc, uint32_t idx)
{
    lc->slots[idx].used = 0;
    lc->slots[idx].next_free = lc->free_head;
    lc->free_head = idx + 1;
}

static void livecat_fill(const struct mh_livecat *lc, const struct livecat_slot *sl,
                         struct mh_livecat_end *end)
{
    int has_steps = lc->first_step != INT64_MAX;
    end->tag = sl->tag;
    end->size = sl->rec.size;
    end->device = sl->rec.device;
    end->category = (uint8_t)classify(&sl->rec, lc->first_step, has_steps, lc->tagged, lc->grads_tagged,
                                      lc->ended_before, newest_on(lc->newest, sl->rec.device));
    end->ended = 0;
}

static int livecat_alloc(struct mh_livecat *lc, const struct mh_model *m, const struct mh_event *ev,
                         const struct mh_apply_result *res, uint64_t tag)
{
    uint64_t key = live_key(ev->device, ev->addr);
    uintptr_t old = (uintptr_t)mh__addrmap_del(&lc->live, key);
    if (old)
        livecat_release(lc, (uint32_t)(old - 1)); /* a block the model replaced */
    uint32_t idx;
    if (livecat_take(lc, &idx) < 0)
        return MH_ENOMEM;
    struct livecat_slot *sl = &lc->slots[idx];
    memset(sl, 0, sizeof *sl);
    fill_rec(&sl->rec, m, ev, res, lc->nevents - 1, lc->forward_seen);
    note_step(lc->newest, sl->rec.device, sl->rec.alloc_step);
    sl->tag = tag;
    sl->used = 1;
    int rc = mh__addrmap_put(&lc->live, key, (void *)(uintptr_t)(idx + 1));
    if (rc < 0)
        livecat_release(lc, idx);
    return rc;
}

/* A free event of a tracked block: ends its life (first time) and, at
 * FREE_COMPLETED, forgets it. */
static int livecat_on_free(struct mh_livecat *lc, const struct mh_model *m,
                           const struct mh_event *ev, const struct mh_apply_result *res,
                           struct mh_livecat_end *end)
{
    uint64_t key = live_key(ev->device, ev->addr);
    uintptr_t i = (uintptr_t)mh__addrmap_get(&lc->live, key);
    if (!i)
        return 0;
    struct livecat_slot *sl = &lc->slots[i - 1];
    int completed = ev->kind == MH_EV_FREE_COMPLETED;
    int ends = !sl->ended && (!completed || (res && res->allocated_delta < 0));
    if (!sl->ended && !ends)
        return 0; /* mh_lifetimes ignores this free too */
    if (ends) {
        sl->rec.free_index = lc->nevents - 1;
        sl->rec.free_step = mh_model_device_step(m, ev->device);
        sl->rec.free_phase = (uint8_t)mh_model_current_phase(m);
        sl->ended = 1;
        note_step(lc->newest, sl->rec.device, sl->rec.free_step);
    }
    livecat_fill(lc, sl, end);
    end->ended = (uint8_t)ends;
    if (completed) {
        mh__addrmap_del(&lc->live, key);
        livecat_release(lc, (uint32_t)(i - 1));
    }
    return 1;
}

int mh__livecat_observe(struct mh_livecat *lc, const struct mh_model *m, const struct mh_event *ev,
                        const struct mh_apply_result *res, uint64_t tag, struct mh_livecat_end *end)
{
    lc->nevents++;
    int64_t step = mh_model_current_step(m);
    if (ev->kind == MH_EV_STEP_BEGIN && step == lc->first_step && step == lc->last_step &&
        (int64_t)ev->aux == step && !lc->step_ended) { /* set-up so far (see above) */
        for (size_t i = 0; i < lc->n; i++)
            if (lc->slots[i].used && lc->slots[i].rec.alloc_step == step)
                lc->slots[i].rec.alloc_step = -1;
        lc->last_step = -1;
        lc->first_step = INT64_MAX;
    }
    if (ev->kind == MH_EV_STEP_END) {
        lc->step_ended = 1;
        lc->ended_before = lc->nevents;
    }
    if (step != lc->last_step) {
        lc->last_step = step;
        lc->forward_seen = 0;
        if (step >= 0 && step < lc->first_step)
            lc->first_step = step;
    }
    if (ev->kind == MH_EV_PHASE && ev->aux == MH_PHASE_FORWARD)
        lc->forward_seen = 1;
    if (res && res->anomaly)
        return 0;
    if (ev->kind == MH_EV_TAG && ev->aux == MH_ROLE_OUTPUT)
        return 0; /* not a role */
    if (ev->kind == MH_EV_TAG) {
        uintptr_t i = (uintptr_t)mh__addrmap_get(&lc->live, live_key(ev->device, ev->addr));
        if (i && ev->aux < MH_ROLE_COUNT)
            lc->slots[i - 1].rec.role = (uint8_t)ev->aux;
        lc->tagged = 1;
        lc->grads_tagged |= ev->aux == MH_ROLE_GRADIENT;
        return 0;
    }
    if (ev->kind == MH_EV_ALLOC && res)
        return livecat_alloc(lc, m, ev, res, tag);
    if (ev->kind == MH_EV_FREE_REQUESTED || ev->kind == MH_EV_FREE_COMPLETED)
        return livecat_on_free(lc, m, ev, res, end);
    return 0;
}

int mh__livecat_finish(struct mh_livecat *lc,
                       int (*fn)(void *user, const struct mh_livecat_end *end), void *user)
{
    for (size_t i = 0; i < lc->n; i++) {
        const struct livecat_slot *sl = &lc->slots[i];
        if (!sl->used || sl->ended)
            continue;
        struct mh_livecat_end end;
        livecat_fill(lc, sl, &end);
        int rc = fn(user, &end);
        if (rc)
            return rc;
    }
    return 0;
}
