/* whatif_source.c - what the what-if replays read (see whatif_check.h): an
 * observer of the session's pass notes how many events the pass saw, which
 * devices allocated and the recorded run's figures (from the pass's own
 * model), and keeps a compact copy (event_pack.h) where the input cannot be
 * read again; each replay's cursors then read the file again with a reader
 * of their own, or the copy, filtered to one device and stopped where the
 * pass stopped (a file still being written, or damaged further on, replays
 * as the pass saw it). The replay a command expects to ask for first is
 * started during the pass (whatif_expect.c). Owns the copy. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "event_pack.h"
#include "whatif_int.h"

static int source_begin(void *user, struct mh__session *s)
{
    struct mh__whatif_source *w = user;
    mh__wexpect_stop(w);
    mh__evpack_free(w->copy);
    w->copy = NULL;
    w->s = s;
    w->events = w->t0_ns = w->other_alloc = 0;
    w->first_device = -1;
    w->other_device = w->done = 0;
    memset(&w->rec, 0, sizeof w->rec);
    if (w->keep_copy || !mh__session_rereadable(s))
        return mh__evpack_new(&w->copy);
    return 0;
}

static int source_event(void *user, struct mh__session *s, const struct mh_event *ev,
                        const struct mh_apply_result *res)
{
    struct mh__whatif_source *w = user;
    if (w->events++ == 0)
        w->t0_ns = ev->time_ns;
    if (mh__sim_is_allocator_kind(ev->kind)) {
        if (w->first_device < 0) {
            w->first_device = ev->device;
            mh__wexpect_start(w, s);
        } else if (ev->device != w->first_device) {
            w->other_device = 1;
            w->other_alloc++;
        }
    }
    mh__wtrack_note(&w->rec, ev, res);
    return w->copy ? mh__evpack_add(w->copy, ev) : 0;
}

static int source_end(void *user, struct mh__session *s)
{
    struct mh__whatif_source *w = user;
    w->rec.device = w->first_device;
    mh__wtrack_summarize(&w->rec, mh__session_model(s), w->t0_ns, &w->recorded);
    w->done = 1;
    mh__wexpect_check(w, s);
    return 0;
}

int mh__whatif_source_new(struct mh__whatif_source **out)
{
    struct mh__whatif_source *w = calloc(1, sizeof *w);
    if (!w)
        return MH_ENOMEM;
    w->obs = (struct mh__observer){"whatif-source", w, source_begin, source_event, source_end};
    w->first_device = -1;
    *out = w;
    return 0;
}

void mh__whatif_source_free(struct mh__whatif_source *w)
{
    if (!w)
        return;
    mh__wexpect_stop(w);
    mh__evpack_free(w->copy);
    free(w);
}

const struct mh__observer *mh__whatif_source_observer(struct mh__whatif_source *w)
{
    return &w->obs;
}

void mh__whatif_source_keep_copy(struct mh__whatif_source *w)
{
    w->keep_copy = 1;
}

int mh__whatif_source_whole(const struct mh__whatif_source *w, int device)
{
    return !w->other_device && (w->first_device < 0 || w->first_device == device);
}

int mh__whatif_source_recorded(const struct mh__whatif_source *w, int device,
                               struct mh__whatif_outcome *out)
{
    if (!w->done || !mh__whatif_source_whole(w, device))
        return 0;
    *out = w->recorded;
    if (w->first_device != device) { /* a device that allocated nothing */
        struct mh__wtrack t = w->rec;
        t.device = device;
        mh__wtrack_summarize(&t, mh__session_model(w->s), w->t0_ns, out);
    }
    return 1;
}

/* ---- cursors ----------------------------------------------------------------- */
struct cursor {
    const struct mh__whatif_feed *f;
    uint64_t left; /* file events still to read: the pass's, or all */
    struct mh_reader *r;
    struct mh__evpack_cursor pc;
};

static int cursor_open(void *user, void **out)
{
    const struct mh__whatif_feed *f = user;
    struct cursor *c = calloc(1, sizeof *c);
    if (!c)
        return MH_ENOMEM;
    c->f = f;
    c->left = f->events;
    int rc = 0;
    if (f->w->copy)
        mh__evpack_cursor_init(&c->pc, f->w->copy);
    else
        rc = mh__session_reader_again(f->w->s, &c->r);
    if (rc < 0) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* The next event of the file: 1, or 0 after the pass's last (after the
 * last before the end or damage, where the pass has not ended), or an
 * error: one the pass did not meet (memory), the file is not the one the
 * pass read any more (it ends earlier), or the replay was called off. */
static int read_one(struct cursor *c, struct mh_event *ev)
{
    const struct mh__whatif_feed *f = c->f;
    if (!c->left)
        return 0;
    if (f->cancel && atomic_load_explicit(f->cancel, memory_order_relaxed))
        return MH_ESTATE;
    int rc = c->r ? mh_reader_next(c->r, ev) : mh__evpack_next(&c->pc, ev);
    if (rc == 1)
        c->left--;
    else if (rc != MH_ENOMEM)
        rc = f->events == UINT64_MAX ? 0 : MH_ETRUNCATED;
    return rc;
}

static int cursor_next(void *cursor, struct mh_event *ev)
{
    struct cursor *c = cursor;
    int rc;
    while ((rc = read_one(c, ev)) == 1)
        if (!mh__sim_is_allocator_kind(ev->kind) || ev->device == c->f->device)
            return 1;
    return rc;
}

static void cursor_position(void *cursor, uint64_t *done, uint64_t *total)
{
    const struct cursor *c = cursor;
    if (c->r) {
        mh_reader_position(c->r, done, total);
    } else {
        *done = c->pc.done;
        *total = mh__evpack_bytes(c->f->w->copy);
    }
}

static void cursor_close(void *cursor)
{
    struct cursor *c = cursor;
    if (c)
        mh_reader_close(c->r);
    free(c);
}

void mh__whatif_feed(const struct mh__whatif_input *in, struct mh__whatif_feed *feed,
                     struct mh__sim_source *src)
{
    memset(feed, 0, sizeof *feed);
    feed->w = in->src;
    feed->device = in->device;
    feed->events = in->events;
    if (in->events == UINT64_MAX) /* the replay started during the pass */
        feed->cancel = mh__wexpect_cancel(in->src);
    *src = (struct mh__sim_source){cursor_open, cursor_next, cursor_position, cursor_close, feed};
}
