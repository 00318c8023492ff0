/* writer_dropped.c - the writer's count of lost events per thread and the
 * dropped chunk (type 10) that carries it.
 *
 * The recorder reports events it dropped (full buffer) or refused (invalid
 * ids) with the thread that emitted them; every flush that follows a change
 * writes the cumulative counts, so a recording killed before its trailer
 * still says how many events were lost and where. The trailer's `dropped`
 * is the same total. */
#include <stdlib.h>

#include "memhist/error.h"
#include "memhist/writer.h"
#include "writer_int.h"

static struct mh__tdrop *find_thread(struct mh_writer *w, uint32_t thread)
{
    for (uint32_t i = 0; i < w->ntdrop; i++)
        if (w->tdrop[i].thread == thread)
            return &w->tdrop[i];
    if (w->ntdrop == MH__MAX_DROP_THREADS)
        return thread ? find_thread(w, 0) : NULL;
    if (w->ntdrop == w->tdrop_cap) {
        uint32_t cap = w->tdrop_cap ? w->tdrop_cap * 2 : 8;
        void *p = realloc(w->tdrop, sizeof *w->tdrop * cap);
        if (!p)
            return NULL;
        w->tdrop = p;
        w->tdrop_cap = cap;
    }
    w->tdrop[w->ntdrop] = (struct mh__tdrop){thread, 0};
    return &w->tdrop[w->ntdrop++];
}

int mh_writer_add_thread_dropped(struct mh_writer *w, uint32_t thread, uint64_t n)
{
    if (!w || w->closed)
        return MH_EINVAL;
    if (!n)
        return 0;
    w->dropped += n;
    w->tdrop_dirty = 1;
    struct mh__tdrop *t = find_thread(w, thread);
    if (!t)
        return MH_ENOMEM; /* counted in the total, not per thread */
    t->count += n;
    return 0;
}

void mh_writer_add_dropped(struct mh_writer *w, uint64_t n)
{
    mh_writer_add_thread_dropped(w, 0, n);
}

/* [total, thread, count, thread, count, ...]; the per-thread counts add up
 * to at most the total (a thread's slot that could not be allocated leaves
 * its events counted in the total only). */
int mh__w_write_dropped(struct mh_writer *w)
{
    if (!w->tdrop_dirty || w->err)
        return w->err;
    size_t start = mh__w_begin(w);
    msgpack_pack_array(&w->pk, 1 + 2 * w->ntdrop);
    msgpack_pack_uint64(&w->pk, w->dropped);
    for (uint32_t i = 0; i < w->ntdrop; i++) {
        msgpack_pack_uint32(&w->pk, w->tdrop[i].thread);
        msgpack_pack_uint64(&w->pk, w->tdrop[i].count);
    }
    w->tdrop_dirty = 0;
    return mh__w_end(w, start, MH__CH_DROPPED);
}

void mh__w_dropped_free(struct mh_writer *w)
{
    free(w->tdrop);
    w->tdrop = NULL;
    w->ntdrop = w->tdrop_cap = 0;
}
