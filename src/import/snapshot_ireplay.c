/* snapshot_ireplay.c - snapshot import, second half: per device, replays the
 * trace backwards from the snapshot's final segments (undoing each entry as
 * the viewer's State History view does) to find the segments and blocks that
 * were live before the first entry, writes them as MH_EVF_PREEXISTING events,
 * then writes the trace entries of all devices and the annotations merged in
 * time order. The backwards pass also gives each segment event its pool and
 * expandable flags, and each block event its pool, from the state it acted
 * on. Entries that contradict the state are counted, not fatal. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "snapshot_import_int.h"

#define SMALL_SEGMENT (2ull << 20)
#define REPLAY_CHUNK 4096u

/* A live block during the backwards pass. */
struct rblk {
    uint64_t addr, size, requested, stream; /* size 0: unknown (freed during the trace) */
    uint64_t freed_at;                      /* size 0: the index of its free_completed entry */
    uint32_t stack;
    uint32_t pool[2];
    uint8_t state, live;
};

/* A block the trace allocates: where, and the index of its entry. */
struct seen_alloc {
    uint64_t addr, at;
};

struct rstate {
    struct mh__isegset segs; /* by address (snapshot_isegs.c) */
    struct seen_alloc *allocs; /* every alloc entry, sorted by address before use */
    size_t nallocs, alloccap;
    struct rblk *blk;
    size_t nblk, blkcap;
    uint32_t *map; /* open addressing: index + 1 into blk, 0 = empty */
    size_t mapcap;
};

static size_t addr_hash(uint64_t a, size_t cap)
{
    return (size_t)((a >> 4) * 0x9e3779b97f4a7c15ull >> 17) & (cap - 1);
}

static struct rblk *find_blk(const struct rstate *st, uint64_t addr)
{
    for (size_t i = addr_hash(addr, st->mapcap); st->map[i]; i = (i + 1) & (st->mapcap - 1))
        if (st->blk[st->map[i] - 1].addr == addr)
            return &st->blk[st->map[i] - 1];
    return NULL;
}

static int map_rebuild(struct rstate *st, size_t cap)
{
    uint32_t *m = calloc(cap, sizeof *m);
    if (!m)
        return MH_ENOMEM;
    free(st->map);
    st->map = m;
    st->mapcap = cap;
    for (size_t b = 0; b < st->nblk; b++) {
        size_t i = addr_hash(st->blk[b].addr, cap);
        while (m[i])
            i = (i + 1) & (cap - 1);
        m[i] = (uint32_t)(b + 1);
    }
    return 0;
}

/* The record for `addr`, created (not live) if new. */
static struct rblk *get_blk(struct rstate *st, uint64_t addr)
{
    struct rblk *b = st->mapcap ? find_blk(st, addr) : NULL;
    if (b)
        return b;
    if (st->nblk == st->blkcap) {
        size_t cap = st->blkcap ? 2 * st->blkcap : 256;
        struct rblk *p = realloc(st->blk, cap * sizeof *p);
        if (!p)
            return NULL;
        st->blk = p;
        st->blkcap = cap;
    }
    b = &st->blk[st->nblk++];
    memset(b, 0, sizeof *b);
    b->addr = addr;
    if (2 * st->nblk > st->mapcap) {
        if (map_rebuild(st, st->mapcap ? 2 * st->mapcap : 1024))
            return NULL;
    } else {
        size_t i = addr_hash(addr, st->mapcap);
        while (st->map[i])
            i = (i + 1) & (st->mapcap - 1);
        st->map[i] = (uint32_t)st->nblk;
    }
    return b;
}

static uint8_t seg_flags(const struct mh__iseg *g)
{
    return (uint8_t)(MH_EVF_POOL_KNOWN | (g->small ? MH_EVF_POOL_SMALL : 0) |
                     (g->expandable ? MH_EVF_EXPANDABLE : 0));
}

/* Undo of a mapping: cut [a, a+n) out of the expandable segment holding it. */
static int unmap_range(struct rstate *st, struct mh__ient *e)
{
    struct mh__iseg *f = mh__isegset_find(&st->segs, e->addr);
    if (!f || e->addr + e->size > f->address + f->size || e->addr + e->size < e->addr)
        return 1;
    struct mh__iseg g = *f;
    e->flags = seg_flags(&g) | MH_EVF_EXPANDABLE;
    memcpy(e->pool, g.pool, sizeof e->pool);
    mh__isegset_remove(&st->segs, g.address);
    struct mh__iseg left = g, right = g;
    left.size = e->addr - g.address;
    right.address = e->addr + e->size;
    right.size = g.address + g.size - right.address;
    int rc = 0;
    if (left.size)
        rc = mh__isegset_insert(&st->segs, &left);
    if (right.size && rc == 0)
        rc = mh__isegset_insert(&st->segs, &right);
    return rc;
}

