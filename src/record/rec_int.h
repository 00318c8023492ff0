/* rec_int.h - state of the in-process recorder, shared by recorder.c (API,
 * per-thread buffers, emit) and drain.c (the drain thread). Internal to
 * src/record.
 *
 * Data flow: producers -> one SPSC ring per (thread, recorder) -> the drain
 * thread merges them by time, resolves context tokens, and hands the events
 * to the writer, which the drain thread alone drives (interning threads reach
 * the writer's tables only under intern_mu, which the drain thread also takes
 * while it writes). */
#ifndef MH_RECORD_REC_INT_H
#define MH_RECORD_REC_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "memhist/recorder.h"
#include "memhist/writer.h"

/* One producer thread's ring. The producer owns head and cached_tail, the
 * drain thread owns tail; each on its own cache line. */
struct mh__tbuf {
    _Alignas(64) _Atomic uint64_t head;
    uint64_t cached_tail;
    _Atomic uint64_t dropped; /* written by the producer only */
    _Alignas(64) _Atomic uint64_t tail;
    uint64_t dropped_told; /* drain thread: part of `dropped` given to the writer */
    uint64_t populated;    /* drain thread: slots [0, populated) have their pages mapped */
    _Atomic int dead;      /* set by the thread-exit destructor */
    uint32_t tid;
    uint64_t mask;
    struct mh__tbuf *next; /* list link; changed only by the drain thread */
    struct mh_event slots[];
};

struct mh_recorder {
    uint64_t serial; /* mh_recorder_serial */
    _Atomic int failed;
    uint64_t mask; /* buffer capacity - 1 */
    pthread_key_t key;
    _Atomic(struct mh__tbuf *) bufs;
    _Atomic uint32_t threads;
    _Atomic uint64_t reg_dropped; /* events lost because a buffer could not be made */
    _Atomic uint64_t invalid;     /* events refused by the writer (unknown ids) */

    struct mh_recorder_opts opts;
    struct mh_writer *w;
    pthread_mutex_t intern_mu; /* the writer: interning, meta, writing */
    pthread_mutex_t list_mu;   /* unlinking buffers vs. walking the list */

    pthread_mutex_t mu;        /* drain thread control */
    pthread_cond_t wake, done; /* `wake` waits on CLOCK_MONOTONIC */
    uint64_t flush_req, flush_done;
    int stop, exited;
    int close_rc;
    pthread_t thr;

    /* drain thread only */
    struct mh_event *batch;
    uint64_t *tokens;
    struct mh__tbuf **act;
    uint64_t *act_head, *act_tail;
    size_t act_cap;
    uint64_t reg_told; /* part of reg_dropped given to the writer */
    _Atomic uint64_t written, reaped_emitted, reaped_dropped;

    char failure[256];
};

#define MH__BATCH 4096

/* Stops recording for good, keeping why; the first reason wins. */
void mh__rec_fail(struct mh_recorder *rec, const char *what, int code, int errnum);
/* The drain thread's body. */
void *mh__drain_main(void *arg);
/* Drains the buffers (all their events with `take_all`, else all but the
 * newest few ms), writes, flushes, reaps dead buffers (drain thread).
 * Returns 1 when a buffer was filling up, so the next drain should not wait. */
int mh__drain_once(struct mh_recorder *rec, int take_all);
/* Frees every buffer (at close, after the drain thread stopped). */
void mh__free_buffers(struct mh_recorder *rec);

#endif
