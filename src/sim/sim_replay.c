/* sim_replay.c - what-if replay (see sim_replay.h). Recorded allocations
 * become simulator mallocs; a recorded free becomes a simulator free,
 * deferred when its free_completed came later (cross-stream use) and
 * completed where the recording completed it; a recorded run of segment
 * frees that is not part of a malloc's release-and-retry (not followed by a
 * new segment or an OOM) is an empty_cache() call and is replayed as one.
 * Segment addresses can come from the recording (the address oracle), so
 * under the recorded settings block placement matches exactly. The
 * simulator's own events are compared position by position with the
 * recorded ones (replay_match.c). A trace that starts mid-run first seeds
 * the simulator with the state at its start (seed.c).
 *
 * The input is read once, in order, through a window of the events ahead
 * of the one replayed: what a free or a segment release needs to know of
 * the events after it is looked up there, and the window holds no more than
 * the distance to the next allocator event asked about. Owns its window,
 * its address table and its cursors. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "replay_int.h"

/* Input events between two progress reports. */
#define PROGRESS_EVERY 65536

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

/* The input from the event being replayed on: a ring of events read but
 * not replayed yet (capacity a power of two). */
struct window {
    struct mh_event *ev;
    size_t cap, head, n;
    void *cur;
    int end; /* the cursor has no more events */
};

struct replay {
    const struct mh__sim_source *src;
    const struct mh__sim_replay_opts *o;
    struct mh__sim_replay_result *res;
    struct mh__sim *sim;
    struct window in;
    int err;                /* the first error reading the input */
    struct amap addr;       /* recorded block address -> simulated */
    struct mh__rmatch match;
    uint64_t seg_cursor;    /* segment creations the simulator emitted */
};

/* Reads until the window holds `k + 1` events or the input ends. */
static int window_fill(struct replay *rp, size_t k)
{
    struct window *w = &rp->in;
    while (w->n <= k && !w->end) {
        if (w->n == w->cap) {
            size_t nc = w->cap ? w->cap * 2 : 64;
            struct mh_event *ne = malloc(nc * sizeof *ne);
            if (!ne)
                return MH_ENOMEM;
            for (size_t i = 0; i < w->n; i++)
                ne[i] = w->ev[(w->head + i) & (w->cap - 1)];
            free(w->ev);
            w->ev = ne;
            w->cap = nc;
            w->head = 0;
        }
        int rc = rp->src->next(w->cur, &w->ev[(w->head + w->n) & (w->cap - 1)]);
        if (rc < 0)
            return rc;
        if (rc == 0)
            w->end = 1;
        else
            w->n++;
    }
    return 0;
}

/* The input event `k` after the one being replayed (0: that one), or NULL
 * past the end; a read error ends the input there and is kept in rp->err. */
static const struct mh_event *ahead(struct replay *rp, size_t k)
{
    if (k >= rp->in.n) {
        int rc = window_fill(rp, k);
        if (rc < 0) {
            rp->err = rp->err ? rp->err : rc;
            rp->in.end = 1;
        }
        if (k >= rp->in.n)
            return NULL;
    }
    return &rp->in.ev[(rp->in.head + k) & (rp->in.cap - 1)];
}

static void window_pop(struct window *w)
{
    w->head = (w->head + 1) & (w->cap - 1);
    w->n--;
}

static int on_sim_event(void *user, const struct mh_event *e)
{
    struct replay *rp = user;
    if (mh__sim_is_allocator_kind(e->kind) && !mh__rm_preexisting(e)) {
        int rc = mh__rmatch_simulated(&rp->match, e);
        if (rc < 0)
            return rc;
        rp->res->simulated_alloc_events++;
        if (e->kind == MH_EV_SEGMENT_ALLOC || e->kind == MH_EV_SEGMENT_MAP)
            mh__rmatch_forget_segments(&rp->match, ++rp->seg_cursor);
    }
    return rp->o->emit ? rp->o->emit(rp->o->emit_user, e) : 0;
}

static int oracle(void *user, int expandable, uint64_t size, uint64_t stream, int small,
                  uint64_t *addr)
{
    struct replay *rp = user;
    struct mh__rm_segment r;
    (void)small;
    int rc = mh__rmatch_segment(&rp->match, rp->seg_cursor, &r);
    if (rc < 0)
        rp->err = rp->err ? rp->err : rc;
    if (rc <= 0 || r.stream != stream)
        return 0;
    if (!expandable && (r.kind != MH_EV_SEGMENT_ALLOC || r.size != size))
        return 0;
    if (expandable && r.kind != MH_EV_SEGMENT_MAP)
        return 0;
    *addr = r.addr;
    return 1;
}

