/* query.c - read-only questions to the replay model: per-device statistics,
 * peaks, steps, OOMs, largest free blocks, segment and block iteration in
 * address order, anomaly and event counts. Views handed to callbacks are
 * built on the stack and valid only during the call. Owns nothing. */
#include <string.h>

#include "memhist/error.h"
#include "model_int.h"

static const struct mh__device *device_of(const struct mh_model *m, int device)
{
    if (!m || device < 0 || device >= MH__MAX_DEVICES)
        return NULL;
    return m->dev[device];
}

const char *mh_anomaly_name(int anomaly)
{
    switch (anomaly) {
#define MH__X_ANOM_NAME(name, value, text) \
    case value:                            \
        return text;
        MH_ANOMALY_LIST(MH__X_ANOM_NAME)
#undef MH__X_ANOM_NAME
    }
    return "unknown";
}

size_t mh_model_device_count(const struct mh_model *m)
{
    return m ? m->ndev : 0;
}

int mh_model_device_at(const struct mh_model *m, size_t i)
{
    return m && i < m->ndev ? m->devlist[i] : MH_ENOTFOUND;
}

int mh_model_stats(const struct mh_model *m, int device, struct mh_mem_stats *out)
{
    const struct mh__device *d = device_of(m, device);
    if (!out)
        return MH_EINVAL;
    memset(out, 0, sizeof *out);
    if (!d)
        return MH_ENOTFOUND;
    *out = d->stats;
    return 0;
}

static int get_peak(const struct mh_model *m, int device, int reserved, struct mh_peak *out)
{
    const struct mh__device *d = device_of(m, device);
    if (!out)
        return MH_EINVAL;
    memset(out, 0, sizeof *out);
    out->step = -1;
    if (!d)
        return MH_ENOTFOUND;
    *out = reserved ? d->peak_reserved : d->peak_allocated;
    return 0;
}

int mh_model_peak_allocated(const struct mh_model *m, int device, struct mh_peak *out)
{
    return get_peak(m, device, 0, out);
}

int mh_model_peak_reserved(const struct mh_model *m, int device, struct mh_peak *out)
{
    return get_peak(m, device, 1, out);
}

size_t mh_model_step_count(const struct mh_model *m, int device)
{
    const struct mh__device *d = device_of(m, device);
    return d ? d->nsteps : 0;
}

int mh_model_step(const struct mh_model *m, int device, size_t i, struct mh_step_stats *out)
{
    const struct mh__device *d = device_of(m, device);
    if (!out)
        return MH_EINVAL;
    if (!d || i >= d->nsteps)
        return MH_ENOTFOUND;
    *out = d->steps[i];
    return 0;
}

int64_t mh_model_current_step(const struct mh_model *m)
{
    return m ? m->cur_step : -1;
}

int mh_model_current_phase(const struct mh_model *m)
{
    return m ? m->phase : MH_PHASE_NONE;
}

size_t mh_model_oom_count(const struct mh_model *m)
{
    return m ? m->nooms : 0;
}

int mh_model_oom(const struct mh_model *m, size_t i, struct mh_oom_info *out)
{
    if (!out)
        return MH_EINVAL;
    if (!m || i >= m->nooms)
        return MH_ENOTFOUND;
    *out = m->ooms[i];
    return 0;
}

/* Any stream and pool: the heap's top. Otherwise a scan of the free blocks. */
uint64_t mh_model_largest_free(const struct mh_model *m, int device, uint64_t stream,
                               int small_pool)
{
    const struct mh__device *d = device_of(m, device);
    if (!d)
        return 0;
    if (stream == UINT64_MAX && small_pool < 0)
        return mh__fheap_max(&d->free_heap);
    uint64_t best = 0;
    for (size_t i = 0; i < d->free_heap.n; i++) {
        const struct mh__block *b = d->free_heap.v[i];
        if ((stream == UINT64_MAX || b->seg->stream == stream) &&
            (small_pool < 0 || b->seg->small_pool == (small_pool != 0)) && b->size > best)
            best = b->size;
    }
    return best;
}

static void segment_view(const struct mh__device *d, const struct mh__segment *s,
                         struct mh_segment_view *v)
{
    memset(v, 0, sizeof *v);
    v->device = d->index;
    v->address = s->addr;
    v->size = s->size;
    v->stream = s->stream;
    memcpy(v->pool, s->pool, sizeof v->pool);
    v->small_pool = s->small_pool;
    v->expandable = s->expandable;
    v->stack = s->stack;
    v->allocated = s->allocated;
    v->active = s->active;
    v->requested = s->requested;
    v->nblocks = s->nblocks;
}

static void block_view(const struct mh__block *b, struct mh_block_view *v)
{
    memset(v, 0, sizeof *v);
    v->address = b->addr;
    v->size = b->size;
    v->state = (enum mh_block_state)b->state;
    v->alloc_step = -1;
    v->stream = b->seg->stream;
    if (b->state == MH_BLOCK_INACTIVE)
        return;
    v->requested = b->requested;
    v->stack = b->stack;
    v->str = b->str;
    v->alloc_time_ns = b->alloc_time_ns;
    v->alloc_step = b->alloc_step;
    v->alloc_phase = b->phase;
    v->stream = b->stream;
}

struct walk_ctx {
    const struct mh__device *d;
    mh_segment_fn seg_fn;
    mh_block_fn blk_fn;
    void *user;
};

static int walk_segment(void *user, struct mh__segment *s)
{
    struct walk_ctx *c = user;
    struct mh_segment_view sv;
    segment_view(c->d, s, &sv);
    if (c->seg_fn)
        return c->seg_fn(c->user, &sv);
    for (const struct mh__block *b = s->first; b; b = b->next) {
        struct mh_block_view bv;
        block_view(b, &bv);
        int rc = c->blk_fn(c->user, &sv, &bv);
        if (rc)
            return rc;
    }
    return 0;
}

int mh_model_foreach_segment(const struct mh_model *m, int device, mh_segment_fn fn, void *user)
{
    const struct mh__device *d = device_of(m, device);
    if (!fn)
        return MH_EINVAL;
    if (!d)
        return 0;
    struct walk_ctx c = {d, fn, NULL, user};
    return mh__segtree_walk(d->root, walk_segment, &c);
}

int mh_model_foreach_block(const struct mh_model *m, int device, mh_block_fn fn, void *user)
{
    const struct mh__device *d = device_of(m, device);
    if (!fn)
        return MH_EINVAL;
    if (!d)
        return 0;
    struct walk_ctx c = {d, NULL, fn, user};
    return mh__segtree_walk(d->root, walk_segment, &c);
}

uint64_t mh_model_anomaly_count(const struct mh_model *m, int anomaly)
{
    return m && anomaly >= 0 && anomaly < MH_ANOM_COUNT ? m->anomalies[anomaly] : 0;
}

uint64_t mh_model_event_count(const struct mh_model *m)
{
    return m ? m->nevents : 0;
}

uint32_t *mh_model_block_words(const struct mh_model *m, int device, uint64_t addr)
{
    const struct mh__device *d = device_of(m, device);
    struct mh__block *b = d ? mh__addrmap_get(&d->blocks, addr) : NULL;
    return b && b->state != MH_BLOCK_INACTIVE ? b->words : NULL;
}
