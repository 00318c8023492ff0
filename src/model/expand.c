/* expand.c - expandable segments: SEGMENT_MAP and SEGMENT_UNMAP replay.
 * PyTorch reports one segment per contiguous mapped range of an expandable
 * reservation (reference pytorch-allocator.md 1.6, 1.8), so a map extends
 * the mapped range that ends where it starts (and joins the one that starts
 * where it ends), and an unmap in the middle of a range cuts it in two. The
 * newly mapped range is an inactive block merged with free neighbours;
 * only wholly free pages are ever unmapped. reserved counts mapped bytes. */
#include <string.h>

#include "memhist/error.h"
#include "model_int.h"

static int map_compatible(const struct mh__segment *s, const struct mh_event *ev, int small)
{
    return s->expandable && s->stream == ev->stream && s->pool[0] == ev->pool[0] &&
           s->pool[1] == ev->pool[1] && (small < 0 || s->small_pool == small);
}

/* Pool of a new mapped range: from the flags, else from the page size
 * (large pages are large_segment_size, so a range that is not a whole
 * number of them is small-pool). An extension takes its neighbour's. */
static int map_small(const struct mh_model *m, const struct mh_event *ev)
{
    if (ev->flags & MH_EVF_POOL_KNOWN)
        return (ev->flags & MH_EVF_POOL_SMALL) != 0;
    return ev->size % mh_expandable_page_size(&m->conf, 0) != 0;
}

static int extend(struct mh_model *m, struct mh__device *d, struct mh__segment *s, uint64_t size)
{
    struct mh__block *b = mh__mblock_new(m, d, s, s->addr + s->size, size);
    if (!b)
        return MH_ENOMEM;
    mh__seg_enter(d, s);
    b->prev = s->last;
    s->last->next = b;
    s->last = b;
    s->nblocks++;
    s->size += size;
    mh__seg_leave(d, s);
    d->stats.reserved += size;
    mh__mblock_merge(m, d, b);
    return 0;
}

/* Appends b (which starts at a's end) to a and frees b's segment. */
static void join(struct mh_model *m, struct mh__device *d, struct mh__segment *a,
                 struct mh__segment *b)
{
    struct mh__block *boundary = b->first;
    mh__seg_enter(d, a);
    mh__seg_enter(d, b);
    for (struct mh__block *x = b->first; x; x = x->next)
        x->seg = a;
    a->last->next = b->first;
    b->first->prev = a->last;
    a->last = b->last;
    a->nblocks += b->nblocks;
    a->size += b->size;
    a->allocated += b->allocated;
    a->active += b->active;
    a->requested += b->requested;
    mh__segtree_remove(&d->root, b);
    mh__mslab_put(&m->seg_slab, b);
    d->stats.segments--;
    mh__seg_leave(d, a);
    if (boundary->state == MH_BLOCK_INACTIVE)
        mh__mblock_merge(m, d, boundary);
}

int mh__apply_map(struct mh_model *m, struct mh__device *d, const struct mh_event *ev,
                  struct mh_apply_result *res)
{
    uint64_t end = ev->addr + ev->size;
    struct mh__segment *over = mh__segtree_floor(d->root, end - 1);
    if (over && over->addr + over->size > ev->addr) {
        mh__model_anomaly(m, res, MH_ANOM_SEGMENT_OVERLAP);
        return 0;
    }
    struct mh__segment *s = ev->addr ? mh__seg_containing(d, ev->addr - 1) : NULL;
    int small = map_small(m, ev);
    int known = (ev->flags & MH_EVF_POOL_KNOWN) ? small : -1;
    int rc;
    if (s && map_compatible(s, ev, known)) {
        if ((rc = extend(m, d, s, ev->size)))
            return rc;
    } else if ((rc = mh__seg_create(m, d, ev, small, 1, &s))) {
        return rc;
    }
    struct mh__segment *next = mh__segtree_ceil(d->root, end);
    if (next && next->addr == end && map_compatible(next, ev, s->small_pool))
        join(m, d, s, next);
    mh__driver_claim(d, ev->addr, ev->size);
    d->stats.maps++;
    d->acc.s.segment_allocs++;
    res->reserved_delta = (int64_t)ev->size;
    return 0;
}

