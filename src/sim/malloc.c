/* malloc.c - torch's DeviceCachingAllocator::malloc and free as the
 * simulator runs them (reference pytorch-allocator.md 1.10): reap completed
 * pending frees, round, choose the pool, best fit, then on a miss garbage
 * collection, a new segment, release of oversize blocks, release of all
 * cached blocks and a retry, and finally OOM. Owns no state of its own. */
#include <stdlib.h>

#include "memhist/error.h"
#include "sim_int.h"

static int gc_enabled(const struct mh__sim *s)
{
    return s->set_fraction && s->o.conf.garbage_collection_threshold > 0.0;
}

/* torch's get_free_block: the smallest free block of the pool with size >=
 * request; oversize blocks are refused to requests below max_split_size and
 * to requests they exceed by max_non_split_rounding or more. */
static struct mh__sim_block *get_free_block(struct mh__sim *s, struct mh__sim_pool *p,
                                            uint64_t size)
{
    if (gc_enabled(s))
        s->gc_calls[p->small]++;
    struct mh__sim_block *b = mh__tree_lower_bound(p->free_root, size, 0, 0);
    if (!b)
        return NULL;
    if (b->resv && s->o.conf.expandable_segments)
        b = mh__expandable_best(p, b);
    uint64_t max_split = mh_conf_max_split(&s->o.conf);
    uint64_t max_nsr = mh_conf_max_non_split_rounding(&s->o.conf);
    if (size < max_split && b->size >= max_split)
        return NULL;
    if (size >= max_split && b->size >= size + max_nsr)
        return NULL;
    mh__remove_free(b);
    return b;
}

/* torch's alloc_block: a new cudaMalloc'd segment (or mapped expandable
 * pages), refused over the memory fraction or the device capacity. */
static struct mh__sim_block *alloc_block(struct mh__sim *s, struct mh__sim_pool *p, uint64_t size,
                                         uint64_t alloc_size, int retry)
{
    if (retry)
        s->st.alloc_retries++;
    if (s->set_fraction && s->st.reserved + alloc_size > s->allowed)
        return NULL;
    if (s->o.conf.expandable_segments)
        return mh__alloc_expandable(s, p, size);
    if (s->o.capacity && s->st.reserved + alloc_size > s->o.capacity)
        return NULL;
    uint64_t want = 0, addr;
    if (s->o.addr_fn && !s->o.addr_fn(s->o.addr_user, 0, alloc_size, p->stream, p->small, &want))
        want = 0;
    struct mh__sim_block *b = mh__block_new(s);
    if (!b || mh__space_take(s, alloc_size, want, &addr) != 0) {
        if (b)
            mh__block_drop(s, b);
        s->err = s->err ? s->err : MH_ENOMEM;
        return NULL;
    }
    b->addr = addr;
    b->size = alloc_size;
    b->seq = s->o.address_ties ? 0 : ++s->segments_made;
    b->stream = p->stream;
    b->pool = p;
    b->mapped = 1;
    s->st.reserved += alloc_size;
    if (s->st.reserved > s->st.peak_reserved)
        s->st.peak_reserved = s->st.reserved;
    s->st.segment_allocs++;
    mh__emit_alloc_event(s, MH_EV_SEGMENT_ALLOC, addr, alloc_size, p->stream, s->cur_stack,
                         s->cur_str, mh__pool_flags(p, 0));
    return b;
}

/* torch's alloc_found_block: split off the front when should_split says so,
 * mark allocated and emit ALLOC with the requested size. */
static int alloc_found(struct mh__sim *s, struct mh__sim_block *b, uint64_t rounded,
                       uint64_t size, uint64_t *addr)
{
    struct mh__sim_pool *p = b->pool;
    if (mh_should_split(&s->o.conf, p->small, s->o.conf.expandable_segments, b->size, rounded)) {
        struct mh__sim_block *rest = b;
        b = mh__block_new(s);
        if (!b)
            return MH_ENOMEM;
        b->addr = rest->addr;
        b->size = rounded;
        b->seq = rest->seq;
        b->stream = rest->stream;
        b->pool = p;
        b->resv = rest->resv;
        b->mapped = 1;
        b->prev = rest->prev;
        if (b->prev)
            b->prev->next = b;
        b->next = rest;
        rest->prev = b;
        rest->addr += rounded;
        rest->size -= rounded;
        mh__insert_free(s, rest);
    }
    b->allocated = 1;
    b->requested = size;
    b->stack = s->cur_stack;
    b->str = s->cur_str;
    if (mh__map_put(&s->live, b->addr, b) != 0)
        return MH_ENOMEM;
    s->st.allocated += b->size;
    s->st.active += b->size;
    s->st.requested += size;
    s->st.allocs++;
    if (s->st.allocated > s->st.peak_allocated)
        s->st.peak_allocated = s->st.allocated;
    *addr = b->addr;
    mh__emit_alloc_event(s, MH_EV_ALLOC, b->addr, size, b->stream, b->stack, b->str, 0);
    return 0;
}

