/* recorder.c - the in-process recorder: lifetime, per-thread buffers, emit,
 * interning and metadata entry points, counts and failure state.
 *
 * First stage of the recording data flow. Producers call mh_emit on any
 * thread; each (thread, recorder) pair gets its own SPSC ring on its first
 * event, found through a pthread key owned by the recorder, so several
 * recorders never mix events. Owns the buffers, the writer (driven by the
 * drain thread, drain.c) and the failure reason. Never prints, never exits. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memhist/error.h"
#include "rec_int.h"

void mh__rec_fail(struct mh_recorder *rec, const char *what, int code, int errnum)
{
    if (atomic_load_explicit(&rec->failed, memory_order_acquire))
        return;
    char ebuf[128] = "";
    const char *es = errnum ? strerror_r(errnum, ebuf, sizeof ebuf) : NULL;
    snprintf(rec->failure, sizeof rec->failure, "%s: %s%s%s%s", what, mh_strerror(code),
             es ? " (" : "", es ? es : "", es ? ")" : "");
    atomic_store_explicit(&rec->failed, 1, memory_order_release);
}

/* Thread-exit destructor: the drain thread frees the buffer once it is
 * empty. */
static void tbuf_dead(void *p)
{
    struct mh__tbuf *b = p;
    atomic_store_explicit(&b->dead, 1, memory_order_release);
}

static struct mh__tbuf *tbuf_register(struct mh_recorder *rec)
{
    struct mh__tbuf *b =
        aligned_alloc(64, (sizeof *b + sizeof b->slots[0] * (rec->mask + 1) + 63) & ~(size_t)63);
    if (!b)
        return NULL;
    memset(b, 0, sizeof *b);
    b->mask = rec->mask;
    b->tid = mh_thread_id();
    if (pthread_setspecific(rec->key, b) != 0) {
        free(b);
        return NULL;
    }
    struct mh__tbuf *head = atomic_load_explicit(&rec->bufs, memory_order_relaxed);
    do
        b->next = head;
    while (!atomic_compare_exchange_weak_explicit(&rec->bufs, &head, b, memory_order_release,
                                                  memory_order_relaxed));
    atomic_fetch_add_explicit(&rec->threads, 1, memory_order_relaxed);
    return b;
}

/* The slot a few events ahead was last read by the drain thread on another
 * core: taking its cache line for writing now, while the program runs on,
 * spares the emit that fills it the wait (and every later locked instruction
 * of the thread, which would wait for that store to complete). */
