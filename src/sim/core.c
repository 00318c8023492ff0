/* core.c - the simulator's allocation and free paths (torch's malloc, free,
 * alloc_found_block, free_block and try_merge_blocks; reference
 * pytorch-allocator.md 1.10 steps 1-8) and event emission. Owns the block
 * slabs, the pool table, the live-block table and the pending-free list.
 * Release and retry is in release.c, expandable segments in expand.c. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "sim_int.h"

#define SLAB_BLOCKS 256
#define DEFAULT_BASE 0x7f0000000000ull
#define DEFAULT_START_NS 1700000000000000000ull

int mh__sim_new(const struct mh__sim_opts *opts, struct mh__sim **out)
{
    if (!opts || !out)
        return MH_EINVAL;
    struct mh__sim *s = calloc(1, sizeof *s);
    if (!s)
        return MH_ENOMEM;
    s->o = *opts;
    if (!s->o.base_addr)
        s->o.base_addr = DEFAULT_BASE;
    s->now = s->o.start_ns ? s->o.start_ns : DEFAULT_START_NS;
    double f = s->o.conf.memory_fraction;
    s->set_fraction = f > 0.0 && f <= 1.0;
    s->allowed = UINT64_MAX;
    if (s->o.capacity) {
        /* a fraction of a capacity near 2^64 rounds up past it as a double */
        double part = f * (double)s->o.capacity;
        s->allowed = !s->set_fraction          ? s->o.capacity
                     : part >= 18446744073709551615.0 ? s->o.capacity
                                                      : (uint64_t)part;
    }
    *out = s;
    return 0;
}

void mh__sim_free(struct mh__sim *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nslabs; i++)
        free(s->slabs[i]);
    for (size_t i = 0; i < s->npools; i++)
        free(s->pools[i]);
    for (size_t i = 0; i < s->nresvs; i++)
        free(s->resvs[i]);
    free(s->slabs);
    free(s->pools);
    free(s->resvs);
    free(s->pending);
    free(s->ranges);
    mh__map_free(&s->live);
    free(s);
}

struct mh__sim_block *mh__block_new(struct mh__sim *s)
{
    if (!s->spare) {
        if (s->nslabs == s->cap_slabs) {
            size_t nc = s->cap_slabs ? s->cap_slabs * 2 : 16;
            void **ns = realloc(s->slabs, nc * sizeof *ns);
            if (!ns)
                return NULL;
            s->slabs = ns;
            s->cap_slabs = nc;
        }
        struct mh__sim_block *slab = calloc(SLAB_BLOCKS, sizeof *slab);
        if (!slab)
            return NULL;
        s->slabs[s->nslabs++] = slab;
        for (size_t i = 0; i < SLAB_BLOCKS; i++) {
            slab[i].next = s->spare;
            s->spare = &slab[i];
        }
    }
    struct mh__sim_block *b = s->spare;
    s->spare = b->next;
    memset(b, 0, sizeof *b);
    return b;
}

void mh__block_drop(struct mh__sim *s, struct mh__sim_block *b)
{
    b->next = s->spare;
    s->spare = b;
}

static uint32_t prio_of(uint64_t addr)
{
    addr ^= addr >> 31;
    addr *= 0x9e3779b97f4a7c15ull;
    return (uint32_t)(addr >> 32);
}

struct mh__sim_pool *mh__pool_get(struct mh__sim *s, uint64_t stream, int small)
{
    struct mh__sim_pool *lp = s->last_pool;
    if (lp && lp->stream == stream && lp->small == small)
        return lp;
    size_t i = 0;
    while (i < s->npools &&
           (s->pools[i]->stream < stream || (s->pools[i]->stream == stream && s->pools[i]->small < small)))
        i++;
    if (i < s->npools && s->pools[i]->stream == stream && s->pools[i]->small == small)
        return s->last_pool = s->pools[i];
    if (s->npools == s->cap_pools) {
        size_t nc = s->cap_pools ? s->cap_pools * 2 : 8;
        struct mh__sim_pool **np = realloc(s->pools, nc * sizeof *np);
        if (!np)
            return NULL;
        s->pools = np;
        s->cap_pools = nc;
    }
    struct mh__sim_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->stream = stream;
    p->small = small;
    memmove(&s->pools[i + 1], &s->pools[i], (s->npools - i) * sizeof *s->pools);
    s->pools[i] = p;
    s->npools++;
    return s->last_pool = p;
}