static int oom(struct mh__sim *s, struct mh__sim_pool *p, uint64_t rounded)
{
    uint64_t cap = s->o.capacity;
    uint64_t device_free = cap > s->st.reserved ? cap - s->st.reserved : 0;
    s->st.ooms++;
    mh__emit_alloc_event(s, MH_EV_OOM, device_free, rounded, p->stream, s->cur_stack, s->cur_str,
                         0);
    return s->err ? s->err : MH_EOOM_SIM;
}

int mh__sim_malloc(struct mh__sim *s, uint64_t size, uint64_t stream, uint32_t stack, uint32_t str,
                   uint64_t *addr)
{
    if (size == 0 || size > UINT64_MAX / 4)
        return MH_EINVAL;
    s->cur_stack = stack;
    s->cur_str = str;
    mh__process_events(s, 0);
    const struct mh_alloc_conf *c = &s->o.conf;
    uint64_t rounded = mh_round_size(c, size);
    struct mh__sim_pool *p = mh__pool_get(s, stream, mh_is_small_size(rounded));
    if (!p)
        return MH_ENOMEM;
    uint64_t alloc_size = mh_allocation_size(c, rounded);
    struct mh__sim_block *b = get_free_block(s, p, rounded);
    if (!b) {
        if (gc_enabled(s))
            mh__garbage_collect(s);
        b = alloc_block(s, p, rounded, alloc_size, 0);
        if (!b && !s->err && mh__release_available(s, p, rounded))
            b = alloc_block(s, p, rounded, alloc_size, 0);
        if (!b && !s->err && mh__release_cached(s))
            b = alloc_block(s, p, rounded, alloc_size, 1);
    }
    if (s->err)
        return s->err;
    if (!b)
        return oom(s, p, rounded);
    int rc = alloc_found(s, b, rounded, size, addr);
    return rc ? rc : s->err;
}

int mh__sim_free_block(struct mh__sim *s, uint64_t addr, uint32_t stack, int deferred,
                       uint64_t ready_ns)
{
    struct mh__sim_block *b = mh__map_get(&s->live, addr);
    if (!b || !b->allocated)
        return MH_ENOTFOUND;
    b->allocated = 0;
    s->st.allocated -= b->size;
    s->st.frees++;
    mh__emit_alloc_event(s, MH_EV_FREE_REQUESTED, b->addr, b->requested, b->stream,
                         stack ? stack : b->stack, b->str, 0);
    if (!deferred) {
        mh__free_block(s, b, stack);
        return s->err;
    }
    int rc = mh__pending_add(s, b, ready_ns);
    return rc ? rc : s->err;
}

int mh__pending_add(struct mh__sim *s, struct mh__sim_block *b, uint64_t ready_ns)
{
    if (s->npending == s->cap_pending) {
        size_t nc = s->cap_pending ? s->cap_pending * 2 : 64;
        struct mh__sim_block **np = realloc(s->pending, nc * sizeof *np);
        if (!np)
            return MH_ENOMEM;
        s->pending = np;
        s->cap_pending = nc;
    }
    b->pending = 1;
    b->ready_ns = ready_ns;
    b->pending_seq = ++s->pending_seq;
    s->pending[s->npending++] = b;
    s->st.pending_frees++;
    return 0;
}

int mh__sim_mark_ready(struct mh__sim *s, uint64_t addr)
{
    struct mh__sim_block *b = mh__map_get(&s->live, addr);
    if (!b || !b->pending)
        return MH_ENOTFOUND;
    b->ready_ns = s->now;
    b->pending_seq = ++s->pending_seq;
    return 0;
}

int mh__sim_empty_cache(struct mh__sim *s)
{
    s->cur_stack = 0;
    s->cur_str = 0;
    mh__release_cached(s);
    return s->err;
}