/* Moves the blocks after `cut` (exclusive) into a new segment. */
static int cut_tail(struct mh_model *m, struct mh__device *d, struct mh__segment *s,
                    struct mh__block *cut)
{
    struct mh__segment *t = mh__mslab_get(&m->seg_slab);
    if (!t)
        return MH_ENOMEM;
    t->addr = cut->next->addr;
    t->size = s->addr + s->size - t->addr;
    t->stream = s->stream;
    memcpy(t->pool, s->pool, sizeof t->pool);
    t->stack = s->stack;
    t->small_pool = s->small_pool;
    t->expandable = s->expandable;
    t->first = cut->next;
    t->last = s->last;
    for (struct mh__block *x = t->first; x; x = x->next) {
        x->seg = t;
        t->nblocks++;
        t->allocated += x->state == MH_BLOCK_ALLOCATED ? x->size : 0;
        t->active += x->state != MH_BLOCK_INACTIVE ? x->size : 0;
        t->requested += x->state != MH_BLOCK_INACTIVE ? x->requested : 0;
    }
    t->first->prev = NULL;
    cut->next = NULL;
    s->last = cut;
    s->nblocks -= t->nblocks;
    s->size -= t->size;
    s->allocated -= t->allocated;
    s->active -= t->active;
    s->requested -= t->requested;
    mh__segtree_insert(&d->root, t);
    d->stats.segments++;
    mh__seg_leave(d, t);
    return 0;
}

/* Removes inactive block b, which is exactly the unmapped range, from s. */
static int remove_range(struct mh_model *m, struct mh__device *d, struct mh__segment *s,
                        struct mh__block *b)
{
    if (s->nblocks == 1) {
        mh__seg_destroy(m, d, s);
        return 0;
    }
    mh__seg_enter(d, s);
    if (b != s->first && b != s->last) {
        int rc = cut_tail(m, d, s, b);
        if (rc) {
            mh__seg_leave(d, s);
            return rc;
        }
    }
    if (b == s->first) {
        s->first = b->next;
        s->addr = b->next->addr; /* still between its neighbours: the tree stays ordered */
        b->next->prev = NULL;
    } else {
        s->last = b->prev;
        b->prev->next = NULL;
    }
    s->nblocks--;
    s->size -= b->size;
    d->stats.reserved -= b->size;
    mh__seg_leave(d, s);
    mh__mblock_drop(m, d, b);
    return 0;
}

int mh__apply_unmap(struct mh_model *m, struct mh__device *d, const struct mh_event *ev,
                    struct mh_apply_result *res)
{
    uint64_t end = ev->addr + ev->size;
    struct mh__segment *s = mh__seg_containing(d, ev->addr);
    struct mh__block *b = NULL;
    if (s && s->expandable && end - s->addr <= s->size)
        for (b = s->first; b && ev->addr - b->addr >= b->size; b = b->next)
            ;
    if (!b || b->state != MH_BLOCK_INACTIVE || end - b->addr > b->size) {
        mh__model_anomaly(m, res, MH_ANOM_UNMAP_UNKNOWN);
        return 0;
    }
    if (b->addr < ev->addr && !(b = mh__mblock_split(m, d, b, ev->addr)))
        return MH_ENOMEM;
    if (b->addr + b->size > end && !mh__mblock_split(m, d, b, end))
        return MH_ENOMEM;
    int rc = remove_range(m, d, s, b);
    if (rc)
        return rc;
    d->stats.unmaps++;
    d->acc.s.segment_frees++;
    res->reserved_delta = -(int64_t)ev->size;
    return 0;
}
