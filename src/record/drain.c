/* drain.c - the recorder's drain thread.
 *
 * Wakes every flush interval (or on mh_recorder_flush / close), moves the
 * events of every per-thread ring into a batch in time order (a k-way merge
 * that keeps each thread's own order), resolves context tokens into stacks,
 * and writes the batch through the writer under the interning lock, so every
 * definition interned before an event was emitted is written before it.
 *
 * A periodic drain leaves the newest HOLD_BACK_NS of events in their rings:
 * the rings are read one after another, and an event can be stamped before
 * it is published, so an older event of one thread may appear only after a
 * newer one of another thread was taken. Holding back the newest events
 * keeps the file in time order across threads (two threads' allocations on
 * one device: torch stamps each under the allocator's lock, so the older one
 * is published before the newer one is stamped). Flushes, close, and rings
 * filling up take everything.
 *
 * Reclaims the rings of threads that exited once they are empty. Owns the
 * writer's output: every write and the final close happen on this thread. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "memhist/error.h"
#include "prefault.h"
#include "rec_int.h"

int mh__writer_errno(const struct mh_writer *w);
uint64_t mh__writer_events_out(const struct mh_writer *w);

static void fail_from_writer(struct mh_recorder *rec, int rc)
{
    mh__rec_fail(rec, "writing the .memhist file failed", rc, mh__writer_errno(rec->w));
}

/* Resolves tokens, writes the batch, then releases the tokens. */
static void write_batch(struct mh_recorder *rec, uint32_t n)
{
    uint32_t ntok = 0;
    int failed = atomic_load_explicit(&rec->failed, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        struct mh_event *ev = &rec->batch[i];
        if (!(ev->flags & MH_EVF_CTX_TOKEN) || !rec->opts.resolve_stack)
            continue;
        rec->tokens[ntok++] = ev->ctx;
        if (!failed)
            ev->stack = rec->opts.resolve_stack(rec->opts.resolver_user, rec, ev->ctx);
        ev->flags &= (uint8_t)~MH_EVF_CTX_TOKEN;
        ev->ctx = 0;
    }
    if (!failed) {
        size_t refused; /* named an unknown id: left out, counted */
        pthread_mutex_lock(&rec->intern_mu);
        int rc = mh_writer_events(rec->w, rec->batch, n, &refused);
        pthread_mutex_unlock(&rec->intern_mu);
        atomic_fetch_add_explicit(&rec->invalid, refused, memory_order_relaxed);
        if (rc)
            fail_from_writer(rec, rc);
    }
    for (uint32_t i = 0; i < ntok && rec->opts.release_token; i++)
        rec->opts.release_token(rec->opts.resolver_user, rec->tokens[i]);
}

static int grow_active(struct mh_recorder *rec, size_t need)
{
    if (need <= rec->act_cap)
        return 0;
    size_t cap = rec->act_cap ? rec->act_cap * 2 : 16;
    while (cap < need)
        cap *= 2;
    void *a = realloc(rec->act, sizeof *rec->act * cap);
    if (a)
        rec->act = a;
    void *h = realloc(rec->act_head, sizeof *rec->act_head * cap);
    if (h)
        rec->act_head = h;
    void *t = realloc(rec->act_tail, sizeof *rec->act_tail * cap);
    if (t)
        rec->act_tail = t;
    if (!a || !h || !t)
        return MH_ENOMEM;
    rec->act_cap = cap;
    return 0;
}

#define POPULATE_AHEAD 16384    /* slots mapped ahead of a producer */
#define HOLD_BACK_NS 5000000ull /* a periodic drain leaves events this recent */
#define TAKE_ALL UINT64_MAX     /* a cutoff that holds nothing back */

/* Maps the pages of a ring's next slots before its producer writes them, so
 * the allocating thread does not take a page fault every 46 events while the
 * ring fills for the first time; only pages the producer is about to use, so
 * a thread that emits little keeps a small footprint. Best effort: older
 * kernels refuse the advice and the producer faults as before. */
static void populate_ahead(struct mh__tbuf *b, uint64_t head)
{
    uint64_t want = head + POPULATE_AHEAD < b->mask + 1 ? head + POPULATE_AHEAD : b->mask + 1;
    if (want <= b->populated)
        return;
    mh__prefault(&b->slots[b->populated], (size_t)(want - b->populated) * sizeof b->slots[0], 0);
    b->populated = want;
}

/* Snapshot of the buffers that hold events now; returns how many. Sets
 * *pressed when one of them is at least half full (holding its events back
 * could make its thread drop some). */
