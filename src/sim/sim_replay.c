/* replay.c - what-if replay (see replay.h). Recorded allocations become
 * simulator mallocs; a recorded free becomes a simulator free, deferred when
 * its free_completed came later (cross-stream use) and completed where the
 * recording completed it; a recorded run of segment frees that is not part
 * of a malloc's release-and-retry (not followed by a new segment or an OOM)
 * is an empty_cache() call and is replayed as one. Segment addresses can come
 * from the recording (the address oracle), so under the recorded settings
 * block placement matches exactly. The simulator's own events are compared
 * position by position with the recorded ones. A trace that starts mid-run
 * first seeds the simulator with the state at its start (seed.c). Owns its
 * working tables. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "sim_replay.h"

/* Input events between two progress reports. */
#define PROGRESS_EVERY 65536

int mh__sim_is_allocator_kind(unsigned kind)
{
    return kind <= MH_EV_OOM;
}

/* address -> address, open addressing (0 is never a key). */
struct amap {
    uint64_t *k, *v;
    size_t cap, n;
};

static size_t aslot(uint64_t key, size_t cap)
{
    key ^= key >> 29;
    key *= 0xbf58476d1ce4e5b9ull;
    key ^= key >> 32;
    return (size_t)key & (cap - 1);
}

static int aput(struct amap *m, uint64_t key, uint64_t val)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 1024;
        uint64_t *nk = calloc(nc, sizeof *nk), *nv = calloc(nc, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return MH_ENOMEM;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->k[i])
                continue;
            size_t j = aslot(m->k[i], nc);
            while (nk[j])
                j = (j + 1) & (nc - 1);
            nk[j] = m->k[i];
            nv[j] = m->v[i];
        }
        free(m->k);
        free(m->v);
        m->k = nk;
        m->v = nv;
        m->cap = nc;
    }
    size_t i = aslot(key, m->cap);
    while (m->k[i] && m->k[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->k[i])
        m->n++;
    m->k[i] = key;
    m->v[i] = val;
    return 0;
}

/* Value for key, or 0. Entries are never deleted: a freed address is
 * overwritten by its next allocation. */
static uint64_t aget(const struct amap *m, uint64_t key)
{
    if (!m->cap || !key)
        return 0;
    for (size_t i = aslot(key, m->cap); m->k[i]; i = (i + 1) & (m->cap - 1))
        if (m->k[i] == key)
            return m->v[i];
    return 0;
}

struct replay {
    const struct mh_event *ev;
    size_t n;
    const struct mh_sim_replay_opts *o;
    struct mh_sim_replay_result *res;
    struct mh_sim *sim;
    struct amap addr;       /* recorded block address -> simulated */
    uint8_t *deferred;      /* per event: a free_requested completed later */
    size_t *rec_seg;        /* indices of recorded segment_alloc/segment_map */
    size_t nrec_seg, seg_cursor;
    const struct mh_event **rec_alloc; /* recorded allocator events in order */
    size_t nrec_alloc;
    size_t sim_pos;         /* allocator events the simulator emitted */
};

static int is_segment_kind(unsigned kind)
{
    return kind == MH_EV_SEGMENT_ALLOC || kind == MH_EV_SEGMENT_FREE ||
           kind == MH_EV_SEGMENT_MAP || kind == MH_EV_SEGMENT_UNMAP;
}

static int preexisting(const struct mh_event *e)
{
    return mh__sim_is_allocator_kind(e->kind) && (e->flags & MH_EVF_PREEXISTING);
}

static int on_sim_event(void *user, const struct mh_event *e)
{
    struct replay *rp = user;
    if (mh__sim_is_allocator_kind(e->kind) && !preexisting(e)) {
        if (rp->sim_pos < rp->nrec_alloc) {
            const struct mh_event *r = rp->rec_alloc[rp->sim_pos];
            if (r->kind == e->kind && r->size == e->size &&
                (r->addr == e->addr || e->kind == MH_EV_OOM)) {
                rp->res->matched++;
                rp->res->matched_segment_events += is_segment_kind(e->kind);
            }
        }
        rp->sim_pos++;
        rp->res->simulated_alloc_events++;
        if (e->kind == MH_EV_SEGMENT_ALLOC || e->kind == MH_EV_SEGMENT_MAP)
            rp->seg_cursor++;
    }
    return rp->o->emit ? rp->o->emit(rp->o->emit_user, e) : 0;
}