/* A free_requested is deferred unless its free_completed is the very next
 * recorded allocator event. */
static int deferred_free(struct replay *rp, const struct mh_event *e)
{
    const struct mh_event *n;
    for (size_t k = 1; (n = ahead(rp, k)); k++)
        if (mh__sim_is_allocator_kind(n->kind) && !mh__rm_preexisting(n))
            return !(e->addr && n->kind == MH_EV_FREE_COMPLETED && n->addr == e->addr);
    return 1;
}

/* Whether the request at or after input position k would get a new segment
 * without releasing anything first (then a release before it was not a
 * retry). */
static int next_request_fits(struct replay *rp, size_t k)
{
    const struct mh_alloc_conf *c = &rp->o->conf;
    if (c->garbage_collection_threshold > 0 && c->memory_fraction > 0)
        return 0; /* garbage collection also releases before a new segment */
    const struct mh_event *r;
    while ((r = ahead(rp, k)) && r->kind != MH_EV_ALLOC && r->kind != MH_EV_OOM)
        k++;
    if (!r)
        return 1;
    struct mh__sim_stats st;
    mh__sim_stats(rp->sim, &st);
    uint64_t need = mh_allocation_size(c, mh_round_size(c, r->size));
    uint64_t cap = rp->o->capacity;
    if (cap && c->memory_fraction > 0 && c->memory_fraction <= 1.0)
        cap = (uint64_t)(c->memory_fraction * (double)cap);
    return !cap || st.reserved + need <= cap;
}

/* A run of recorded segment frees/unmaps starting at the event replayed is
 * an empty_cache() call unless the next other allocator event creates a
 * segment or is an OOM for a request that did not fit: then it is the
 * malloc's own release (or release-and-retry), which the simulator
 * reproduces by itself. */
static int is_empty_cache(struct replay *rp)
{
    const struct mh_event *e;
    for (size_t k = 0; (e = ahead(rp, k)); k++) {
        unsigned kind = e->kind;
        if (!mh__sim_is_allocator_kind(kind) || kind == MH_EV_SEGMENT_FREE ||
            kind == MH_EV_SEGMENT_UNMAP || kind == MH_EV_FREE_COMPLETED)
            continue;
        if (kind == MH_EV_SEGMENT_ALLOC || kind == MH_EV_SEGMENT_MAP || kind == MH_EV_OOM)
            return next_request_fits(rp, k);
        return 1;
    }
    return 1;
}