static size_t snapshot(struct mh_recorder *rec, int *pressed)
{
    size_t k = 0;
    *pressed = 0;
    for (struct mh__tbuf *b = atomic_load_explicit(&rec->bufs, memory_order_acquire); b;
         b = b->next) {
        uint64_t h = atomic_load_explicit(&b->head, memory_order_acquire);
        uint64_t t = atomic_load_explicit(&b->tail, memory_order_relaxed);
        if (h == t)
            continue;
        if (grow_active(rec, k + 1))
            break;
        rec->act[k] = b;
        rec->act_head[k] = h;
        rec->act_tail[k] = t;
        *pressed |= h - t > b->mask / 2;
        k++;
    }
    return k;
}

/* After the snapshot, so the reads of the heads stay close together. */
static void populate_all(struct mh_recorder *rec)
{
    for (struct mh__tbuf *b = atomic_load_explicit(&rec->bufs, memory_order_acquire); b;
         b = b->next)
        populate_ahead(b, atomic_load_explicit(&b->head, memory_order_relaxed));
}

static void publish_tails(struct mh_recorder *rec, size_t k)
{
    for (size_t i = 0; i < k; i++)
        atomic_store_explicit(&rec->act[i]->tail, rec->act_tail[i], memory_order_release);
}

/* How far the earliest buffer's events may be taken without looking at the
 * others again: those before `limit`, and those at `limit` where `ties`
 * (ties go to the buffer listed first, as one event at a time would). */
struct run {
    uint64_t limit;
    int ties;
};

/* Index of the active buffer whose next event is earliest, or k if none is
 * older than `cutoff`; *r: how far its run goes. */
static size_t earliest(const struct mh_recorder *rec, size_t k, uint64_t cutoff, struct run *r)
{
    size_t best = k, next = k;
    uint64_t bt = 0, nt = 0;
    for (size_t i = 0; i < k; i++) {
        if (rec->act_tail[i] == rec->act_head[i])
            continue;
        const struct mh__tbuf *b = rec->act[i];
        uint64_t t = b->slots[rec->act_tail[i] & b->mask].time_ns;
        if (best == k || t < bt) {
            next = best;
            nt = bt;
            best = i;
            bt = t;
        } else if (next == k || t < nt) {
            next = i;
            nt = t;
        }
    }
    if (best == k || bt >= cutoff)
        return k;
    *r = next < k && nt < cutoff ? (struct run){nt, best < next} : (struct run){cutoff, 0};
    return best;
}

/* Moves buffer i's events of the run into the batch, which holds n; returns
 * how many it holds then. */
static uint32_t take_run(struct mh_recorder *rec, size_t i, const struct run *r, uint32_t n)
{
    const struct mh__tbuf *b = rec->act[i];
    uint64_t t = rec->act_tail[i], h = rec->act_head[i];
    for (; t < h && n < MH__BATCH; t++) {
        const struct mh_event *ev = &b->slots[t & b->mask];
        if (ev->time_ns > r->limit || (ev->time_ns == r->limit && !r->ties))
            break;
        rec->batch[n++] = *ev;
    }
    rec->act_tail[i] = t;
    return n;
}

/* Writes the events older than `cutoff` (TAKE_ALL: every event), or every
 * event when a ring is at least half full, in time order: runs of one
 * thread's events at a time. Returns 1 in that case, so the next drain
 * comes at once. */
static int drain_buffers(struct mh_recorder *rec, uint64_t cutoff)
{
    int pressed;
    size_t k = snapshot(rec, &pressed);
    populate_all(rec);
    if (pressed)
        cutoff = TAKE_ALL;
    uint32_t n = 0;
    size_t i;
    struct run r;
    while ((i = earliest(rec, k, cutoff, &r)) < k) {
        n = take_run(rec, i, &r, n);
        if (n == MH__BATCH) {
            publish_tails(rec, k);
            write_batch(rec, n);
            n = 0;
        }
    }
    if (n) {
        publish_tails(rec, k);
        write_batch(rec, n);
    }
    return pressed;
}

/* Gives the writer what each thread dropped since the last time (list_mu
 * held; takes intern_mu inside it, the only place both are held). */
static void tell_dropped(struct mh_recorder *rec, struct mh__tbuf *b)
{
    uint64_t d = atomic_load_explicit(&b->dropped, memory_order_relaxed);
    if (d == b->dropped_told)
        return;
    pthread_mutex_lock(&rec->intern_mu);
    mh_writer_add_thread_dropped(rec->w, b->tid, d - b->dropped_told);
    pthread_mutex_unlock(&rec->intern_mu);
    b->dropped_told = d;
}