static int oracle(void *user, int expandable, uint64_t size, uint64_t stream, int small,
                  uint64_t *addr)
{
    struct replay *rp = user;
    if (rp->seg_cursor >= rp->nrec_seg)
        return 0;
    const struct mh_event *r = &rp->ev[rp->rec_seg[rp->seg_cursor]];
    if (r->stream != stream)
        return 0;
    if (!expandable && (r->kind != MH_EV_SEGMENT_ALLOC || r->size != size))
        return 0;
    if (expandable && r->kind != MH_EV_SEGMENT_MAP)
        return 0;
    *addr = r->addr;
    return 1;
}

/* Marks free_requested events whose free_completed came after other
 * allocator events, and collects the recorded allocator and segment events. */
static int prepare(struct replay *rp)
{
    struct amap open = {0};
    uint64_t ord = 0;
    uint64_t *ordinal = calloc(rp->n ? rp->n : 1, sizeof *ordinal);
    rp->deferred = calloc(rp->n ? rp->n : 1, 1);
    rp->rec_seg = calloc(rp->n ? rp->n : 1, sizeof *rp->rec_seg);
    rp->rec_alloc = calloc(rp->n ? rp->n : 1, sizeof *rp->rec_alloc);
    int rc = ordinal && rp->deferred && rp->rec_seg && rp->rec_alloc ? 0 : MH_ENOMEM;
    for (size_t i = 0; i < rp->n && rc == 0; i++) {
        const struct mh_event *e = &rp->ev[i];
        if (!mh__sim_is_allocator_kind(e->kind) || preexisting(e))
            continue;
        ordinal[i] = ++ord;
        rp->res->recorded_segment_events += is_segment_kind(e->kind);
        rp->rec_alloc[rp->nrec_alloc++] = e;
        if (e->kind == MH_EV_SEGMENT_ALLOC || e->kind == MH_EV_SEGMENT_MAP)
            rp->rec_seg[rp->nrec_seg++] = i;
        if (e->kind == MH_EV_FREE_REQUESTED) {
            rp->deferred[i] = 1; /* until its completion shows up right after */
            rc = aput(&open, e->addr, i + 1);
        } else if (e->kind == MH_EV_FREE_COMPLETED) {
            uint64_t j = aget(&open, e->addr);
            if (j && ordinal[j - 1] + 1 == ordinal[i])
                rp->deferred[j - 1] = 0;
        }
    }
    rp->res->recorded_alloc_events = ord;
    free(open.k);
    free(open.v);
    free(ordinal);
    return rc;
}

/* Whether the request at or after index j would get a new segment without
 * releasing anything first (then a release before it was not a retry). */
static int next_request_fits(const struct replay *rp, size_t j)
{
    const struct mh_alloc_conf *c = &rp->o->conf;
    if (c->garbage_collection_threshold > 0 && c->memory_fraction > 0)
        return 0; /* garbage collection also releases before a new segment */
    while (j < rp->n && rp->ev[j].kind != MH_EV_ALLOC && rp->ev[j].kind != MH_EV_OOM)
        j++;
    if (j == rp->n)
        return 1;
    struct mh_sim_stats st;
    mh__sim_stats(rp->sim, &st);
    uint64_t need = mh_allocation_size(c, mh_round_size(c, rp->ev[j].size));
    uint64_t cap = rp->o->capacity;
    if (cap && c->memory_fraction > 0 && c->memory_fraction <= 1.0)
        cap = (uint64_t)(c->memory_fraction * (double)cap);
    return !cap || st.reserved + need <= cap;
}

/* A run of recorded segment frees/unmaps starting at i is an empty_cache()
 * call unless the next other allocator event creates a segment or is an OOM
 * for a request that did not fit: then it is the malloc's own release (or
 * release-and-retry), which the simulator reproduces by itself. */
static int is_empty_cache(const struct replay *rp, size_t i)
{
    for (size_t j = i; j < rp->n; j++) {
        unsigned k = rp->ev[j].kind;
        if (!mh__sim_is_allocator_kind(k) || k == MH_EV_SEGMENT_FREE || k == MH_EV_SEGMENT_UNMAP ||
            k == MH_EV_FREE_COMPLETED)
            continue;
        if (k == MH_EV_SEGMENT_ALLOC || k == MH_EV_SEGMENT_MAP || k == MH_EV_OOM)
            return next_request_fits(rp, j);
        return 1;
    }
    return 1;
}

