/* export_state.c - the producers of the stacks, frames and
 * segments_at_peak tables. Stacks and frames are the first pass's reader's
 * definitions (complete once it has read the file; only read here). The
 * segments and blocks at each device's allocated peak come from the model
 * replayed up to that event, through a session of the stream's own, with
 * each allocated block's category from the records live at the peak
 * (mh__analysis_records_at, on that session when the first pass did not
 * keep them). */
#include <stdlib.h>
#include <string.h>

#include "export_int.h"

int mh__produce_stacks(struct mh__stream *st)
{
    struct mh_arrow_file *f = mh__stream_file(st);
    const struct mh_reader *r = f->a.rp.reader;
    struct mh__batch *b;
    int rc = mh__stream_batch(st, MH__T_STACKS, r, &b);
    const uint32_t *frames;
    size_t n;
    for (uint32_t id = 1; rc == 0 && mh_reader_stack(r, id, &frames, &n) == 0; id++)
        for (size_t i = 0; rc == 0 && i < n; i++) {
            mh__row_run(b, f);
            mh__batch_i64(b, MH__K_STACK, id);
            mh__batch_i64(b, MH__K_DEPTH, (int64_t)i);
            mh__batch_i64(b, MH__K_FRAME, frames[i]);
            rc = mh__stream_row(st, b);
        }
    if (rc == 0)
        rc = mh__stream_flush(st, b);
    mh__batch_free(b);
    return rc;
}

int mh__produce_frames(struct mh__stream *st)
{
    struct mh_arrow_file *f = mh__stream_file(st);
    const struct mh_reader *r = f->a.rp.reader;
    struct mh__batch *b;
    int rc = mh__stream_batch(st, MH__T_FRAMES, r, &b);
    struct mh_frame fr;
    for (uint32_t id = 1; rc == 0 && mh_reader_frame(r, id, &fr) == 0; id++) {
        mh__row_run(b, f);
        mh__batch_i64(b, MH__F_FRAME, id);
        rc = mh__batch_text(b, MH__F_FILE, fr.file);
        if (rc == 0)
            rc = mh__batch_text(b, MH__F_FUNCTION, fr.func);
        mh__batch_i64(b, MH__F_LINE, fr.line);
        if (rc == 0)
            rc = mh__stream_row(st, b);
    }
    if (rc == 0)
        rc = mh__stream_flush(st, b);
    mh__batch_free(b);
    return rc;
}

/* ---- segments_at_peak ---------------------------------------------------- */

struct seg_export {
    struct mh__stream *st;
    struct mh__batch *b;
    uint64_t peak_index;
    const struct mh__alloc_rec **live; /* the records live at the peak, by address */
    size_t nlive;
};

static int by_addr(const void *x, const void *y)
{
    const struct mh__alloc_rec *a = *(const struct mh__alloc_rec *const *)x;
    const struct mh__alloc_rec *b = *(const struct mh__alloc_rec *const *)y;
    return (a->addr > b->addr) - (a->addr < b->addr);
}

