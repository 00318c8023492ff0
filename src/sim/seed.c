/* seed.c - the simulator's starting state for a trace that starts mid-run:
 * the segments, mapped expandable ranges and live blocks the allocator had
 * when the trace began, as an imported snapshot gives them (its
 * MH_EVF_PREEXISTING events, segments in address order, each followed by
 * its blocks). What-if replay (sim_replay.c) seeds with them before it
 * replays the trace's requests, so its allocator begins where torch's was.
 * Each accepted event is emitted unchanged, so observers start from the
 * same state. Owns nothing; works on the state in sim_int.h. */
#include <string.h>

#include "memhist/error.h"
#include "sim_int.h"

#define SMALL_SEGMENT (2ull << 20)

static int small_pool(const struct mh_event *ev)
{
    if (ev->flags & MH_EVF_POOL_KNOWN)
        return (ev->flags & MH_EVF_POOL_SMALL) != 0;
    return ev->kind == MH_EV_SEGMENT_ALLOC && ev->size == SMALL_SEGMENT;
}

/* A cudaMalloc'd segment at its recorded address, one free block. */
static struct mh__sim_block *seed_segment(struct mh__sim *s, struct mh__sim_pool *p,
                                          const struct mh_event *ev)
{
    uint64_t at = 0;
    struct mh__sim_block *b = mh__block_new(s);
    if (!b)
        return NULL;
    int taken = mh__space_take(s, ev->size, ev->addr, &at) == 0;
    if (!taken || at != ev->addr) {
        if (taken)
            mh__space_give(s, at);
        mh__block_drop(s, b);
        return NULL;
    }
    b->addr = at;
    b->size = ev->size;
    b->seq = s->o.address_ties ? 0 : ++s->segments_made;
    b->stream = p->stream;
    b->pool = p;
    b->mapped = 1;
    mh__insert_free(s, b);
    s->st.reserved += ev->size;
    if (s->st.reserved > s->st.peak_reserved)
        s->st.peak_reserved = s->st.reserved;
    return b;
}

/* A new free block for [addr, addr + size) of free block `f` (not in a
 * tree), linked in before or after it. */
static struct mh__sim_block *split_off(struct mh__sim *s, struct mh__sim_block *f, uint64_t addr,
                                       uint64_t size, int before)
{
    struct mh__sim_block *n = mh__block_new(s);
    if (!n)
        return NULL;
    *n = (struct mh__sim_block){.addr = addr,
                                .size = size,
                                .stream = f->stream,
                                .pool = f->pool,
                                .resv = f->resv,
                                .seq = f->seq,
                                .mapped = 1};
    if (before) {
        n->prev = f->prev;
        n->next = f;
        if (n->prev)
            n->prev->next = n;
        f->prev = n;
    } else {
        n->next = f->next;
        n->prev = f;
        if (n->next)
            n->next->prev = n;
        f->next = n;
    }
    mh__insert_free(s, n);
    return n;
}

/* The free mapped block holding [addr, addr + size), searched from the
 * last seeded block on, or NULL. */
static struct mh__sim_block *holder(struct mh__sim *s, uint64_t addr, uint64_t size)
{
    struct mh__sim_block *f = s->seed_at;
    while (f && f->addr + f->size <= addr)
        f = f->next;
    if (!f || f->allocated || f->pending || !f->mapped || f->addr > addr ||
        size > f->addr + f->size - addr)
        return NULL;
    return f;
}

/* A block live at the trace's start, carved out of the segment seeded last.
 * Its size is the snapshot's, or the one the import inferred for a block
 * freed during the trace; when neither is known, the rounded request, within
 * the free space. */
static int seed_block(struct mh__sim *s, const struct mh_event *ev)
{
    uint64_t size = ev->block_size ? ev->block_size : mh_round_size(&s->o.conf, ev->size);
    struct mh__sim_block *f = holder(s, ev->addr, ev->block_size ? size : 1);
    if (!f || ev->size == 0)
        return 1;
    if (size > f->addr + f->size - ev->addr)
        size = f->addr + f->size - ev->addr;
    mh__remove_free(f);
    if ((ev->addr > f->addr && !split_off(s, f, f->addr, ev->addr - f->addr, 1)) ||
        (ev->addr + size < f->addr + f->size &&
         !split_off(s, f, ev->addr + size, f->addr + f->size - ev->addr - size, 0)))
        return MH_ENOMEM;
    f->addr = ev->addr;
    f->size = size;
    f->allocated = 1;
    f->requested = ev->size;
    f->stack = ev->stack;
    f->str = ev->str;
    if (mh__map_put(&s->live, f->addr, f) != 0)
        return MH_ENOMEM;
    s->st.allocated += size;
    s->st.active += size;
    s->st.requested += ev->size;
    if (s->st.allocated > s->st.peak_allocated)
        s->st.peak_allocated = s->st.allocated;
    s->seed_at = f;
    return 0;
}

/* The block seeded just before was already freed, waiting on another
 * stream: it completes when the replay marks it ready. */
static int seed_pending(struct mh__sim *s, const struct mh_event *ev)
{
    struct mh__sim_block *b = mh__map_get(&s->live, ev->addr);
    if (!b || !b->allocated)
        return 1;
    b->allocated = 0;
    s->st.allocated -= b->size;
    b->pending = 1;
    return mh__pending_add(s, b, UINT64_MAX);
}

int mh__sim_seed(struct mh__sim *s, const struct mh_event *ev)
{
    if (!(ev->flags & MH_EVF_PREEXISTING))
        return MH_EINVAL;
    int rc = 1;
    struct mh__sim_pool *p;
    switch (ev->kind) {
    case MH_EV_SEGMENT_ALLOC:
    case MH_EV_SEGMENT_MAP:
        if (!(p = mh__pool_get(s, ev->stream, small_pool(ev))))
            return MH_ENOMEM;
        s->seed_at = ev->size == 0 ? NULL
                     : ev->kind == MH_EV_SEGMENT_ALLOC
                         ? seed_segment(s, p, ev)
                         : mh__expandable_seed(s, p, ev->addr, ev->size);
        rc = s->seed_at ? 0 : 1;
        break;
    case MH_EV_ALLOC:
        rc = seed_block(s, ev);
        break;
    case MH_EV_FREE_REQUESTED:
        rc = seed_pending(s, ev);
        break;
    default:
        break;
    }
    if (rc == 0) {
        struct mh_event e = *ev;
        e.time_ns = s->now;
        e.device = (int16_t)s->o.device;
        mh__deliver(s, &e);
        rc = s->err;
    }
    return rc;
}
