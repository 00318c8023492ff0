/* categories.c - the category of an allocation (the rule of categories.h,
 * category_rule.h) and the streaming classification that keeps only the
 * allocations not yet completely freed (mh__livecat, which the plots and
 * snapshots use). The lifetimes of a pass are lifetimes.c. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "category_rule.h"
#include "grow.h"

const char *mh__category_name(int category)
{
    static const char *const names[MH__CAT_COUNT] = {
        "parameter", "gradient", "optimizer_state", "activation", "temporary", "input", "unknown"};
    return category >= 0 && category < MH__CAT_COUNT ? names[category] : "unknown";
}

void mh__alloc_rec_fill(struct mh__alloc_rec *r, const struct mh_model *m, const struct mh_event *ev,
                        const struct mh_apply_result *res, uint64_t index, int forward_seen)
{
    memset(r, 0, sizeof *r);
    r->alloc_index = index;
    r->free_index = MH__NEVER;
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
    r->category = MH__CAT_UNKNOWN;
}

void mh__newest_note(int64_t *newest, int device, int64_t step)
{
    if (device >= 0 && device < MH__NEWEST_DEVICES && step > newest[device])
        newest[device] = step;
}

int64_t mh__newest_on(const int64_t *newest, int device)
{
    return device >= 0 && device < MH__NEWEST_DEVICES ? newest[device] : -1;
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
int mh__category_of(const struct mh__alloc_rec *r, const struct mh__cat_facts *f, int64_t newest)
{
    switch (r->role) {
    case MH_ROLE_PARAMETER:
    case MH_ROLE_BUFFER: return MH__CAT_PARAMETER;
    case MH_ROLE_GRADIENT: return MH__CAT_GRADIENT;
    case MH_ROLE_OPTIMIZER_STATE: return MH__CAT_OPTIMIZER_STATE;
    default: break;
    }
    int freed = r->free_index != MH__NEVER;
    int same_phase = freed && r->free_step == r->alloc_step && r->free_phase == r->alloc_phase;
    if (f->first_step == INT64_MAX) /* no steps */
        return MH__CAT_UNKNOWN;
    if (r->alloc_step < f->first_step)
        return !freed && !f->tagged ? MH__CAT_PARAMETER : MH__CAT_UNKNOWN;
    if (r->before_forward)
        return MH__CAT_INPUT;
    if (same_phase)
        return MH__CAT_TEMPORARY;
    switch (r->alloc_phase) {
    case MH_PHASE_FORWARD:
        return (freed ? r->free_step : newest) >= r->alloc_step + 2 ? MH__CAT_UNKNOWN
                                                                     : MH__CAT_ACTIVATION;
    case MH_PHASE_BACKWARD:
        return f->grads_tagged && !freed && r->alloc_index < f->ended_before ? MH__CAT_UNKNOWN
                                                                              : MH__CAT_GRADIENT;
    case MH_PHASE_OPTIMIZER: return f->tagged ? MH__CAT_UNKNOWN : MH__CAT_OPTIMIZER_STATE;
    default: return MH__CAT_UNKNOWN;
    }
}

/* ---- mh__livecat ---------------------------------------------------------- */

struct livecat_slot {
    struct mh__alloc_rec rec;
    uint64_t tag;
    uint32_t next_free; /* free list, index + 1 */
    uint8_t used, ended;
};

struct mh__livecat {
    struct livecat_slot *slots;
    size_t n, cap;
    uint32_t free_head; /* index + 1, 0 = none */
    uint64_t nevents;
    int64_t last_step, first_step; /* first_step: smallest step >= 0 seen, INT64_MAX if none */
    int forward_seen;
    int tagged, grads_tagged;
    uint64_t ended_before; /* index of the last STEP_END + 1, 0 = none yet */
    int step_ended; /* a STEP_END was seen */
    int64_t newest[MH__NEWEST_DEVICES]; /* per device, the newest step of a block's allocation or free */
};

int mh__livecat_new(struct mh__livecat **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return MH_ENOMEM;
    (*out)->last_step = -1;
    (*out)->first_step = INT64_MAX;
    for (size_t d = 0; d < MH__NEWEST_DEVICES; d++)
        (*out)->newest[d] = -1;
    return 0;
}

void mh__livecat_free(struct mh__livecat *lc)
{
    if (!lc)
        return;
    free(lc->slots);
    free(lc);
}

