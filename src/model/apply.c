/* apply.c - replay of caching-allocator events (ALLOC, FREE_REQUESTED,
 * FREE_COMPLETED, SEGMENT_ALLOC, SEGMENT_FREE, OOM) into one device's state,
 * with PyTorch's semantics (reference pytorch-allocator.md 1.6 and 1.10):
 * an allocation takes the front of the free block at its address, is
 * rounded with round_size and splits the rest off only when should_split
 * says so; a free first drops "allocated" (requested) and then "active"
 * (completed), merging with free neighbours. Contradictions are anomalies
 * and leave the state untouched. Expandable mapping is in expand.c. */
#include <string.h>

#include "memhist/error.h"
#include "model_int.h"

static int replay_expandable(const struct mh_model *m, const struct mh__segment *s)
{
    return s->expandable || m->saw_expandable || m->conf.expandable_segments;
}

/* The inactive block that starts at `addr`, splitting one that covers it
 * when the trace allocates inside a free block; NULL with *anom set when the
 * address is outside every segment or inside a live block. */
static struct mh__block *free_block_at(struct mh_model *m, struct mh__device *d, uint64_t addr,
                                       int *anom)
{
    struct mh__block *b = mh__addrmap_get(&d->blocks, addr);
    if (!b) {
        struct mh__segment *s = mh__seg_containing(d, addr);
        if (!s) {
            *anom = MH_ANOM_ALLOC_OUTSIDE_SEGMENT;
            return NULL;
        }
        for (b = s->first; b && addr - b->addr >= b->size; b = b->next)
            ;
        if (!b || b->state != MH_BLOCK_INACTIVE) {
            *anom = MH_ANOM_ALLOC_OVERLAP;
            return NULL;
        }
        if (!(b = mh__mblock_split(m, d, b, addr))) {
            *anom = -1;
            return NULL;
        }
    }
    if (b->state != MH_BLOCK_INACTIVE) {
        *anom = MH_ANOM_ALLOC_OVERLAP;
        return NULL;
    }
    return b;
}

static int apply_alloc(struct mh_model *m, struct mh__device *d, const struct mh_event *ev,
                       struct mh_apply_result *res)
{
    int anom = 0;
    struct mh__block *b = free_block_at(m, d, ev->addr, &anom);
    if (!b) {
        if (anom < 0)
            return MH_ENOMEM;
        mh__model_anomaly(m, res, anom);
        return 0;
    }
    if (b->size < ev->size) { /* the request itself runs into the next block */
        mh__mblock_merge(m, d, b); /* undo a split made by free_block_at */
        mh__model_anomaly(m, res, MH_ANOM_ALLOC_OVERLAP);
        return 0;
    }
    /* A block smaller than the rounded size (settings differ from the run's)
     * is taken whole. An imported block of known size (larger than the
     * rounding when torch did not split the rest off) keeps its size. */
    uint64_t rounded = ev->block_size >= ev->size && ev->block_size ? ev->block_size
                                                                    : mh_round_size(&m->conf, ev->size);
    uint64_t take = rounded < b->size ? rounded : b->size;
    struct mh__segment *s = b->seg;
    int split = ev->block_size ? b->size > take
                               : mh_should_split(&m->conf, s->small_pool, replay_expandable(m, s),
                                                 b->size, take);
    if (split && !mh__mblock_split(m, d, b, b->addr + take))
        return MH_ENOMEM;
    b->requested = ev->size;
    b->stack = ev->stack;
    b->str = ev->str ? ev->str : mh_model_scope(m, ev->thread);
    b->alloc_time_ns = ev->time_ns;
    b->alloc_step = mh__device_step(m, d);
    b->phase = (uint8_t)m->phase;
    b->stream = ev->stream;
    memset(b->words, 0, sizeof b->words);
    mh__mblock_set_state(d, b, MH_BLOCK_ALLOCATED);
    d->stats.allocs++;
    d->acc.s.allocs++;
    res->allocated_delta = (int64_t)b->size;
    res->block_size = b->size;
    res->block_stack = b->stack;
    res->block_words = b->words;
    return 0;
}

