/* release.c - how the simulator gives memory back, as torch does
 * (reference pytorch-allocator.md 1.10 step 6): release_block (cudaFree of an
 * unsplit cached segment), release_available_cached_blocks (oversize blocks,
 * only with max_split_size set), release_cached_blocks (synchronize pending
 * frees, free every unsplit cached segment, unmap free expandable pages),
 * garbage collection by block age, and the reaping of completed pending
 * frees (process_events). Owns nothing; works on the state in sim_int.h. */
#include <stdlib.h>

#include "memhist/error.h"
#include "sim_int.h"

int mh__release_block(struct mh__sim *s, struct mh__sim_block *b)
{
    if (b->resv || b->prev || b->next || b->allocated || b->pending)
        return 0;
    mh__remove_free(b);
    mh__space_give(s, b->addr);
    s->st.reserved -= b->size;
    s->st.segment_frees++;
    mh__emit_alloc_event(s, MH_EV_SEGMENT_FREE, b->addr, b->size, b->stream, s->cur_stack, 0,
                         mh__pool_flags(b->pool, 0));
    mh__block_drop(s, b);
    return 1;
}

/* Frees one oversize block >= max(request, max_split) of the pool, or else
 * several of its largest oversize blocks until enough is released. */
int mh__release_available(struct mh__sim *s, struct mh__sim_pool *p, uint64_t size)
{
    uint64_t max_split = mh_conf_max_split(&s->o.conf);
    if (max_split == UINT64_MAX)
        return 0;
    uint64_t key = size < max_split ? max_split : size;
    struct mh__sim_block *it = mh__tree_lower_bound(p->free_root, key, 0, 0);
    if (it && !it->resv)
        return mh__release_block(s, it);
    it = mh__tree_before(p->free_root, key, 0, 0);
    uint64_t released = 0;
    while (it && released < key && it->size >= max_split) {
        struct mh__sim_block *cur = it;
        it = mh__tree_before(p->free_root, cur->size, cur->seq, cur->addr);
        uint64_t sz = cur->size;
        if (!cur->resv && mh__release_block(s, cur))
            released += sz;
    }
    return released >= key;
}

/* Free blocks of every pool of one kind, in torch's (stream, size, segment age, address)
 * order. Returns the count or -1. */
static long collect_kind(struct mh__sim *s, int small, struct mh__sim_block ***arr, size_t *cap)
{
    long n = 0;
    for (size_t i = 0; i < s->npools && n >= 0; i++)
        if (s->pools[i]->small == small)
            n = mh__tree_collect(s->pools[i]->free_root, arr, cap, (size_t)n);
    return n;
}

static void release_kind(struct mh__sim *s, int small)
{
    struct mh__sim_block **arr = NULL;
    size_t cap = 0;
    long n = collect_kind(s, small, &arr, &cap);
    if (n < 0) {
        s->err = s->err ? s->err : MH_ENOMEM;
        free(arr);
        return;
    }
    for (long i = 0; i < n; i++)
        if (!arr[i]->resv)
            mh__release_block(s, arr[i]);
    for (long i = 0; i < n; i++)
        if (arr[i]->resv)
            mh__unmap_block(s, arr[i]);
    free(arr);
}

int mh__release_cached(struct mh__sim *s)
{
    mh__process_events(s, 1);
    release_kind(s, 0);
    release_kind(s, 1);
    return 1;
}

static uint64_t age_of(const struct mh__sim *s, const struct mh__sim_block *b)
{
    return s->gc_calls[0] - b->gc_base;
}

/* Frees unsplit large-pool segments at least as old as the average until
 * reserved memory is back under threshold x allowed. */
void mh__garbage_collect(struct mh__sim *s)
{
    uint64_t threshold =
        (uint64_t)(s->o.conf.garbage_collection_threshold * (double)s->allowed);
    if (s->st.reserved <= threshold)
        return;
    uint64_t target = s->st.reserved - threshold, reclaimed = 0, total_age = 0;
    struct mh__sim_block **arr = NULL;
    size_t cap = 0;
    long n = collect_kind(s, 0, &arr, &cap), count = 0;
    for (long i = 0; i < n; i++)
        if (!arr[i]->prev && !arr[i]->next) {
            total_age += age_of(s, arr[i]);
            count++;
        }
    int freed = 1;
    while (n > 0 && count > 0 && reclaimed < target && freed) {
        double threshold_age = (double)total_age / (double)count;
        freed = 0;
        for (long i = 0; i < n; i++) {
            struct mh__sim_block *b = arr[i];
            if (!b || b->prev || b->next || b->resv || (double)age_of(s, b) < threshold_age)
                continue;
            uint64_t age = age_of(s, b), sz = b->size;
            if (!mh__release_block(s, b))
                continue;
            arr[i] = NULL;
            freed = 1;
            reclaimed += sz;
            total_age -= age;
            count--;
        }
    }
    free(arr);
}

static int ready(const struct mh__sim *s, const struct mh__sim_block *b)
{
    return b->ready_ns <= s->now;
}

/* the simulator whose pending frees qsort orders (simulators on other threads sort theirs) */
static _Thread_local const struct mh__sim *sort_sim;

/* Completed events first, in completion order; then (synchronize) the rest
 * in free order. */
static int pending_cmp(const void *pa, const void *pb)
{
    const struct mh__sim_block *a = *(struct mh__sim_block *const *)pa;
    const struct mh__sim_block *b = *(struct mh__sim_block *const *)pb;
    int ra = ready(sort_sim, a), rb = ready(sort_sim, b);
    if (ra != rb)
        return ra ? -1 : 1;
    if (ra && a->ready_ns != b->ready_ns)
        return a->ready_ns < b->ready_ns ? -1 : 1;
    return a->pending_seq < b->pending_seq ? -1 : a->pending_seq > b->pending_seq;
}

void mh__process_events(struct mh__sim *s, int all)
{
    if (s->npending == 0)
        return;
    size_t nready = 0, keep = 0;
    struct mh__sim_block **done = malloc(s->npending * sizeof *done);
    if (!done) {
        s->err = s->err ? s->err : MH_ENOMEM;
        return;
    }
    for (size_t i = 0; i < s->npending; i++) {
        struct mh__sim_block *b = s->pending[i];
        if (all || ready(s, b))
            done[nready++] = b;
        else
            s->pending[keep++] = b;
    }
    s->npending = keep;
    sort_sim = s;
    qsort(done, nready, sizeof *done, pending_cmp);
    for (size_t i = 0; i < nready; i++) {
        s->st.pending_frees--;
        mh__free_block(s, done[i], s->cur_stack);
    }
    free(done);
}
