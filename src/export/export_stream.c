/* export_stream.c - a table as an ArrowArrayStream (see export_int.h): the
 * table's producer runs on a thread of its own and puts finished batches in
 * a queue of QUEUE_BATCHES, which get_next takes from; a full queue stops
 * the producer until the consumer takes one, so at most that many batches
 * (and the one being built) exist at once. Releasing the stream before its
 * end stops the producer at its next batch. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_int.h"

#define QUEUE_BATCHES 2

struct mh__stream {
    struct mh_arrow_file *file;
    int table;
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    struct ArrowArray queue[QUEUE_BATCHES];
    size_t head, count;
    int done, cancelled, rc;
    char err[512];
};

static int (*const producers[MH__T_COUNT])(struct mh__stream *) = {
    [MH__T_RUNS] = mh__produce_runs,     [MH__T_EVENTS] = mh__produce_events,
    [MH__T_STEPS] = mh__produce_steps,   [MH__T_STACKS] = mh__produce_stacks,
    [MH__T_FRAMES] = mh__produce_frames, [MH__T_SEGMENTS] = mh__produce_segments,
};

struct mh_arrow_file *mh__stream_file(const struct mh__stream *st)
{
    return st->file;
}

int mh__stream_put(struct mh__stream *st, struct ArrowArray *batch)
{
    pthread_mutex_lock(&st->lock);
    while (st->count == QUEUE_BATCHES && !st->cancelled)
        pthread_cond_wait(&st->changed, &st->lock);
    int cancelled = st->cancelled;
    if (!cancelled) {
        st->queue[(st->head + st->count) % QUEUE_BATCHES] = *batch;
        st->count++;
        pthread_cond_broadcast(&st->changed);
    }
    pthread_mutex_unlock(&st->lock);
    if (cancelled)
        batch->release(batch);
    batch->release = NULL;
    return cancelled ? MH_ESTATE : 0;
}

void mh__row_run(struct mh__batch *b, const struct mh_arrow_file *f)
{
    mh__batch_code(b, MH__C_RUN, 0);
    if (f->rank >= 0)
        mh__batch_i64(b, MH__C_RANK, f->rank);
}

int mh__stream_batch(struct mh__stream *st, int table, const struct mh_reader *r,
                     struct mh__batch **out)
{
    int rc = mh__batch_new(&mh__tables[table], st->file->batch_rows, r, out);
    if (rc == 0)
        mh__batch_names(*out, MH__C_RUN, st->file->run_names, 1);
    return rc;
}

static int put_batch(struct mh__stream *st, struct mh__batch *b)
{
    struct ArrowArray a;
    int rc = mh__batch_finish(b, &a);
    return rc < 0 ? rc : mh__stream_put(st, &a);
}

int mh__stream_row(struct mh__stream *st, struct mh__batch *b)
{
    int rc = mh__batch_row_end(b);
    return rc == 0 && mh__batch_full(b) ? put_batch(st, b) : rc;
}

int mh__stream_flush(struct mh__stream *st, struct mh__batch *b)
{
    return mh__batch_rows(b) ? put_batch(st, b) : 0;
}

static void *run_producer(void *arg)
{
    struct mh__stream *st = arg;
    char err[sizeof st->err] = "";
    struct mh__msg_route r = {st->file, err, sizeof err};
    mh__msg_route(&r);
    int rc = producers[st->table](st);
    mh__msg_route(NULL);
    pthread_mutex_lock(&st->lock);
    st->done = 1;
    st->rc = rc;
    if (rc < 0)
        snprintf(st->err, sizeof st->err, "%s", *err ? err : mh_strerror(rc));
    pthread_cond_broadcast(&st->changed);
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

static int get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out)
{
    struct mh__stream *st = s->private_data;
    return mh__table_schema(&mh__tables[st->table], out) < 0 ? ENOMEM : 0;
}

static int get_next(struct ArrowArrayStream *s, struct ArrowArray *out)
{
    struct mh__stream *st = s->private_data;
    pthread_mutex_lock(&st->lock);
    while (st->count == 0 && !st->done)
        pthread_cond_wait(&st->changed, &st->lock);
    int rc = 0;
    if (st->count) {
        *out = st->queue[st->head];
        st->head = (st->head + 1) % QUEUE_BATCHES;
        st->count--;
        pthread_cond_broadcast(&st->changed);
    } else if (st->rc < 0) {
        rc = st->rc == MH_ENOMEM ? ENOMEM : EIO;
    } else {
        memset(out, 0, sizeof *out); /* the end: a released array */
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

static const char *get_last_error(struct ArrowArrayStream *s)
{
    struct mh__stream *st = s->private_data;
    pthread_mutex_lock(&st->lock);
    const char *e = st->done && st->rc < 0 ? st->err : NULL;
    pthread_mutex_unlock(&st->lock);
    return e;
}

static void stream_free(struct mh__stream *st)
{
    pthread_mutex_lock(&st->lock);
    st->cancelled = 1;
    pthread_cond_broadcast(&st->changed);
    pthread_mutex_unlock(&st->lock);
    if (st->started)
        pthread_join(st->thread, NULL);
    for (size_t i = 0; i < st->count; i++) {
        struct ArrowArray *a = &st->queue[(st->head + i) % QUEUE_BATCHES];
        if (a->release)
            a->release(a);
    }
    pthread_cond_destroy(&st->changed);
    pthread_mutex_destroy(&st->lock);
    mh__file_unref(st->file);
    free(st);
}

static void release(struct ArrowArrayStream *s)
{
    stream_free(s->private_data);
    s->release = NULL;
}

int mh_arrow_stream(struct mh_arrow_file *f, const char *table, struct ArrowArrayStream *out)
{
    memset(out, 0, sizeof *out);
    int t = mh__table_find(table);
    if (t < 0)
        return MH_ENOTFOUND;
    struct mh__stream *st = calloc(1, sizeof *st);
    if (!st)
        return MH_ENOMEM;
    st->file = f;
    st->table = t;
    mh__file_ref(f);
    pthread_mutex_init(&st->lock, NULL);
    pthread_cond_init(&st->changed, NULL);
    if (pthread_create(&st->thread, NULL, run_producer, st) != 0) {
        stream_free(st);
        return MH_ENOMEM;
    }
    st->started = 1;
    out->get_schema = get_schema;
    out->get_next = get_next;
    out->get_last_error = get_last_error;
    out->release = release;
    out->private_data = st;
    return 0;
}