static void report_dropped(struct mh_recorder *rec)
{
    pthread_mutex_lock(&rec->list_mu);
    for (struct mh__tbuf *b = atomic_load(&rec->bufs); b; b = b->next)
        tell_dropped(rec, b);
    pthread_mutex_unlock(&rec->list_mu);
    uint64_t reg = atomic_load_explicit(&rec->reg_dropped, memory_order_relaxed);
    if (reg != rec->reg_told) {
        pthread_mutex_lock(&rec->intern_mu);
        mh_writer_add_dropped(rec->w, reg - rec->reg_told);
        pthread_mutex_unlock(&rec->intern_mu);
        rec->reg_told = reg;
    }
}

/* Frees the rings of exited threads that are empty. */
static void reap(struct mh_recorder *rec)
{
    pthread_mutex_lock(&rec->list_mu);
    struct mh__tbuf *prev = NULL, *b = atomic_load_explicit(&rec->bufs, memory_order_acquire);
    while (b) {
        struct mh__tbuf *next = b->next;
        uint64_t h;
        if (!atomic_load_explicit(&b->dead, memory_order_acquire) ||
            (h = atomic_load_explicit(&b->head, memory_order_acquire)) !=
                atomic_load_explicit(&b->tail, memory_order_relaxed)) {
            prev = b;
            b = next;
            continue;
        }
        struct mh__tbuf *expect = b;
        if (prev)
            prev->next = next;
        else if (!atomic_compare_exchange_strong(&rec->bufs, &expect, next)) {
            for (prev = expect; prev->next != b; prev = prev->next)
                ;
            prev->next = next;
        }
        tell_dropped(rec, b);
        atomic_fetch_add(&rec->reaped_emitted, h);
        atomic_fetch_add(&rec->reaped_dropped, atomic_load(&b->dropped));
        free(b);
        b = next;
    }
    pthread_mutex_unlock(&rec->list_mu);
}

int mh__drain_once(struct mh_recorder *rec, int take_all)
{
    report_dropped(rec); /* drops so far go out with the first chunk written */
    uint64_t now = mh_clock_ns();
    int full = drain_buffers(rec, take_all || now < HOLD_BACK_NS ? TAKE_ALL : now - HOLD_BACK_NS);
    reap(rec);
    report_dropped(rec);
    if (atomic_load_explicit(&rec->failed, memory_order_acquire))
        return 0;
    pthread_mutex_lock(&rec->intern_mu);
    int rc = mh_writer_flush(rec->w);
    atomic_store_explicit(&rec->written, mh__writer_events_out(rec->w), memory_order_relaxed);
    pthread_mutex_unlock(&rec->intern_mu);
    if (rc)
        fail_from_writer(rec, rc);
    return full;
}

void mh__free_buffers(struct mh_recorder *rec)
{
    struct mh__tbuf *b = atomic_load(&rec->bufs);
    while (b) {
        struct mh__tbuf *next = b->next;
        free(b);
        b = next;
    }
    atomic_store(&rec->bufs, NULL);
}

/* `ts` advanced by `ms` milliseconds. */
static void add_ms(struct timespec *ts, uint32_t ms)
{
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    ts->tv_sec += ms / 1000 + ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

/* The next flush is due one interval after the previous one *started*, so
 * the time a drain takes under load does not stretch the interval; a drain
 * that overran its interval, or found a buffer full (its thread was dropping
 * events), is followed by the next one at once. */
void *mh__drain_main(void *arg)
{
    struct mh_recorder *rec = arg;
    struct timespec due;
    clock_gettime(CLOCK_MONOTONIC, &due);
    int busy = mh__drain_once(rec, 1); /* the header at once: a process killed
                                        before the first interval leaves a
                                        valid, empty recording */
    pthread_mutex_lock(&rec->mu);
    for (;;) {
        add_ms(&due, rec->opts.flush_interval_ms);
        while (!busy && !rec->stop && rec->flush_req == rec->flush_done)
            if (pthread_cond_timedwait(&rec->wake, &rec->mu, &due) == ETIMEDOUT)
                break;
        clock_gettime(CLOCK_MONOTONIC, &due); /* this drain's start */
        uint64_t req = rec->flush_req;
        int stop = rec->stop;
        pthread_mutex_unlock(&rec->mu);
        busy = mh__drain_once(rec, stop || req != rec->flush_done);
        pthread_mutex_lock(&rec->mu);
        rec->flush_done = req;
        pthread_cond_broadcast(&rec->done);
        if (stop)
            break;
    }
    pthread_mutex_unlock(&rec->mu);
    int rc = mh_writer_close(rec->w);
    rec->w = NULL;
    if (rc && !atomic_load(&rec->failed))
        fail_from_writer(rec, rc);
    rec->close_rc = rc;
    pthread_mutex_lock(&rec->mu);
    rec->exited = 1;
    pthread_cond_broadcast(&rec->done);
    pthread_mutex_unlock(&rec->mu);
    return NULL;
}
