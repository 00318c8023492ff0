/* expand.c - expandable segments in the simulator (reference
 * pytorch-allocator.md 1.10 step 9): one virtual reservation per (stream,
 * pool) of 1.125 x device memory, physical pages (2 MiB small pool,
 * large_segment_size large pool) mapped on demand at the lowest address
 * with room (SEGMENT_MAP) and unmapped when whole pages are free on release
 * (SEGMENT_UNMAP). Reserving address space emits nothing, as in torch. Owns
 * the reservations. */
#include <stdlib.h>

#include "memhist/error.h"
#include "sim_int.h"

#define UNLIMITED_SPACE (1024ull * 1024 * 1024 * 1024)

static void insert_unmapped(struct mh__sim_block *b)
{
    b->mapped = 0;
    b->key1 = 0;
    b->prio = (uint32_t)((b->addr * 0x9e3779b97f4a7c15ull) >> 32);
    b->in_tree = 1;
    mh__tree_insert(&b->pool->unmapped_root, b);
}

static int allocatable(const struct mh__sim_block *b)
{
    return b && !b->allocated && !b->pending;
}

static int has_room(const struct mh__sim_block *b, uint64_t size)
{
    uint64_t bytes = 0;
    while (bytes < size && allocatable(b)) {
        bytes += b->size;
        b = b->next;
    }
    return bytes >= size;
}

static uint64_t reservation_size(const struct mh__sim *s, uint64_t page)
{
    uint64_t cap = s->o.capacity ? s->o.capacity : UNLIMITED_SPACE;
    return (cap + cap / 8 + page - 1) / page * page;
}

/* A new reservation at `want` (0: anywhere; `exact`: there or nowhere), as
 * one unmapped block. */
static struct mh__sim_block *reserve(struct mh__sim *s, struct mh__sim_pool *p, uint64_t want,
                                     int exact)
{
    uint64_t page = mh_expandable_page_size(&s->o.conf, p->small);
    uint64_t size = reservation_size(s, page), base = 0;
    if (s->nresvs == s->cap_resvs) {
        size_t nc = s->cap_resvs ? s->cap_resvs * 2 : 8;
        struct mh__sim_resv **nr = realloc(s->resvs, nc * sizeof *nr);
        if (!nr)
            return NULL;
        s->resvs = nr;
        s->cap_resvs = nc;
    }
    struct mh__sim_resv *r = calloc(1, sizeof *r);
    struct mh__sim_block *b = mh__block_new(s);
    int taken = r && b && mh__space_take(s, size, want, &base) == 0;
    if (!taken || (exact && base != want)) {
        if (taken)
            mh__space_give(s, base);
        free(r);
        if (b)
            mh__block_drop(s, b);
        return NULL;
    }
    r->base = base;
    r->size = size;
    r->page = page;
    s->resvs[s->nresvs++] = r;
    b->addr = base;
    b->size = size;
    b->stream = p->stream;
    b->pool = p;
    b->resv = r;
    insert_unmapped(b);
    return b;
}

static struct mh__sim_block *new_reservation(struct mh__sim *s, struct mh__sim_pool *p)
{
    uint64_t page = mh_expandable_page_size(&s->o.conf, p->small), want = 0;
    if (s->o.addr_fn &&
        !s->o.addr_fn(s->o.addr_user, 1, reservation_size(s, page), p->stream, p->small, &want))
        want = 0;
    return reserve(s, p, want, 0);
}

/* torch's find_expandable_block: the lowest unmapped block (or the free
 * block just before it) with enough free-plus-unmapped room after it. */
static struct mh__sim_block *find_block(struct mh__sim *s, struct mh__sim_pool *p, uint64_t size)
{
    for (struct mh__sim_block *u = mh__tree_lower_bound(p->unmapped_root, 0, 0, 0); u;
         u = mh__tree_next(p->unmapped_root, u)) {
        struct mh__sim_block *c = allocatable(u->prev) ? u->prev : u;
        if (has_room(c, size))
            return c;
    }
    return new_reservation(s, p);
}

/* Maps whole pages from the start of unmapped block `b` covering `size`
 * bytes and merges with free mapped neighbours. Returns the merged block, or
 * NULL when the device has no room. */