/* Undo of an unmapping: the range becomes mapped again, joining neighbours. */
static int map_range(struct rstate *st, struct mh__ient *e, int device)
{
    struct mh__iseg g;
    memset(&g, 0, sizeof g);
    g.device = device;
    g.address = e->addr;
    g.size = e->size;
    g.stream = e->stream;
    g.expandable = 1;
    g.small = e->size == SMALL_SEGMENT;
    memcpy(g.pool, e->pool, sizeof g.pool);
    struct mh__iseg *l = e->addr ? mh__isegset_find(&st->segs, e->addr - 1) : NULL;
    if (l && l->expandable && l->address + l->size == e->addr) {
        g = *l;
        g.size += e->size;
        mh__isegset_remove(&st->segs, g.address);
    }
    struct mh__iseg *r = mh__isegset_find(&st->segs, e->addr + e->size);
    if (r && r->expandable && r->address == e->addr + e->size) {
        g.size += r->size;
        mh__isegset_remove(&st->segs, r->address);
    }
    e->flags = seg_flags(&g);
    return mh__isegset_insert(&st->segs, &g);
}

static void entry_pool(struct rstate *st, struct mh__ient *e)
{
    const struct mh__iseg *g = e->has_pool ? NULL : mh__isegset_find(&st->segs, e->addr);
    if (g)
        memcpy(e->pool, g->pool, sizeof e->pool);
}

static int note_alloc(struct rstate *st, uint64_t addr, uint64_t at)
{
    if (st->nallocs == st->alloccap) {
        size_t cap = st->alloccap ? 2 * st->alloccap : 1024;
        struct seen_alloc *p = realloc(st->allocs, cap * sizeof *p);
        if (!p)
            return -1;
        st->allocs = p;
        st->alloccap = cap;
    }
    st->allocs[st->nallocs++] = (struct seen_alloc){addr, at};
    return 0;
}

/* Undoes entry `at` of the trace; returns 1 if it contradicts the state. */
static int undo(struct rstate *st, struct mh__ient *e, int device, uint64_t at)
{
    struct rblk *b;
    struct mh__iseg *g;
    switch (e->kind) {
    case MH_EV_ALLOC:
        if (!(b = get_blk(st, e->addr)) || note_alloc(st, e->addr, at) < 0)
            return -1;
        entry_pool(st, e);
        if (!b->live || b->state != MH_BLOCK_ALLOCATED)
            return 1;
        b->live = 0;
        return 0;
    case MH_EV_FREE_REQUESTED:
        if (!(b = get_blk(st, e->addr)))
            return -1;
        entry_pool(st, e);
        if (!b->live)
            return 1;
        b->state = MH_BLOCK_ALLOCATED;
        return 0;
    case MH_EV_FREE_COMPLETED:
        if (!(b = get_blk(st, e->addr)))
            return -1;
        entry_pool(st, e);
        if (b->live)
            return 1;
        b->live = 1;
        b->state = MH_BLOCK_PENDING_FREE;
        b->size = 0;
        b->freed_at = at;
        b->requested = e->size;
        b->stack = e->stack;
        b->stream = e->stream;
        memcpy(b->pool, e->pool, sizeof b->pool);
        return 0;
    case MH_EV_SEGMENT_ALLOC:
        g = mh__isegset_find(&st->segs, e->addr);
        if (!g || g->address != e->addr)
            return 1;
        e->flags = seg_flags(g);
        /* the segment's own frames (what the final state shows for it) ride
         * along when they differ from the entry's */
        if (g->stack != e->stack) {
            e->flags |= MH_EVF_SEGMENT_STACK;
            e->aux = g->stack;
        }
        if (!e->has_pool)
            memcpy(e->pool, g->pool, sizeof e->pool);
        mh__isegset_remove(&st->segs, e->addr);
        return 0;
    case MH_EV_SEGMENT_FREE: {
        struct mh__iseg g;
        memset(&g, 0, sizeof g);
        g.device = device;
        g.address = e->addr;
        g.size = e->size;
        g.stream = e->stream;
        g.stack = e->stack;
        g.small = e->size == SMALL_SEGMENT;
        memcpy(g.pool, e->pool, sizeof g.pool);
        e->flags = seg_flags(&g);
        return mh__isegset_insert(&st->segs, &g);
    }
    case MH_EV_SEGMENT_MAP:
        return unmap_range(st, e);
    case MH_EV_SEGMENT_UNMAP:
        return map_range(st, e, device);
    default:
        return 0;
    }
}