static int run_alloc(struct replay *rp, size_t i)
{
    const struct mh_event *e = &rp->ev[i];
    uint64_t addr = 0;
    rp->res->requests++;
    int rc = mh__sim_malloc(rp->sim, e->size, e->stream, e->stack, e->str, &addr);
    if (rc == MH_EOOM_SIM && e->kind == MH_EV_ALLOC) {
        rp->res->oom = 1;
        rp->res->oom_index = i;
        return 1;
    }
    if (rc == MH_EOOM_SIM)
        return 0; /* the recording failed here as well */
    if (rc < 0)
        return rc;
    if (e->kind == MH_EV_OOM) /* succeeded where the recording failed: drop it again */
        return mh__sim_free_block(rp->sim, addr, 0, 0, 0);
    rp->res->allocs++;
    rp->res->placed += addr == e->addr;
    return aput(&rp->addr, e->addr, addr);
}

/* A preexisting event: the state at the trace's start. */
static int run_seed(struct replay *rp, const struct mh_event *e)
{
    int rc = mh__sim_seed(rp->sim, e);
    if (rc < 0)
        return rc;
    if (rc > 0) {
        rp->res->seed_rejected++;
        return 0;
    }
    if (e->kind == MH_EV_SEGMENT_ALLOC || e->kind == MH_EV_SEGMENT_MAP)
        rp->res->seeded_segments++;
    if (e->kind != MH_EV_ALLOC)
        return 0;
    rp->res->seeded_blocks++;
    rp->res->seeded_unknown += e->block_size == 0;
    return aput(&rp->addr, e->addr, e->addr);
}

static int run_event(struct replay *rp, size_t i, int *in_release)
{
    const struct mh_event *e = &rp->ev[i];
    uint64_t addr;
    mh__sim_set_time(rp->sim, e->time_ns);
    if (preexisting(e))
        return run_seed(rp, e);
    int release = e->kind == MH_EV_SEGMENT_FREE || e->kind == MH_EV_SEGMENT_UNMAP;
    int was = *in_release;
    if (mh__sim_is_allocator_kind(e->kind) && e->kind != MH_EV_FREE_COMPLETED)
        *in_release = release;
    switch (e->kind) {
    case MH_EV_ALLOC:
    case MH_EV_OOM:
        return run_alloc(rp, i);
    case MH_EV_FREE_REQUESTED:
        addr = aget(&rp->addr, e->addr);
        if (!addr || mh__sim_free_block(rp->sim, addr, e->stack, rp->deferred[i], UINT64_MAX) ==
                         MH_ENOTFOUND) {
            rp->res->unknown_frees++;
            return 0;
        }
        return 0;
    case MH_EV_FREE_COMPLETED:
        addr = aget(&rp->addr, e->addr);
        if (addr)
            mh__sim_mark_ready(rp->sim, addr);
        return 0;
    case MH_EV_SEGMENT_FREE:
    case MH_EV_SEGMENT_UNMAP:
        if (!was && is_empty_cache(rp, i)) {
            rp->res->empty_caches++;
            return mh__sim_empty_cache(rp->sim);
        }
        return 0;
    case MH_EV_SEGMENT_ALLOC:
    case MH_EV_SEGMENT_MAP:
    case MH_EV_SNAPSHOT:
        return 0;
    default:
        return mh__sim_emit(rp->sim, e);
    }
}

int mh__sim_replay(const struct mh_event *events, size_t n, const struct mh_sim_replay_opts *opts,
                   struct mh_sim_replay_result *res)
{
    struct replay rp = {.ev = events, .n = n, .o = opts, .res = res};
    memset(res, 0, sizeof *res);
    int rc = prepare(&rp);
    struct mh_sim_opts so = {.conf = opts->conf, .capacity = opts->capacity,
                             .address_ties = opts->address_ties,
                             .emit = on_sim_event, .emit_user = &rp,
                             .start_ns = n ? events[0].time_ns : 0};
    if (opts->use_oracle) {
        so.addr_fn = oracle;
        so.addr_user = &rp;
    }
    if (rc == 0)
        rc = mh__sim_new(&so, &rp.sim);
    int in_release = 0;
    const char *what = opts->progress_what ? opts->progress_what : "what-if replay";
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = run_event(&rp, i, &in_release);
        if ((i + 1) % PROGRESS_EVERY == 0)
            mh__progress_report(&opts->progress, what, i + 1, n);
    }
    mh__progress_report(&opts->progress, what, n, n);
    if (rc > 0)
        rc = 0;
    mh__sim_free(rp.sim);
    free(rp.addr.k);
    free(rp.addr.v);
    free(rp.deferred);
    free(rp.rec_seg);
    free(rp.rec_alloc);
    return rc;
}