static struct mh__sim_block *map_block(struct mh__sim *s, struct mh__sim_block *b, uint64_t size)
{
    uint64_t page = b->resv->page;
    uint64_t bytes = (size + page - 1) / page * page;
    if (bytes > b->size)
        bytes = b->size;
    if (s->o.capacity && s->st.reserved + bytes > s->o.capacity)
        return NULL;
    uint64_t at = b->addr;
    mh__remove_free(b);
    if (bytes < b->size) {
        struct mh__sim_block *rest = mh__block_new(s);
        if (!rest) {
            s->err = s->err ? s->err : MH_ENOMEM;
            insert_unmapped(b);
            return NULL;
        }
        rest->addr = b->addr + bytes;
        rest->size = b->size - bytes;
        rest->stream = b->stream;
        rest->pool = b->pool;
        rest->resv = b->resv;
        rest->prev = b;
        rest->next = b->next;
        if (rest->next)
            rest->next->prev = rest;
        b->next = rest;
        insert_unmapped(rest);
        b->size = bytes;
    }
    b->mapped = 1;
    mh__try_merge(s, b, b->prev);
    mh__try_merge(s, b, b->next);
    mh__insert_free(s, b);
    s->st.reserved += bytes;
    if (s->st.reserved > s->st.peak_reserved)
        s->st.peak_reserved = s->st.reserved;
    s->st.maps++;
    mh__emit_alloc_event(s, MH_EV_SEGMENT_MAP, at, bytes, b->stream, s->cur_stack, s->cur_str,
                         mh__pool_flags(b->pool, 1));
    return b;
}

struct mh__sim_block *mh__alloc_expandable(struct mh__sim *s, struct mh__sim_pool *p,
                                           uint64_t size)
{
    struct mh__sim_block *c = find_block(s, p, size);
    if (!c) {
        s->err = s->err ? s->err : MH_ENOMEM;
        return NULL;
    }
    if (!c->mapped && !(c = map_block(s, c, c->size < size ? c->size : size)))
        return NULL;
    while (c->size < size) {
        struct mh__sim_block *n = c->next;
        uint64_t want = size - c->size;
        if (!n || !(c = map_block(s, n, n->size < want ? n->size : want)))
            return NULL;
    }
    mh__remove_free(c);
    return c;
}

static struct mh__sim_block *splice_free(struct mh__sim *s, struct mh__sim_block *like,
                                         uint64_t addr, uint64_t size)
{
    struct mh__sim_block *n = mh__block_new(s);
    if (!n)
        return NULL;
    n->addr = addr;
    n->size = size;
    n->stream = like->stream;
    n->pool = like->pool;
    n->resv = like->resv;
    n->mapped = 1;
    return n;
}

/* torch's unmap_block: unmaps the whole pages inside free block `b`; the
 * partial pages before and after stay mapped as free blocks of their own. */
void mh__unmap_block(struct mh__sim *s, struct mh__sim_block *b)
{
    const struct mh__sim_resv *r = b->resv;
    uint64_t begin = r->base + (b->addr - r->base + r->page - 1) / r->page * r->page;
    uint64_t end = r->base + (b->addr + b->size - r->base) / r->page * r->page;
    if (begin >= end)
        return;
    struct mh__sim_block *before = begin > b->addr ? splice_free(s, b, b->addr, begin - b->addr) : NULL;
    struct mh__sim_block *after =
        b->addr + b->size > end ? splice_free(s, b, end, b->addr + b->size - end) : NULL;
    if ((begin > b->addr && !before) || (b->addr + b->size > end && !after)) {
        s->err = s->err ? s->err : MH_ENOMEM;
        return;
    }
    mh__remove_free(b);
    if (before) {
        before->prev = b->prev;
        if (before->prev)
            before->prev->next = before;
        before->next = b;
        b->prev = before;
        mh__insert_free(s, before);
    }
    if (after) {
        after->next = b->next;
        if (after->next)
            after->next->prev = after;
        after->prev = b;
        b->next = after;
        mh__insert_free(s, after);
    }
    b->addr = begin;
    b->size = end - begin;
    b->mapped = 0;
    mh__try_merge(s, b, b->prev);
    mh__try_merge(s, b, b->next);
    insert_unmapped(b);
    s->st.reserved -= end - begin;
    s->st.unmaps++;
    mh__emit_alloc_event(s, MH_EV_SEGMENT_UNMAP, begin, end - begin, b->stream, s->cur_stack, 0,
                         mh__pool_flags(b->pool, 1));
}