/* The final state of one device, from the snapshot's segments and blocks. */
static int load_final(struct mh__imp *im, int device, struct rstate *st)
{
    /* segments and blocks are sorted by (device, address): take this device's run */
    for (; im->seg_cur < im->nsegs && im->segs[im->seg_cur].device == device; im->seg_cur++) {
        int rc = mh__isegset_insert(&st->segs, &im->segs[im->seg_cur]);
        if (rc < 0)
            return rc;
        im->info->inconsistencies += rc != 0;
    }
    for (; im->blk_cur < im->nblks && im->blks[im->blk_cur].device == device; im->blk_cur++) {
        const struct mh__iblk *s = &im->blks[im->blk_cur];
        struct rblk *b = get_blk(st, s->address);
        if (!b)
            return MH_ENOMEM;
        b->live = 1;
        b->state = s->state;
        b->size = s->size;
        b->requested = s->requested;
        b->stack = s->stack;
        b->stream = s->stream;
        memcpy(b->pool, s->pool, sizeof b->pool);
    }
    return 0;
}

static int cmp_blk(const void *a, const void *b)
{
    const struct rblk *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int by_address(const void *a, const void *b)
{
    const struct seen_alloc *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The lowest address in [lo, hi] of a block the trace allocates before
 * entry `before`, or 0 (st->allocs sorted by address). */
static uint64_t allocated_within(const struct rstate *st, uint64_t lo, uint64_t hi, uint64_t before)
{
    size_t a = 0, z = st->nallocs;
    while (a < z) {
        size_t mid = a + (z - a) / 2;
        if (st->allocs[mid].addr < lo)
            a = mid + 1;
        else
            z = mid;
    }
    for (; a < st->nallocs && st->allocs[a].addr <= hi; a++)
        if (st->allocs[a].at < before)
            return st->allocs[a].addr;
    return 0;
}

/* The size of block `b` (live before the trace, freed during it, so the
 * snapshot does not give it) where its neighbours tell it, else 0. The
 * small pool's blocks are their rounded requests. In the large pool torch
 * splits a block only when more than 1 MiB remains, and every block there
 * is larger than 1 MiB, so the start of the next block (live before the
 * trace, or one the trace allocates while b is live) or the segment's end,
 * at most 1 MiB past b's rounded request, is b's end. */
static uint64_t size_from_neighbours(const struct rstate *st, const struct mh__iseg *g, size_t b,
                                     size_t nlive)
{
    const struct rblk *k = &st->blk[b];
    uint64_t rounded = k->requested < 512 ? 512 : (k->requested + 511) / 512 * 512;
    uint64_t end = k->addr + rounded, seg_end = g->address + g->size;
    if (end < k->addr || end > seg_end) /* a request the segment cannot hold */
        return 0;
    if (g->small)
        return rounded;
    uint64_t next = b + 1 < nlive && st->blk[b + 1].addr < seg_end ? st->blk[b + 1].addr : seg_end;
    uint64_t seen = allocated_within(st, end, end + (1ull << 20), k->freed_at);
    if (seen && seen < next)
        next = seen;
    return next >= end && next - end <= (1ull << 20) ? next - k->addr : 0;
}

static int put(struct mh__imp *im, const struct mh_event *ev)
{
    int rc = mh_writer_event(im->w, ev);
    return rc < 0 ? mh__imp_fail(im, rc, "writing the events: %s", mh_strerror(rc)) : 0;
}

/* The state before the first entry, as preexisting events. */
static int emit_initial(struct mh__imp *im, int device, struct rstate *st)
{
    struct mh__iseg *segs;
    size_t nsegs;
    if (mh__isegset_sorted(&st->segs, &segs, &nsegs))
        return MH_ENOMEM;
    size_t nlive = 0;
    for (size_t i = 0; i < st->nblk; i++)
        if (st->blk[i].live)
            st->blk[nlive++] = st->blk[i];
    if (nlive)
        qsort(st->blk, nlive, sizeof *st->blk, cmp_blk);
    if (st->nallocs)
        qsort(st->allocs, st->nallocs, sizeof *st->allocs, by_address);
    size_t b = 0;
    int rc = 0;
    for (size_t s = 0; !rc && s < nsegs; s++) {
        const struct mh__iseg *g = &segs[s];
        struct mh_event ev;
        memset(&ev, 0, sizeof ev);
        ev.time_ns = im->t_start;
        ev.device = (int16_t)device;
        ev.kind = g->expandable ? MH_EV_SEGMENT_MAP : MH_EV_SEGMENT_ALLOC;
        ev.flags = MH_EVF_PREEXISTING | seg_flags(g);
        ev.addr = g->address;
        ev.size = g->size;
        ev.stream = g->stream;
        ev.stack = g->stack;
        memcpy(ev.pool, g->pool, sizeof ev.pool);
        rc = put(im, &ev);
        im->info->preexisting_segments++;
        for (; !rc && b < nlive && st->blk[b].addr < g->address + g->size; b++) {
            const struct rblk *k = &st->blk[b];
            if (k->addr < g->address) {
                im->info->inconsistencies++;
                continue;
            }
            ev.kind = MH_EV_ALLOC;
            ev.flags = MH_EVF_PREEXISTING;
            ev.addr = k->addr;
            ev.size = k->requested;
            ev.block_size = k->size ? k->size : size_from_neighbours(st, g, b, nlive);
            ev.stack = k->stack ? k->stack : mh__imp_before_trace_stack(im);
            ev.stream = k->stream;
            memcpy(ev.pool, k->pool, sizeof ev.pool);
            im->info->unknown_initial += ev.block_size == 0;
            rc = put(im, &ev);
            if (!rc && k->state == MH_BLOCK_PENDING_FREE) {
                ev.kind = MH_EV_FREE_REQUESTED;
                rc = put(im, &ev);
            }
            im->info->preexisting_blocks++;
        }
    }
    free(segs);
    if (!rc)
        im->info->inconsistencies += nlive - b;
    return rc;
}

static int device_initial(struct mh__imp *im, int device)
{
    struct rstate st;
    memset(&st, 0, sizeof st);
    int rc = load_final(im, device, &st);
    const struct mh__itrace *t = device < im->ndev ? &im->traces[device] : NULL;
    struct mh__ient *chunk = t && t->n ? malloc(REPLAY_CHUNK * sizeof *chunk) : NULL;
    if (t && t->n && !chunk)
        rc = MH_ENOMEM;
    /* from the last chunk to the first; the undo's flags and pools go back */
    for (size_t hi = t ? t->n : 0; !rc && hi > 0;) {
        size_t lo = hi > REPLAY_CHUNK ? hi - REPLAY_CHUNK : 0;
        rc = mh__istore_get(&im->store, t->first + lo, hi - lo, chunk);
        for (size_t i = hi - lo; !rc && i-- > 0;) {
            int u = undo(&st, &chunk[i], device, lo + i);
            if (u < 0)
                rc = MH_ENOMEM;
            im->info->inconsistencies += u == 1;
        }
        if (!rc)
            rc = mh__istore_put(&im->store, t->first + lo, hi - lo, chunk);
        mh__imp_progress(im, hi - lo);
        hi = lo;
    }
    free(chunk);
    if (rc == MH_EIO)
        rc = mh__imp_fail(im, rc, "reading the trace back from its temporary file: %s",
                          mh_strerror(rc));
    if (!rc)
        rc = emit_initial(im, device, &st);
    mh__isegset_free(&st.segs);
    free(st.allocs);
    free(st.blk);
    free(st.map);
    return rc;
}

static int cmp_seg_dev(const void *a, const void *b)
{
    const struct mh__iseg *x = a, *y = b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return x->address < y->address ? -1 : x->address > y->address;
}

static int cmp_blk_dev(const void *a, const void *b)
{
    const struct mh__iblk *x = a, *y = b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return x->address < y->address ? -1 : x->address > y->address;
}

int mh__imp_emit(struct mh__imp *im)
{
    if (im->nsegs)
        qsort(im->segs, im->nsegs, sizeof *im->segs, cmp_seg_dev);
    if (im->nblks)
        qsort(im->blks, im->nblks, sizeof *im->blks, cmp_blk_dev);
    int maxdev = im->ndev - 1;
    for (size_t i = 0; i < im->nsegs; i++)
        if (im->segs[i].device > maxdev)
            maxdev = im->segs[i].device;
    for (int d = 0; d <= maxdev; d++) {
        int rc = device_initial(im, d);
        if (rc)
            return rc;
    }
    return mh__imp_forward(im);
}