uint8_t mh__pool_flags(const struct mh__sim_pool *p, int expandable)
{
    return (uint8_t)(MH_EVF_POOL_KNOWN | (p->small ? MH_EVF_POOL_SMALL : 0) |
                     (expandable ? MH_EVF_EXPANDABLE : 0));
}

int mh__deliver(struct mh__sim *s, const struct mh_event *ev)
{
    int rc = 0;
    if (s->o.writer)
        rc = mh_writer_event(s->o.writer, ev);
    if (rc == 0 && s->o.emit)
        rc = s->o.emit(s->o.emit_user, ev);
    if (rc && !s->err)
        s->err = rc < 0 ? rc : MH_ESTATE;
    return rc;
}

int mh__emit_alloc_event(struct mh__sim *s, int kind, uint64_t addr, uint64_t size,
                         uint64_t stream, uint32_t stack, uint32_t str, uint8_t flags)
{
    struct mh_event ev;
    memset(&ev, 0, sizeof ev);
    ev.time_ns = s->now;
    ev.addr = addr;
    ev.size = size;
    ev.stream = stream;
    ev.stack = stack;
    ev.str = str;
    ev.device = (int16_t)s->o.device;
    ev.kind = (uint8_t)kind;
    ev.flags = flags;
    return mh__deliver(s, &ev);
}

int mh__sim_emit(struct mh__sim *s, const struct mh_event *ev)
{
    struct mh_event e = *ev;
    e.time_ns = s->now;
    e.device = (int16_t)s->o.device;
    mh__deliver(s, &e);
    return s->err;
}

void mh__insert_free(struct mh__sim *s, struct mh__sim_block *b)
{
    b->key1 = b->size;
    b->prio = prio_of(b->addr);
    b->gc_base = s->gc_calls[b->pool->small];
    b->in_tree = 1;
    mh__tree_insert(&b->pool->free_root, b);
}

void mh__remove_free(struct mh__sim_block *b)
{
    if (!b->in_tree)
        return;
    mh__tree_erase(b->mapped ? &b->pool->free_root : &b->pool->unmapped_root, b);
    b->in_tree = 0;
}

/* Merges free neighbour `src` into `dst` (dst is not in a tree) and
 * recycles src. Neighbours merge only when free, without pending events, and
 * equally mapped (torch's try_merge_blocks). */
void mh__try_merge(struct mh__sim *s, struct mh__sim_block *dst, struct mh__sim_block *src)
{
    if (!src || src->allocated || src->pending || src->mapped != dst->mapped)
        return;
    mh__remove_free(src);
    if (dst->prev == src) {
        dst->addr = src->addr;
        dst->prev = src->prev;
        if (dst->prev)
            dst->prev->next = dst;
    } else {
        dst->next = src->next;
        if (dst->next)
            dst->next->prev = dst;
    }
    dst->size += src->size;
    mh__block_drop(s, src);
}

void mh__free_block(struct mh__sim *s, struct mh__sim_block *b, uint32_t stack)
{
    mh__emit_alloc_event(s, MH_EV_FREE_COMPLETED, b->addr, b->requested, b->stream,
                         stack ? stack : b->stack, b->str, 0);
    mh__map_del(&s->live, b->addr);
    s->st.active -= b->size;
    s->st.requested -= b->requested;
    b->pending = 0;
    b->stack = b->str = 0;
    mh__try_merge(s, b, b->prev);
    mh__try_merge(s, b, b->next);
    mh__insert_free(s, b);
}
