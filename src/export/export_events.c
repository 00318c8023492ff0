/* export_events.c - the events table's producer: one more pass over the
 * file, through a session of its own, with a lifetimes collection made
 * after the first pass (mh__lifetimes_new_after), so that each allocation
 * is classified as its life ends.
 *
 * A row is put out as soon as it is complete: most at once; an allocation's
 * row when its category is known (its end, or the end of the run), with the
 * index of the event that ended it. Until then the row waits in a slot of
 * `pending`, named by the lifetimes record's first user value. The frees
 * that follow an allocation's end (free_completed after free_requested)
 * take its category and module from a slot of `ended`, named by the
 * block's MH__WORD_CONSUMER word. Memory follows the live allocations; the
 * rows carry their event index, which gives the file's order back. */
#include <stdlib.h>
#include <string.h>

#include "export_int.h"
#include "grow.h"

enum {
    HAS_ADDR = 1,
    HAS_SIZE = 2,
    HAS_BLOCK = 4,
    HAS_STREAM = 8,
    HAS_POOL = 16,
    HAS_DUR = 32,
    HAS_NAME = 64,
    HAS_MODULE = 128
};
#define ALLOCATOR (HAS_ADDR | HAS_SIZE | HAS_STREAM | HAS_POOL | HAS_MODULE)

/* The columns that apply to each kind (event.h's list); the others are null. */
static const uint8_t kind_fields[MH_EV_KIND_COUNT] = {
    [MH_EV_ALLOC] = ALLOCATOR | HAS_BLOCK,
    [MH_EV_FREE_REQUESTED] = ALLOCATOR | HAS_BLOCK,
    [MH_EV_FREE_COMPLETED] = ALLOCATOR | HAS_BLOCK,
    [MH_EV_SEGMENT_ALLOC] = ALLOCATOR,
    [MH_EV_SEGMENT_FREE] = ALLOCATOR,
    [MH_EV_SEGMENT_MAP] = ALLOCATOR,
    [MH_EV_SEGMENT_UNMAP] = ALLOCATOR,
    [MH_EV_OOM] = HAS_SIZE | HAS_STREAM | HAS_POOL | HAS_MODULE,
    [MH_EV_SNAPSHOT] = HAS_SIZE,
    [MH_EV_DRIVER_ALLOC] = HAS_ADDR | HAS_SIZE,
    [MH_EV_DRIVER_FREE] = HAS_ADDR | HAS_SIZE,
    [MH_EV_MARK] = HAS_NAME,
    [MH_EV_RANGE_BEGIN] = HAS_NAME,
    [MH_EV_RANGE_END] = HAS_NAME,
    [MH_EV_KERNEL] = HAS_STREAM | HAS_DUR | HAS_NAME,
    [MH_EV_MEMCPY] = HAS_SIZE | HAS_STREAM | HAS_DUR,
    [MH_EV_MEMSET] = HAS_SIZE | HAS_STREAM | HAS_DUR,
    [MH_EV_API_CALL] = HAS_DUR | HAS_NAME,
    [MH_EV_SCOPE_ENTER] = HAS_MODULE,
    [MH_EV_SCOPE_EXIT] = HAS_MODULE,
    [MH_EV_TAG] = HAS_ADDR | HAS_NAME,
};

#define NO_CATEGORY 0xff

/* One row before it goes into the batch. */
struct row {
    uint64_t index, time, addr, size, block, stream, thread, dur, free_index;
    int64_t pool, step, allocated, reserved;
    uint32_t stack, module, name;
    int16_t device;
    uint8_t kind, fields, phase, category, preexisting, has_totals, has_free;
};

/* A free that follows the end of its allocation's life. */
struct ended {
    uint64_t addr;
    uint32_t module;
    int16_t device;
    uint8_t category, used;
};

struct ev_export {
    struct mh__stream *st;
    struct mh_arrow_file *f;
    struct mh__session *s;
    struct mh__lifetimes *lt;
    struct mh__batch *b;
    struct row *pending;
    size_t npending, cappending;
    uint32_t *free_pending; /* free slots of `pending` */
    size_t nfree_pending, capfree_pending;
    struct ended *ended;
    size_t nended, capended;
    uint32_t *free_ended;
    size_t nfree_ended, capfree_ended;
};