static int livecat_take(struct mh__livecat *lc, uint32_t *idx)
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

static void livecat_release(struct mh__livecat *lc, uint32_t idx)
{
    lc->slots[idx].used = 0;
    lc->slots[idx].next_free = lc->free_head;
    lc->free_head = idx + 1;
}

static void livecat_fill(const struct mh__livecat *lc, const struct livecat_slot *sl,
                         struct mh__livecat_end *end)
{
    const struct mh__cat_facts f = {lc->first_step, lc->tagged, lc->grads_tagged, lc->ended_before};
    end->tag = sl->tag;
    end->size = sl->rec.size;
    end->device = sl->rec.device;
    end->category = (uint8_t)mh__category_of(&sl->rec, &f, mh__newest_on(lc->newest, sl->rec.device));
    end->ended = 0;
}

/* The slot of the tracked allocation of block words `w` (NULL: none) at
 * `addr` on `device`, or NULL. */
static struct livecat_slot *livecat_slot_of(struct mh__livecat *lc, const uint32_t *w, int device,
                                            uint64_t addr)
{
    uint32_t i = w ? w[MH__WORD_LIVECAT] : 0;
    if (i == 0 || i > lc->n)
        return NULL;
    struct livecat_slot *sl = &lc->slots[i - 1];
    return sl->used && sl->rec.addr == addr && sl->rec.device == device ? sl : NULL;
}

static int livecat_alloc(struct mh__livecat *lc, const struct mh_model *m, const struct mh_event *ev,
                         const struct mh_apply_result *res, uint64_t tag)
{
    uint32_t idx;
    if (livecat_take(lc, &idx) < 0)
        return MH_ENOMEM;
    struct livecat_slot *sl = &lc->slots[idx];
    memset(sl, 0, sizeof *sl);
    mh__alloc_rec_fill(&sl->rec, m, ev, res, lc->nevents - 1, lc->forward_seen);
    mh__newest_note(lc->newest, sl->rec.device, sl->rec.alloc_step);
    sl->tag = tag;
    sl->used = 1;
    if (res->block_words)
        res->block_words[MH__WORD_LIVECAT] = idx + 1;
    return 0;
}

/* A free event of a tracked block: ends its life (first time) and, at
 * FREE_COMPLETED, forgets it. */
static int livecat_on_free(struct mh__livecat *lc, const struct mh_model *m,
                           const struct mh_event *ev, const struct mh_apply_result *res,
                           struct mh__livecat_end *end)
{
    struct livecat_slot *sl = livecat_slot_of(lc, res ? res->block_words : NULL, ev->device, ev->addr);
    if (!sl)
        return 0;
    int completed = ev->kind == MH_EV_FREE_COMPLETED;
    int ends = !sl->ended && (!completed || (res && res->allocated_delta < 0));
    if (!sl->ended && !ends)
        return 0; /* mh__lifetimes ignores this free too */
    if (ends) {
        sl->rec.free_index = lc->nevents - 1;
        sl->rec.free_step = mh_model_device_step(m, ev->device);
        sl->rec.free_phase = (uint8_t)mh_model_current_phase(m);
        sl->ended = 1;
        mh__newest_note(lc->newest, sl->rec.device, sl->rec.free_step);
    }
    livecat_fill(lc, sl, end);
    end->ended = (uint8_t)ends;
    if (completed)
        livecat_release(lc, (uint32_t)(sl - lc->slots));
    return 1;
}

int mh__livecat_observe(struct mh__livecat *lc, const struct mh_model *m, const struct mh_event *ev,
                        const struct mh_apply_result *res, uint64_t tag, struct mh__livecat_end *end)
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
        struct livecat_slot *sl = livecat_slot_of(lc, mh_model_block_words(m, ev->device, ev->addr),
                                                  ev->device, ev->addr);
        if (sl && ev->aux < MH_ROLE_COUNT)
            sl->rec.role = (uint8_t)ev->aux;
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

int mh__livecat_finish(struct mh__livecat *lc,
                       int (*fn)(void *user, const struct mh__livecat_end *end), void *user)
{
    for (size_t i = 0; i < lc->n; i++) {
        const struct livecat_slot *sl = &lc->slots[i];
        if (!sl->used || sl->ended)
            continue;
        struct mh__livecat_end end;
        livecat_fill(lc, sl, &end);
        int rc = fn(user, &end);
        if (rc)
            return rc;
    }
    return 0;
}