static int run_alloc(struct replay *rp, const struct mh_event *e, uint64_t index)
{
    uint64_t addr = 0;
    rp->res->requests++;
    int rc = mh__sim_malloc(rp->sim, e->size, e->stream, e->stack, e->str, &addr);
    if (rc == MH_EOOM_SIM && e->kind == MH_EV_ALLOC) {
        rp->res->oom = 1;
        rp->res->oom_index = (size_t)index;
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

static int run_free(struct replay *rp, const struct mh_event *e)
{
    uint64_t addr = aget(&rp->addr, e->addr);
    if (!addr ||
        mh__sim_free_block(rp->sim, addr, e->stack, deferred_free(rp, e), UINT64_MAX) ==
            MH_ENOTFOUND)
        rp->res->unknown_frees++;
    return 0;
}

/* Replays `e`, the window's first event (input position `index`). */
static int run_event(struct replay *rp, const struct mh_event *e, uint64_t index,
                     int *in_release)
{
    uint64_t addr;
    mh__sim_set_time(rp->sim, e->time_ns);
    if (mh__rm_preexisting(e))
        return run_seed(rp, e);
    int release = e->kind == MH_EV_SEGMENT_FREE || e->kind == MH_EV_SEGMENT_UNMAP;
    int was = *in_release;
    if (mh__sim_is_allocator_kind(e->kind) && e->kind != MH_EV_FREE_COMPLETED)
        *in_release = release;
    switch (e->kind) {
    case MH_EV_ALLOC:
    case MH_EV_OOM:
        return run_alloc(rp, e, index);
    case MH_EV_FREE_REQUESTED:
        return run_free(rp, e);
    case MH_EV_FREE_COMPLETED:
        addr = aget(&rp->addr, e->addr);
        if (addr)
            mh__sim_mark_ready(rp->sim, addr);
        return 0;
    case MH_EV_SEGMENT_FREE:
    case MH_EV_SEGMENT_UNMAP:
        if (!was && is_empty_cache(rp)) {
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

/* The input reached a recorded event: counted and put up for comparison. */
static int note_recorded(struct replay *rp, const struct mh_event *e)
{
    rp->res->input_events++;
    if (!mh__sim_is_allocator_kind(e->kind) || mh__rm_preexisting(e))
        return 0;
    rp->res->recorded_alloc_events++;
    rp->res->recorded_segment_events += mh__rm_is_segment_kind(e->kind);
    return mh__rmatch_recorded(&rp->match, e);
}

static void report(const struct replay *rp, const char *what, int end)
{
    const struct mh__progress *p = &rp->o->progress;
    uint64_t done = rp->res->input_events, total = 0;
    if (!p->fn)
        return;
    if (rp->src->position)
        rp->src->position(rp->in.cur, &done, &total);
    if (end)
        total = done = total > done ? total : done;
    else if (total && done >= total)
        done = total - 1; /* the last events of the input are still being replayed */
    mh__progress_report(p, what, done, total);
}

/* Every input event in order; after a what-if OOM the rest are only
 * counted (and compared with simulated events still waiting for them). */
static int replay_all(struct replay *rp)
{
    const char *what = rp->o->progress_what ? rp->o->progress_what : "what-if replay";
    int in_release = 0, rc = 0;
    const struct mh_event *e;
    for (uint64_t i = 0; rc >= 0 && rp->err == 0 && (e = ahead(rp, 0)); i++) {
        struct mh_event cur = *e;
        int nrc = note_recorded(rp, &cur);
        if (nrc < 0)
            rc = nrc;
        else if (rc == 0)
            rc = run_event(rp, &cur, i, &in_release);
        window_pop(&rp->in);
        if ((i + 1) % PROGRESS_EVERY == 0)
            report(rp, what, 0);
    }
    report(rp, what, 1);
    return rc < 0 ? rc : rp->err;
}

static int replay_open(struct replay *rp)
{
    const struct mh__sim_replay_opts *o = rp->o;
    int rc = rp->src->open(rp->src->user, &rp->in.cur);
    const struct mh_event *first = rc == 0 ? ahead(rp, 0) : NULL;
    if (rc == 0 && rp->err)
        return rp->err;
    struct mh__sim_opts so = {.conf = o->conf, .capacity = o->capacity,
                             .address_ties = o->address_ties,
                             .emit = on_sim_event, .emit_user = rp,
                             .start_ns = first ? first->time_ns : 0};
    if (o->use_oracle) {
        so.addr_fn = oracle;
        so.addr_user = rp;
    }
    return rc == 0 ? mh__sim_new(&so, &rp->sim) : rc;
}

int mh__sim_replay(const struct mh__sim_source *src, const struct mh__sim_replay_opts *opts,
                   struct mh__sim_replay_result *res)
{
    struct replay rp = {.src = src, .o = opts, .res = res};
    memset(res, 0, sizeof *res);
    mh__rmatch_init(&rp.match, src, opts->use_oracle, opts->compare_window);
    int rc = replay_open(&rp);
    if (rc == 0)
        rc = replay_all(&rp);
    res->matched = rp.match.matched;
    res->matched_segment_events = rp.match.matched_segment_events;
    mh__sim_free(rp.sim);
    mh__rmatch_free(&rp.match);
    src->close(rp.in.cur);
    free(rp.in.ev);
    free(rp.addr.k);
    free(rp.addr.v);
    return rc;
}

/* ---- events in memory ---------------------------------------------------------- */
struct array_cursor {
    const struct mh__sim_event_array *a;
    size_t i;
};

static int array_open(void *user, void **cursor)
{
    struct array_cursor *c = calloc(1, sizeof *c);
    if (!c)
        return MH_ENOMEM;
    c->a = user;
    *cursor = c;
    return 0;
}

static int array_next(void *cursor, struct mh_event *ev)
{
    struct array_cursor *c = cursor;
    if (c->i >= c->a->n)
        return 0;
    *ev = c->a->ev[c->i++];
    return 1;
}

static void array_position(void *cursor, uint64_t *done, uint64_t *total)
{
    const struct array_cursor *c = cursor;
    *done = c ? c->i : 0;
    *total = c ? c->a->n : 0;
}

static void array_close(void *cursor)
{
    free(cursor);
}

void mh__sim_source_array(struct mh__sim_source *src, struct mh__sim_event_array *arr)
{
    *src = (struct mh__sim_source){array_open, array_next, array_position, array_close, arr};
}

int mh__sim_replay_events(const struct mh_event *events, size_t n,
                          const struct mh__sim_replay_opts *opts, struct mh__sim_replay_result *res)
{
    struct mh__sim_event_array arr = {events, n};
    struct mh__sim_source src;
    mh__sim_source_array(&src, &arr);
    return mh__sim_replay(&src, opts, res);
}