static int put_row(struct ev_export *x, const struct row *r)
{
    struct mh__batch *b = x->b;
    mh__row_run(b, x->f);
    mh__batch_i64(b, MH__E_EVENT_INDEX, (int64_t)r->index);
    mh__batch_i64(b, MH__E_TIME, (int64_t)r->time);
    mh__batch_code(b, MH__E_KIND, r->kind);
    if (r->device >= 0)
        mh__batch_i64(b, MH__E_DEVICE, r->device);
    if (r->fields & HAS_ADDR)
        mh__batch_i64(b, MH__E_ADDRESS, (int64_t)r->addr);
    if (r->fields & HAS_SIZE)
        mh__batch_i64(b, MH__E_SIZE, (int64_t)r->size);
    if ((r->fields & HAS_BLOCK) && r->block)
        mh__batch_i64(b, MH__E_BLOCK_SIZE, (int64_t)r->block);
    if (r->fields & HAS_STREAM)
        mh__batch_i64(b, MH__E_STREAM, (int64_t)r->stream);
    if ((r->fields & HAS_POOL) && r->pool)
        mh__batch_i64(b, MH__E_POOL, r->pool);
    if (r->stack)
        mh__batch_i64(b, MH__E_STACK, r->stack);
    int rc = mh__batch_sid(b, MH__E_MODULE, r->module);
    if (rc == 0)
        rc = mh__batch_sid(b, MH__E_NAME, r->name);
    mh__batch_i64(b, MH__E_STEP, r->step);
    if (r->phase)
        mh__batch_code(b, MH__E_PHASE, r->phase);
    if (r->category != NO_CATEGORY)
        mh__batch_code(b, MH__E_CATEGORY, r->category);
    if (r->has_free)
        mh__batch_i64(b, MH__E_FREE_INDEX, (int64_t)r->free_index);
    if (r->thread)
        mh__batch_i64(b, MH__E_THREAD, (int64_t)r->thread);
    if (r->fields & HAS_DUR)
        mh__batch_i64(b, MH__E_DURATION, (int64_t)r->dur);
    if (r->has_totals) {
        mh__batch_i64(b, MH__E_ALLOCATED, r->allocated);
        mh__batch_i64(b, MH__E_RESERVED, r->reserved);
    }
    mh__batch_code(b, MH__E_PREEXISTING, r->preexisting);
    return rc < 0 ? rc : mh__stream_row(x->st, b);
}

static int64_t step_of(const struct mh_model *m, const struct mh_event *ev)
{
    if (ev->kind == MH_EV_STEP_BEGIN || ev->kind == MH_EV_STEP_END)
        return (int64_t)ev->aux;
    return ev->device >= 0 ? mh_model_device_step(m, ev->device) : mh_model_current_step(m);
}

static void fill_row(struct row *r, const struct mh_model *m, const struct mh_event *ev,
                     const struct mh_apply_result *res, uint64_t index)
{
    memset(r, 0, sizeof *r);
    r->index = index;
    r->time = ev->time_ns;
    r->kind = ev->kind;
    r->fields = ev->kind < MH_EV_KIND_COUNT ? kind_fields[ev->kind] : 0;
    r->device = ev->device;
    r->addr = ev->addr;
    r->size = ev->size;
    r->block = res->block_size;
    r->stream = ev->stream;
    r->pool = mh__pool_id(ev->pool);
    r->stack = ev->stack;
    r->thread = ev->thread;
    r->dur = ev->dur_ns;
    r->step = step_of(m, ev);
    int phase =
        ev->kind == MH_EV_PHASE || ev->kind == MH_EV_SCOPE_ENTER || ev->kind == MH_EV_SCOPE_EXIT
            ? (int)ev->aux
            : mh_model_current_phase(m);
    r->phase = phase > 0 && phase < MH_PHASE_COUNT ? (uint8_t)phase : 0;
    r->category = NO_CATEGORY;
    r->preexisting = (ev->flags & MH_EVF_PREEXISTING) != 0;
    if (r->fields & HAS_NAME)
        r->name = ev->str;
    if (r->fields & HAS_MODULE)
        r->module =
            ev->str || ev->kind >= MH_EV_SCOPE_ENTER ? ev->str : mh_model_scope(m, ev->thread);
    struct mh_mem_stats s;
    if (ev->device >= 0 && mh_model_stats(m, ev->device, &s) == 0) {
        r->has_totals = 1;
        r->allocated = (int64_t)s.allocated;
        r->reserved = (int64_t)s.reserved;
    }
}

/* ---- allocations waiting for their category ---------------------------- */

static int hold(struct ev_export *x, const struct row *r, struct mh__alloc_rec *rec)
{
    uint32_t i;
    if (x->nfree_pending) {
        i = x->free_pending[--x->nfree_pending];
    } else {
        if (x->npending >= UINT32_MAX - 1 ||
            MH__GROW(x->pending, x->npending, x->cappending, 1024) < 0)
            return MH_ENOMEM;
        i = (uint32_t)x->npending++;
    }
    x->pending[i] = *r;
    x->pending[i].module = rec->str;
    rec->user[0] = i + 1;
    return 0;
}