#define PREFETCH_AHEAD 4
static inline void prefetch_line_for_write(const void *p)
{
#if defined(__x86_64__)
    /* PREFETCHW; processors without it execute it as a no-op */
    __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

static inline void prefetch_for_write(const void *p)
{
    prefetch_line_for_write(p);
    prefetch_line_for_write((const char *)p + 64);
}

/* The calling thread's ring in the recorder it emitted into last, known by
 * the recorder's serial (a later recorder at the same address has another):
 * the usual emit finds its ring without pthread_getspecific. */
static _Thread_local struct {
    uint64_t serial;
    struct mh__tbuf *ring;
} last_ring;

/* The thread's ring on its first event in `rec` (made then), or NULL. Out of
 * line, as is every call the usual emit does not make, so that mh_emit
 * saves no registers. */
static __attribute__((noinline, cold)) struct mh__tbuf *ring_lookup(struct mh_recorder *rec)
{
    struct mh__tbuf *b = pthread_getspecific(rec->key);
    if (!b && !(b = tbuf_register(rec))) {
        atomic_fetch_add_explicit(&rec->reg_dropped, 1, memory_order_relaxed);
        return NULL;
    }
    last_ring.serial = rec->serial;
    last_ring.ring = b;
    return b;
}

/* An event without a time: stamped now, then emitted. */
static __attribute__((noinline, cold)) int emit_stamped(struct mh_recorder *rec,
                                                        const struct mh_event *ev)
{
    struct mh_event stamped = *ev;
    stamped.time_ns = mh_clock_ns();
    return stamped.time_ns ? mh_emit(rec, &stamped) : MH_EINVAL;
}

int mh_emit(struct mh_recorder *rec, const struct mh_event *ev)
{
    if (!rec || !ev)
        return MH_EINVAL;
    if (atomic_load_explicit(&rec->failed, memory_order_relaxed))
        return MH_ESTATE;
    if (__builtin_expect(!ev->time_ns, 0))
        return emit_stamped(rec, ev);
    struct mh__tbuf *b = last_ring.serial == rec->serial ? last_ring.ring : ring_lookup(rec);
    if (!b)
        return MH_EFULL;
    uint64_t h = atomic_load_explicit(&b->head, memory_order_relaxed);
    if (h - b->cached_tail > b->mask) {
        b->cached_tail = atomic_load_explicit(&b->tail, memory_order_acquire);
        if (h - b->cached_tail > b->mask) {
            uint64_t d = atomic_load_explicit(&b->dropped, memory_order_relaxed);
            atomic_store_explicit(&b->dropped, d + 1, memory_order_relaxed);
            return MH_EFULL;
        }
    }
    b->slots[h & b->mask] = *ev;
    atomic_store_explicit(&b->head, h + 1, memory_order_release);
    prefetch_for_write(&b->slots[(h + PREFETCH_AHEAD) & b->mask]);
    return 0;
}

static uint64_t pow2_at_least(uint64_t n)
{
    uint64_t p = 64;
    while (p < n && p < (1u << 24))
        p <<= 1;
    return p;
}

static int rec_init(struct mh_recorder *rec, const struct mh_recorder_opts *opts)
{
    if (opts)
        rec->opts = *opts;
    if (!rec->opts.flush_interval_ms)
        rec->opts.flush_interval_ms = 20;
    if (rec->opts.flush_interval_ms > 1000)
        rec->opts.flush_interval_ms = 1000;
    rec->mask =
        pow2_at_least(rec->opts.thread_buffer_events ? rec->opts.thread_buffer_events : 65536) - 1;
    rec->batch = malloc(sizeof *rec->batch * MH__BATCH);
    rec->tokens = malloc(sizeof *rec->tokens * MH__BATCH);
    if (!rec->batch || !rec->tokens)
        return MH_ENOMEM;
    if (pthread_key_create(&rec->key, tbuf_dead) != 0)
        return MH_ENOMEM;
    pthread_mutex_init(&rec->intern_mu, NULL);
    pthread_mutex_init(&rec->list_mu, NULL);
    pthread_mutex_init(&rec->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&rec->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&rec->done, NULL);
    return 0;
}

/* Starts the drain thread with every signal blocked, so that a closed pipe
 * yields EPIPE instead of killing the process, and the application's signals
 * go to its own threads. */
static int rec_start(struct mh_recorder *rec)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&rec->thr, NULL, mh__drain_main, rec);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc == 0 ? 0 : MH_ENOMEM;
}

static void rec_free(struct mh_recorder *rec, int key_made)
{
    if (key_made) {
        pthread_key_delete(rec->key);
        pthread_mutex_destroy(&rec->intern_mu);
        pthread_mutex_destroy(&rec->list_mu);
        pthread_mutex_destroy(&rec->mu);
        pthread_cond_destroy(&rec->wake);
        pthread_cond_destroy(&rec->done);
    }
    mh__free_buffers(rec);
    free(rec->batch);
    free(rec->tokens);
    free(rec->act);
    free(rec->act_head);
    free(rec->act_tail);
    free(rec);
}

static int rec_open(struct mh_writer *w, const struct mh_recorder_opts *opts,
                    struct mh_recorder **out)
{
    static _Atomic uint64_t last_serial;
    struct mh_recorder *rec = calloc(1, sizeof *rec);
    if (!rec) {
        mh_writer_close(w);
        return MH_ENOMEM;
    }
    rec->serial = atomic_fetch_add(&last_serial, 1) + 1;
    rec->w = w;
    int rc = rec_init(rec, opts);
    if (rc == 0 && (rc = rec_start(rec)) != 0)
        pthread_key_delete(rec->key);
    if (rc) {
        mh_writer_close(w);
        rec_free(rec, 0);
        return rc;
    }
    *out = rec;
    return 0;
}

int mh_recorder_open(const char *path, const struct mh_recorder_opts *opts,
                     struct mh_recorder **out)
{
    if (!path || !out)
        return MH_EINVAL;
    struct mh_writer_opts wo = {.source = opts ? opts->source : NULL};
    struct mh_writer *w;
    int rc = mh_writer_open(path, &wo, &w);
    return rc ? rc : rec_open(w, opts, out);
}

