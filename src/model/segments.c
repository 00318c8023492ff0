/* segments.c - structural operations on a device's segments and blocks:
 * create and destroy segments, split and merge blocks, change block states.
 * Every function here keeps the invariants the rest of the model relies on:
 * blocks tile their segment exactly in address order, every block is in the
 * address map, exactly the inactive blocks are in the free heap, and the
 * device counters (allocated, active, requested, reserved, inactive_split,
 * segments, allocated_blocks) equal the sums over the live state. */
#include <string.h>

#include "memhist/error.h"
#include "model_int.h"

struct mh__segment *mh__seg_containing(const struct mh__device *d, uint64_t addr)
{
    struct mh__segment *s = mh__segtree_floor(d->root, addr);
    return s && addr - s->addr < s->size ? s : NULL;
}

/* inactive_split counts free bytes of split, non-expandable segments. */
static uint64_t inactive_split_of(const struct mh__segment *s)
{
    return !s->expandable && s->nblocks > 1 ? s->size - s->active : 0;
}

void mh__seg_enter(struct mh__device *d, struct mh__segment *s)
{
    d->stats.inactive_split -= inactive_split_of(s);
}

void mh__seg_leave(struct mh__device *d, struct mh__segment *s)
{
    d->stats.inactive_split += inactive_split_of(s);
}

struct mh__block *mh__mblock_new(struct mh_model *m, struct mh__device *d,
                                   struct mh__segment *s, uint64_t addr, uint64_t size)
{
    struct mh__block *b = mh__mslab_get(&m->block_slab);
    if (!b)
        return NULL;
    b->addr = addr;
    b->size = size;
    b->seg = s;
    b->stream = s->stream;
    b->alloc_step = -1;
    b->state = MH_BLOCK_INACTIVE;
    /* The heap keeps room for every live block, so the pushes that state
     * changes make later cannot fail. */
    if (mh__addrmap_put(&d->blocks, addr, b) || mh__fheap_reserve(&d->free_heap, d->blocks.count) ||
        mh__fheap_push(&d->free_heap, b)) {
        if (mh__addrmap_get(&d->blocks, addr) == b)
            mh__addrmap_del(&d->blocks, addr);
        mh__mslab_put(&m->block_slab, b);
        return NULL;
    }
    return b;
}

/* Removes a block from the map and heap and returns it to the slab. */
void mh__mblock_drop(struct mh_model *m, struct mh__device *d, struct mh__block *b)
{
    if (b->state == MH_BLOCK_INACTIVE)
        mh__fheap_remove(&d->free_heap, b);
    if (mh__addrmap_get(&d->blocks, b->addr) == b)
        mh__addrmap_del(&d->blocks, b->addr);
    mh__mslab_put(&m->block_slab, b);
}

int mh__seg_create(struct mh_model *m, struct mh__device *d, const struct mh_event *ev,
                   int small_pool, int expandable, struct mh__segment **out)
{
    struct mh__segment *s = mh__mslab_get(&m->seg_slab);
    if (!s)
        return MH_ENOMEM;
    s->addr = ev->addr;
    s->size = ev->size;
    s->stream = ev->stream;
    memcpy(s->pool, ev->pool, sizeof s->pool);
    s->stack = ev->flags & MH_EVF_SEGMENT_STACK ? ev->aux : ev->stack;
    s->small_pool = (uint8_t)(small_pool != 0);
    s->expandable = (uint8_t)(expandable != 0);
    struct mh__block *b = mh__mblock_new(m, d, s, s->addr, s->size);
    if (!b) {
        mh__mslab_put(&m->seg_slab, s);
        return MH_ENOMEM;
    }
    s->first = s->last = b;
    s->nblocks = 1;
    mh__segtree_insert(&d->root, s);
    d->stats.reserved += s->size;
    d->stats.segments++;
    if (expandable)
        m->saw_expandable = 1;
    *out = s;
    return 0;
}

void mh__seg_destroy(struct mh_model *m, struct mh__device *d, struct mh__segment *s)
{
    for (struct mh__block *b = s->first; b; b = b->next)
        mh__mblock_set_state(d, b, MH_BLOCK_INACTIVE);
    mh__seg_enter(d, s);
    for (struct mh__block *b = s->first, *next; b; b = next) {
        next = b->next;
        mh__mblock_drop(m, d, b);
    }
    mh__segtree_remove(&d->root, s);
    d->stats.reserved -= s->size;
    d->stats.segments--;
    mh__mslab_put(&m->seg_slab, s);
}

struct mh__block *mh__mblock_split(struct mh_model *m, struct mh__device *d, struct mh__block *b,
                                  uint64_t at)
{
    struct mh__segment *s = b->seg;
    struct mh__block *t = mh__mblock_new(m, d, s, at, b->addr + b->size - at);
    if (!t)
        return NULL;
    mh__seg_enter(d, s);
    b->size = at - b->addr;
    mh__fheap_update(&d->free_heap, b);
    t->prev = b;
    t->next = b->next;
    if (b->next)
        b->next->prev = t;
    else
        s->last = t;
    b->next = t;
    s->nblocks++;
    mh__seg_leave(d, s);
    return t;
}

/* Absorbs inactive `n` (b's successor) into inactive b. */
static void absorb_next(struct mh_model *m, struct mh__device *d, struct mh__block *b)
{
    struct mh__block *n = b->next;
    struct mh__segment *s = b->seg;
    b->size += n->size;
    b->next = n->next;
    if (n->next)
        n->next->prev = b;
    else
        s->last = b;
    s->nblocks--;
    mh__mblock_drop(m, d, n);
    mh__fheap_update(&d->free_heap, b);
}

struct mh__block *mh__mblock_merge(struct mh_model *m, struct mh__device *d, struct mh__block *b)
{
    struct mh__segment *s = b->seg;
    mh__seg_enter(d, s);
    if (b->next && b->next->state == MH_BLOCK_INACTIVE)
        absorb_next(m, d, b);
    if (b->prev && b->prev->state == MH_BLOCK_INACTIVE) {
        b = b->prev;
        absorb_next(m, d, b);
    }
    mh__seg_leave(d, s);
    return b;
}

/* Moves a block between states, keeping the segment's and the device's
 * allocated/active/requested sums and the free heap in step. Leaving the
 * allocated state is the "free requested" half; leaving active the
 * "free completed" half. */
void mh__mblock_set_state(struct mh__device *d, struct mh__block *b, int state)
{
    struct mh__segment *s = b->seg;
    int was_alloc = b->state == MH_BLOCK_ALLOCATED, now_alloc = state == MH_BLOCK_ALLOCATED;
    int was_active = b->state != MH_BLOCK_INACTIVE, now_active = state != MH_BLOCK_INACTIVE;
    if (was_alloc != now_alloc) {
        int64_t sign = now_alloc ? 1 : -1;
        s->allocated += (uint64_t)sign * b->size;
        d->stats.allocated += (uint64_t)sign * b->size;
        d->stats.allocated_blocks += (uint32_t)sign;
    }
    if (was_active != now_active) {
        int64_t sign = now_active ? 1 : -1;
        mh__seg_enter(d, s);
        s->active += (uint64_t)sign * b->size;
        s->requested += (uint64_t)sign * b->requested;
        d->stats.active += (uint64_t)sign * b->size;
        d->stats.requested += (uint64_t)sign * b->requested;
        mh__seg_leave(d, s);
        if (now_active)
            mh__fheap_remove(&d->free_heap, b);
        else
            mh__fheap_push(&d->free_heap, b); /* cannot fail: room is reserved */
    }
    b->state = (uint8_t)state;
}