/* Puts the held row of the allocation `rec`, now classified. */
static int release_held(struct ev_export *x, const struct mh__alloc_rec *rec)
{
    uint32_t i = rec->user[0];
    if (i == 0 || i > x->npending)
        return 0;
    struct row *r = &x->pending[i - 1];
    r->category = rec->category;
    r->has_free = rec->free_index != MH__NEVER;
    r->free_index = rec->free_index;
    int rc = put_row(x, r);
    r->kind = NO_CATEGORY; /* free */
    if (rc == 0 && MH__GROW(x->free_pending, x->nfree_pending, x->capfree_pending, 1024) < 0)
        return MH_ENOMEM;
    if (rc == 0)
        x->free_pending[x->nfree_pending++] = i - 1;
    return rc;
}

/* Remembers the category and module of an allocation whose block waits
 * for its free to complete. */
static int note_ended(struct ev_export *x, const struct mh_model *m, const struct mh__alloc_rec *rec)
{
    uint32_t *w = mh_model_block_words(m, rec->device, rec->addr), i;
    if (!w)
        return 0;
    if (x->nfree_ended) {
        i = x->free_ended[--x->nfree_ended];
    } else {
        if (x->nended >= UINT32_MAX - 1 || MH__GROW(x->ended, x->nended, x->capended, 256) < 0)
            return MH_ENOMEM;
        i = (uint32_t)x->nended++;
    }
    x->ended[i] = (struct ended){rec->addr, rec->str, rec->device, rec->category, 1};
    w[MH__WORD_CONSUMER] = i + 1;
    return 0;
}

/* A free_completed after its allocation's end: its category and module. */
static int take_ended(struct ev_export *x, const struct mh_event *ev,
                      const struct mh_apply_result *res, struct row *r)
{
    uint32_t i = res->block_words ? res->block_words[MH__WORD_CONSUMER] : 0;
    struct ended *e = i && i <= x->nended ? &x->ended[i - 1] : NULL;
    if (!e || !e->used || e->addr != ev->addr || e->device != ev->device)
        return 0;
    r->category = e->category;
    r->module = e->module;
    e->used = 0;
    if (MH__GROW(x->free_ended, x->nfree_ended, x->capfree_ended, 256) < 0)
        return MH_ENOMEM;
    x->free_ended[x->nfree_ended++] = i - 1;
    return 0;
}

/* ---- the pass ---------------------------------------------------------- */

static int on_event(void *user, struct mh__session *s, const struct mh_event *ev,
                    const struct mh_apply_result *res)
{
    struct ev_export *x = user;
    const struct mh_model *m = mh__session_model(s);
    uint64_t index = mh__session_index(s);
    struct mh__life_change ch;
    int rc = mh__lifetimes_observe(x->lt, m, ev, res, &ch);
    if (rc < 0)
        return rc;
    if ((index & 16383) == 0)
        atomic_store(&x->f->progress, index);
    struct row r;
    fill_row(&r, m, ev, res, index);
    if (ch.began)
        return hold(x, &r, ch.began);
    if (ch.ended) {
        r.category = ch.ended->category;
        r.module = ch.ended->str;
        if ((rc = release_held(x, ch.ended)) == 0 && ev->kind == MH_EV_FREE_REQUESTED)
            rc = note_ended(x, m, ch.ended);
    } else if (ev->kind == MH_EV_FREE_COMPLETED) {
        rc = take_ended(x, ev, res, &r);
    }
    return rc < 0 ? rc : put_row(x, &r);
}

static int on_alive(void *user, const struct mh__alloc_rec *r)
{
    return release_held(user, r);
}

static int on_end(void *user, struct mh__session *s)
{
    struct ev_export *x = user;
    int rc = mh__lifetimes_finish(x->lt, on_alive, x);
    for (size_t i = 0; rc == 0 && i < x->npending; i++) /* none is left unless a record was lost */
        if (x->pending[i].kind != NO_CATEGORY) {
            rc = put_row(x, &x->pending[i]);
            x->pending[i].kind = NO_CATEGORY;
        }
    atomic_store(&x->f->progress, mh__session_index(s));
    return rc < 0 ? rc : mh__stream_flush(x->st, x->b);
}

static void ev_free(struct ev_export *x)
{
    mh__batch_free(x->b);
    mh__lifetimes_free(x->lt);
    mh__session_close(x->s);
    free(x->pending);
    free(x->free_pending);
    free(x->ended);
    free(x->free_ended);
}

int mh__produce_events(struct mh__stream *st)
{
    struct ev_export x;
    memset(&x, 0, sizeof x);
    x.st = st;
    x.f = mh__stream_file(st);
    int rc = mh__session_open(x.f->path, &x.s);
    if (rc == 0) {
        mh__session_set_progress(x.s, NULL);
        rc = mh__lifetimes_new_after(x.f->a.lt, &x.lt);
    }
    if (rc == 0)
        rc = mh__stream_batch(st, MH__T_EVENTS, mh__session_reader(x.s), &x.b);
    const struct mh__observer obs = {"export", &x, NULL, on_event, on_end};
    if (rc == 0)
        rc = mh__session_pass(x.s, &obs);
    ev_free(&x);
    return rc;
}