static int apply_free(struct mh_model *m, struct mh__device *d, const struct mh_event *ev,
                      struct mh_apply_result *res)
{
    struct mh__block *b = mh__addrmap_get(&d->blocks, ev->addr);
    int completed = ev->kind == MH_EV_FREE_COMPLETED;
    if (!b || b->state == MH_BLOCK_INACTIVE || (!completed && b->state != MH_BLOCK_ALLOCATED)) {
        mh__model_anomaly(m, res, MH_ANOM_FREE_UNKNOWN);
        return 0;
    }
    res->block_size = b->size;
    res->block_stack = b->stack;
    memcpy(res->freed_words, b->words, sizeof res->freed_words);
    res->block_words = res->freed_words;
    if (b->state == MH_BLOCK_ALLOCATED) {
        res->allocated_delta = -(int64_t)b->size;
        d->stats.frees++;
        d->acc.s.frees++;
    }
    if (!completed) {
        mh__mblock_set_state(d, b, MH_BLOCK_PENDING_FREE);
        return 0;
    }
    mh__mblock_set_state(d, b, MH_BLOCK_INACTIVE);
    b->requested = 0;
    b->stack = 0;
    b->str = 0;
    mh__mblock_merge(m, d, b);
    return 0;
}

/* Pool of a new segment: from the event flags when known, else a 2 MiB
 * non-expandable segment is small-pool and anything else large-pool. */
static int segment_small(const struct mh_event *ev, int expandable)
{
    if (ev->flags & MH_EVF_POOL_KNOWN)
        return (ev->flags & MH_EVF_POOL_SMALL) != 0;
    return !expandable && ev->size == 2 * MH_MB;
}

static int apply_segment_alloc(struct mh_model *m, struct mh__device *d, const struct mh_event *ev,
                               struct mh_apply_result *res)
{
    struct mh__segment *prev = mh__segtree_floor(d->root, ev->addr + ev->size - 1);
    if (prev && prev->addr + prev->size > ev->addr) {
        mh__model_anomaly(m, res, MH_ANOM_SEGMENT_OVERLAP);
        return 0;
    }
    int expandable = (ev->flags & MH_EVF_EXPANDABLE) != 0;
    struct mh__segment *s;
    int rc = mh__seg_create(m, d, ev, segment_small(ev, expandable), expandable, &s);
    if (rc)
        return rc;
    mh__driver_claim(d, ev->addr, ev->size);
    d->stats.segment_allocs++;
    d->acc.s.segment_allocs++;
    res->reserved_delta = (int64_t)ev->size;
    return 0;
}

static int apply_segment_free(struct mh_model *m, struct mh__device *d, const struct mh_event *ev,
                              struct mh_apply_result *res)
{
    struct mh__segment *s = mh__segtree_floor(d->root, ev->addr);
    if (!s || s->addr != ev->addr) {
        mh__model_anomaly(m, res, MH_ANOM_SEGMENT_FREE_UNKNOWN);
        return 0;
    }
    if (s->active) /* still applied, so the state matches the allocator's */
        mh__model_anomaly(m, res, MH_ANOM_SEGMENT_FREE_BUSY);
    res->allocated_delta = -(int64_t)s->allocated;
    res->reserved_delta = -(int64_t)s->size;
    mh__seg_destroy(m, d, s);
    d->stats.segment_frees++;
    d->acc.s.segment_frees++;
    return 0;
}

int mh__apply_allocator(struct mh_model *m, struct mh__device *d, const struct mh_event *ev,
                        struct mh_apply_result *res)
{
    switch (ev->kind) {
    case MH_EV_ALLOC:
        return apply_alloc(m, d, ev, res);
    case MH_EV_FREE_REQUESTED:
    case MH_EV_FREE_COMPLETED:
        return apply_free(m, d, ev, res);
    case MH_EV_SEGMENT_ALLOC:
        return apply_segment_alloc(m, d, ev, res);
    case MH_EV_SEGMENT_FREE:
        return apply_segment_free(m, d, ev, res);
    case MH_EV_SEGMENT_MAP:
        return mh__apply_map(m, d, ev, res);
    case MH_EV_SEGMENT_UNMAP:
        return mh__apply_unmap(m, d, ev, res);
    case MH_EV_OOM:
        return mh__oom_record(m, d, ev);
    default:
        return 0;
    }
}