static uint64_t expandable_size(const struct mh__sim_block *b)
{
    return b->size + (b->next && !b->next->mapped ? b->next->size : 0);
}

/* Best fit among expandable blocks prefers, among blocks of at least the
 * request, the one with the least room to grow into, so blocks followed by
 * unmapped space stay available for growth. */
struct mh__sim_block *mh__expandable_best(struct mh__sim_pool *p, struct mh__sim_block *it)
{
    struct mh__sim_block *next = mh__tree_next(p->free_root, it);
    while (it->resv && next && expandable_size(next) < expandable_size(it)) {
        it = next;
        next = mh__tree_next(p->free_root, next);
    }
    return it;
}

/* Cuts unmapped block `u` to [addr, addr + size), the parts before and after
 * staying unmapped. Returns 0 or MH_ENOMEM. */
static int cut_unmapped(struct mh__sim *s, struct mh__sim_block *u, uint64_t addr, uint64_t size)
{
    struct mh__sim_block *front = NULL, *rest = NULL;
    if ((addr > u->addr && !(front = mh__block_new(s))) ||
        (addr + size < u->addr + u->size && !(rest = mh__block_new(s)))) {
        if (front)
            mh__block_drop(s, front);
        return MH_ENOMEM;
    }
    mh__remove_free(u);
    if (front) {
        *front = (struct mh__sim_block){.addr = u->addr, .size = addr - u->addr, .stream = u->stream,
                                        .pool = u->pool, .resv = u->resv, .prev = u->prev, .next = u};
        if (front->prev)
            front->prev->next = front;
        u->prev = front;
        insert_unmapped(front);
    }
    if (rest) {
        *rest = (struct mh__sim_block){.addr = addr + size, .size = u->addr + u->size - addr - size,
                                       .stream = u->stream, .pool = u->pool, .resv = u->resv,
                                       .prev = u, .next = u->next};
        if (rest->next)
            rest->next->prev = rest;
        u->next = rest;
        insert_unmapped(rest);
    }
    u->addr = addr;
    u->size = size;
    return 0;
}

/* A seeded reservation is sized as a new one would be, but the snapshot
 * does not say where it ended: when a range seeded later lies in its
 * unmapped tail, the reservation ends there. Returns 1 if one did. */
static int end_reservation_at(struct mh__sim *s, uint64_t addr)
{
    for (size_t i = 0; i < s->npools; i++) {
        struct mh__sim_pool *q = s->pools[i];
        struct mh__sim_block *u = mh__tree_lower_bound(q->unmapped_root, 0, 0, 0);
        while (u && !(u->addr <= addr && addr - u->addr < u->size))
            u = mh__tree_next(q->unmapped_root, u);
        if (!u)
            continue;
        struct mh__sim_resv *r = u->resv;
        if (u->next || u->addr == addr || u->addr + u->size != r->base + r->size)
            return 0;
        mh__remove_free(u);
        u->size = addr - u->addr;
        insert_unmapped(u);
        r->size = addr - r->base;
        mh__space_shrink(s, r->base, r->size);
        return 1;
    }
    return 0;
}

struct mh__sim_block *mh__expandable_seed(struct mh__sim *s, struct mh__sim_pool *p,
                                          uint64_t addr, uint64_t size)
{
    struct mh__sim_block *u = mh__tree_lower_bound(p->unmapped_root, 0, 0, 0);
    while (u && !(u->addr <= addr && addr - u->addr <= u->size && size <= u->addr + u->size - addr))
        u = mh__tree_next(p->unmapped_root, u);
    if (!u) {
        end_reservation_at(s, addr);
        for (size_t i = 0; i < s->nresvs; i++)
            if (addr >= s->resvs[i]->base && addr - s->resvs[i]->base < s->resvs[i]->size)
                return NULL; /* inside a reservation, but not in its unmapped space */
        u = reserve(s, p, addr, 1);
        if (!u || size > u->size)
            return NULL;
    }
    const struct mh__sim_resv *r = u->resv;
    if ((addr - r->base) % r->page || size % r->page || size == 0 ||
        cut_unmapped(s, u, addr, size) != 0)
        return NULL;
    u->mapped = 1;
    mh__try_merge(s, u, u->prev);
    mh__try_merge(s, u, u->next);
    mh__insert_free(s, u);
    s->st.reserved += size;
    if (s->st.reserved > s->st.peak_reserved)
        s->st.peak_reserved = s->st.reserved;
    return u;
}