static const struct mh__alloc_rec *live_at(const struct seg_export *x, uint64_t addr)
{
    size_t lo = 0, hi = x->nlive;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->live[mid]->addr == addr)
            return x->live[mid];
        if (x->live[mid]->addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int block_row(void *user, const struct mh_segment_view *seg, const struct mh_block_view *blk)
{
    struct seg_export *x = user;
    struct mh__batch *b = x->b;
    mh__row_run(b, mh__stream_file(x->st));
    mh__batch_i64(b, MH__G_DEVICE, seg->device);
    mh__batch_i64(b, MH__G_PEAK_INDEX, (int64_t)x->peak_index);
    mh__batch_i64(b, MH__G_SEG_ADDRESS, (int64_t)seg->address);
    mh__batch_i64(b, MH__G_SEG_SIZE, (int64_t)seg->size);
    mh__batch_i64(b, MH__G_STREAM, (int64_t)seg->stream);
    if (mh__pool_id(seg->pool))
        mh__batch_i64(b, MH__G_POOL, mh__pool_id(seg->pool));
    mh__batch_code(b, MH__G_SMALL_POOL, seg->small_pool);
    mh__batch_code(b, MH__G_EXPANDABLE, seg->expandable);
    if (seg->stack)
        mh__batch_i64(b, MH__G_SEG_STACK, seg->stack);
    mh__batch_i64(b, MH__G_ADDRESS, (int64_t)blk->address);
    mh__batch_i64(b, MH__G_SIZE, (int64_t)blk->size);
    mh__batch_code(b, MH__G_STATE, (int)blk->state);
    int rc = 0;
    if (blk->state != MH_BLOCK_INACTIVE) {
        mh__batch_i64(b, MH__G_REQUESTED, (int64_t)blk->requested);
        if (blk->stack)
            mh__batch_i64(b, MH__G_STACK, blk->stack);
        rc = mh__batch_sid(b, MH__G_MODULE, blk->str);
        mh__batch_i64(b, MH__G_ALLOC_STEP, blk->alloc_step);
        if (blk->alloc_phase > 0 && blk->alloc_phase < MH_PHASE_COUNT)
            mh__batch_code(b, MH__G_ALLOC_PHASE, blk->alloc_phase);
        mh__batch_i64(b, MH__G_ALLOC_TIME, (int64_t)blk->alloc_time_ns);
        const struct mh__alloc_rec *r =
            blk->state == MH_BLOCK_ALLOCATED ? live_at(x, blk->address) : NULL;
        if (r)
            mh__batch_code(b, MH__G_CATEGORY, r->category);
    }
    return rc < 0 ? rc : mh__stream_row(x->st, b);
}

/* The records of `device` live right after event `index`, by address. */
static int gather_live(struct seg_export *x, const struct mh__lifetimes *lt, int device,
                       uint64_t index)
{
    size_t n;
    const struct mh__alloc_rec *recs = mh__lifetimes_records(lt, &n);
    x->nlive = 0;
    free(x->live);
    if (!(x->live = malloc((n ? n : 1) * sizeof *x->live)))
        return MH_ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (recs[i].device == device && mh__alloc_rec_live_at(&recs[i], index))
            x->live[x->nlive++] = &recs[i];
    qsort(x->live, x->nlive, sizeof *x->live, by_addr);
    return 0;
}

static int device_at_peak(struct seg_export *x, struct mh__session *s, const struct mh__lifetimes *lt,
                          int device, uint64_t index)
{
    struct mh_model *m = NULL;
    x->peak_index = index;
    int rc = gather_live(x, lt, device, index);
    if (rc == 0)
        rc = mh__session_state_at(s, index + 1, &m);
    if (rc == 0)
        rc = mh_model_foreach_block(m, device, block_row, x);
    mh_model_free(m);
    return rc;
}

/* Each device's allocated peak (those that allocated). */
static size_t peak_indices(const struct mh_model *m, int *dev, uint64_t *at)
{
    size_t n = 0;
    for (size_t i = 0; i < mh_model_device_count(m); i++) {
        struct mh_peak p;
        int d = mh_model_device_at(m, i);
        if (mh_model_peak_allocated(m, d, &p) == 0 && p.value) {
            dev[n] = d;
            at[n++] = p.event_index;
        }
    }
    return n;
}

static int segments(struct seg_export *x, struct mh_arrow_file *f, struct mh__session *s)
{
    size_t ndev = mh_model_device_count(f->a.model);
    int *dev = calloc(ndev + 1, sizeof *dev);
    uint64_t *at = calloc(ndev + 1, sizeof *at);
    int rc = dev && at ? 0 : MH_ENOMEM;
    size_t n = rc == 0 ? peak_indices(f->a.model, dev, at) : 0;
    struct mh__analysis again = f->a; /* the first pass's, replayed on this stream's session */
    again.session = s;
    const struct mh__lifetimes *use = NULL;
    struct mh__lifetimes *own = NULL;
    if (rc == 0 && n)
        rc = mh__analysis_records_at(&again, at, n, &use, &own);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = device_at_peak(x, s, use, dev[i], at[i]);
    mh__lifetimes_free(own);
    free(dev);
    free(at);
    return rc;
}

int mh__produce_segments(struct mh__stream *st)
{
    struct mh_arrow_file *f = mh__stream_file(st);
    struct seg_export x = {st, NULL, 0, NULL, 0};
    struct mh__session *s = NULL;
    int rc = mh__session_open(f->path, &s);
    if (rc == 0) {
        mh__session_set_progress(s, NULL);
        rc = mh__stream_batch(st, MH__T_SEGMENTS, f->a.rp.reader, &x.b);
    }
    if (rc == 0)
        rc = segments(&x, f, s);
    if (rc == 0)
        rc = mh__stream_flush(st, x.b);
    mh__batch_free(x.b);
    free(x.live);
    mh__session_close(s);
    return rc;
}