int mh_recorder_open_fd(int fd, const struct mh_recorder_opts *opts, struct mh_recorder **out)
{
    if (fd < 0 || !out)
        return MH_EINVAL;
    struct mh_writer_opts wo = {.source = opts ? opts->source : NULL};
    struct mh_writer *w;
    int rc = mh_writer_open_fd(fd, &wo, &w);
    return rc ? rc : rec_open(w, opts, out);
}

int mh_recorder_flush(struct mh_recorder *rec)
{
    if (!rec)
        return MH_EINVAL;
    pthread_mutex_lock(&rec->mu);
    uint64_t mine = ++rec->flush_req;
    pthread_cond_signal(&rec->wake);
    while (rec->flush_done < mine && !rec->exited)
        pthread_cond_wait(&rec->done, &rec->mu);
    pthread_mutex_unlock(&rec->mu);
    return atomic_load_explicit(&rec->failed, memory_order_acquire) ? MH_EIO : 0;
}

int mh_recorder_close(struct mh_recorder *rec)
{
    if (!rec)
        return 0;
    pthread_mutex_lock(&rec->mu);
    rec->stop = 1;
    pthread_cond_signal(&rec->wake);
    pthread_mutex_unlock(&rec->mu);
    pthread_join(rec->thr, NULL);
    int rc = rec->close_rc;
    rec_free(rec, 1);
    return rc;
}

#define LOCKED(rec, expr)                                                                          \
    do {                                                                                           \
        pthread_mutex_lock(&(rec)->intern_mu);                                                     \
        rc = (expr);                                                                               \
        pthread_mutex_unlock(&(rec)->intern_mu);                                                   \
    } while (0)

int64_t mh_intern_string(struct mh_recorder *rec, const char *s, size_t len)
{
    int64_t rc;
    if (!rec)
        return MH_EINVAL;
    LOCKED(rec, mh_writer_intern_string(rec->w, s, len));
    return rc;
}

int64_t mh_intern_frame(struct mh_recorder *rec, const char *file, const char *func, uint32_t line)
{
    int64_t rc;
    if (!rec)
        return MH_EINVAL;
    LOCKED(rec, mh_writer_intern_frame(rec->w, file, func, line));
    return rc;
}

int64_t mh_intern_stack(struct mh_recorder *rec, const uint32_t *frames, size_t nframes)
{
    int64_t rc;
    if (!rec)
        return MH_EINVAL;
    LOCKED(rec, mh_writer_intern_stack(rec->w, frames, nframes));
    return rc;
}

int mh_recorder_set_meta(struct mh_recorder *rec, const char *key, const char *value)
{
    int rc;
    if (!rec)
        return MH_EINVAL;
    LOCKED(rec, mh_writer_set_meta(rec->w, key, value));
    return rc;
}

int mh_recorder_set_device(struct mh_recorder *rec, int device, const char *name,
                           uint64_t total_bytes)
{
    int rc;
    if (!rec)
        return MH_EINVAL;
    LOCKED(rec, mh_writer_set_device(rec->w, device, name, total_bytes));
    return rc;
}

void mh_recorder_get_counts(const struct mh_recorder *crec, struct mh_recorder_counts *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!crec)
        return;
    struct mh_recorder *rec = (struct mh_recorder *)crec;
    pthread_mutex_lock(&rec->list_mu);
    out->emitted = atomic_load(&rec->reaped_emitted);
    out->dropped = atomic_load(&rec->reaped_dropped) + atomic_load(&rec->reg_dropped) +
                   atomic_load(&rec->invalid);
    for (struct mh__tbuf *b = atomic_load(&rec->bufs); b; b = b->next) {
        out->emitted += atomic_load_explicit(&b->head, memory_order_relaxed);
        out->dropped += atomic_load_explicit(&b->dropped, memory_order_relaxed);
    }
    pthread_mutex_unlock(&rec->list_mu);
    out->written = atomic_load(&rec->written);
    out->threads = atomic_load(&rec->threads);
}

uint64_t mh_recorder_serial(const struct mh_recorder *rec)
{
    return rec ? rec->serial : 0;
}

const char *mh_recorder_failure(const struct mh_recorder *rec)
{
    if (!rec || !atomic_load_explicit(&((struct mh_recorder *)rec)->failed, memory_order_acquire))
        return NULL;
    return rec->failure;
}
