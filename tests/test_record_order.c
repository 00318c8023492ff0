/* test_record_order.c - the file is in time order across threads. Producer
 * threads take turns under one lock, as torch's allocator threads do under
 * a device's allocator lock: each stamps, numbers and emits its event while
 * it holds the lock, so the numbers follow the times. With a drain every
 * millisecond, the events must come out of the file numbered 0, 1, 2, ...:
 * no drain may take a newer event of one thread before an older one of
 * another that was not yet in its ring when the drain read that ring. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "memhist/recorder.h"
#include "test_format_util.h"

#define THREADS 3
#define RUN_NS 300000000ull /* 0.3 s of producing */

struct shared {
    struct mh_recorder *rec;
    pthread_mutex_t lock;
    uint32_t next; /* under lock */
    uint64_t until_ns;
    _Atomic uint64_t dropped;
};

static void *produce(void *arg)
{
    struct shared *s = arg;
    while (mh_clock_ns() < s->until_ns) {
        pthread_mutex_lock(&s->lock);
        struct mh_event ev = {.kind = MH_EV_ALLOC,
                              .time_ns = mh_clock_ns(),
                              .size = 512,
                              .addr = s->next,
                              .aux = s->next,
                              .thread = mh_thread_id()};
        if (mh_emit(s->rec, &ev) == 0)
            s->next++;
        else
            atomic_fetch_add(&s->dropped, 1);
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

Test(record_order, threads_taking_turns_under_a_lock_come_out_in_time_order, .timeout = 60)
{
    char path[] = "/tmp/mh_test_order_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    struct mh_recorder_opts o = {.thread_buffer_events = 1 << 20, .flush_interval_ms = 1};
    struct shared s = {.lock = PTHREAD_MUTEX_INITIALIZER};
    cr_assert_eq(mh_recorder_open(path, &o, &s.rec), 0);
    s.until_ns = mh_clock_ns() + RUN_NS;
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, produce, &s);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    cr_assert_eq(mh_recorder_close(s.rec), 0);
    cr_assert_eq(atomic_load(&s.dropped), 0, "the rings are large enough to drop nothing");

    struct mh_reader *r;
    cr_assert_eq(mh_reader_open(path, &r), 0);
    struct mh_event ev;
    uint32_t want = 0, out_of_order = 0, first_bad = 0;
    int rc;
    while ((rc = mh_reader_next(r, &ev)) == 1) {
        if (ev.aux != want && !out_of_order++)
            first_bad = want;
        want = ev.aux + 1;
    }
    cr_expect_eq(rc, 0, "%s", mh_reader_errmsg(r));
    cr_expect_eq(want, s.next, "the last event is the last one emitted");
    cr_expect_eq(out_of_order, 0, "%u of %u events out of order, the first after event %u",
                 out_of_order, s.next, first_bad);
    mh_reader_close(r);
    unlink(path);
}
