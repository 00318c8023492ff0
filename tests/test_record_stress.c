/* test_record_stress.c - several producer threads in waves (so exited
 * threads' buffers are reclaimed) against one recorder with small buffers:
 * every accepted event is in the file exactly once, each thread's order is
 * kept, and every refused event is counted as dropped in the trailer. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "memhist/recorder.h"
#include "test_format_util.h"

#define WAVES 3
#define THREADS 4
#define PER_THREAD 100000

struct producer {
    struct mh_recorder *rec;
    uint32_t id;
    uint8_t *accepted; /* per sequence number */
    uint64_t ok, full;
    int64_t string_id;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    char name[32];
    snprintf(name, sizeof name, "producer-%u", p->id);
    p->string_id = mh_intern_string(p->rec, name, strlen(name));
    for (uint32_t i = 0; i < PER_THREAD; i++) {
        struct mh_event ev = {.kind = MH_EV_ALLOC,
                              .addr = ((uint64_t)p->id << 32) | i,
                              .size = 512,
                              .thread = p->id,
                              .aux = i,
                              .str = (uint32_t)p->string_id};
        int rc = mh_emit(p->rec, &ev);
        cr_assert(rc == 0 || rc == MH_EFULL);
        p->accepted[i] = rc == 0;
        rc == 0 ? p->ok++ : p->full++;
        if (i % 20000 == 0 && p->id % 2)
            mh_recorder_flush(p->rec);
    }
    return NULL;
}

Test(record_stress, threads_in_waves)
{
    char path[] = "/tmp/mh_test_stress_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    struct mh_recorder_opts o = {.thread_buffer_events = 4096, .flush_interval_ms = 2};
    struct mh_recorder *rec;
    cr_assert_eq(mh_recorder_open(path, &o, &rec), 0);
    struct producer ps[WAVES * THREADS];
    uint64_t ok = 0, full = 0;
    for (int w = 0; w < WAVES; w++) {
        pthread_t th[THREADS];
        for (int t = 0; t < THREADS; t++) {
            struct producer *p = &ps[w * THREADS + t];
            *p = (struct producer){.rec = rec, .id = (uint32_t)(w * THREADS + t + 1)};
            p->accepted = calloc(PER_THREAD, 1);
            pthread_create(&th[t], NULL, produce, p);
        }
        for (int t = 0; t < THREADS; t++) {
            pthread_join(th[t], NULL);
            ok += ps[w * THREADS + t].ok;
            full += ps[w * THREADS + t].full;
        }
    }
    struct mh_recorder_counts c;
    cr_assert_eq(mh_recorder_flush(rec), 0);
    mh_recorder_get_counts(rec, &c);
    cr_expect_eq(c.threads, WAVES * THREADS);
    cr_expect_eq(c.emitted, ok);
    cr_expect_eq(c.dropped, full);
    cr_expect_eq(c.written, ok);
    cr_assert_eq(mh_recorder_close(rec), 0);

    struct mh_reader *r;
    cr_assert_eq(mh_reader_open(path, &r), 0);
    int64_t next[WAVES * THREADS + 1];
    uint64_t seen[WAVES * THREADS + 1] = {0};
    for (int i = 0; i <= WAVES * THREADS; i++)
        next[i] = -1;
    struct mh_event ev;
    int rc;
    uint64_t total = 0;
    while ((rc = mh_reader_next(r, &ev)) == 1) {
        cr_assert(ev.thread >= 1 && ev.thread <= WAVES * THREADS);
        struct producer *p = &ps[ev.thread - 1];
        cr_assert_gt((int64_t)ev.aux, next[ev.thread], "thread %u: order or duplicate at %u",
                     ev.thread, ev.aux);
        cr_assert(p->accepted[ev.aux], "thread %u: event %u was refused", ev.thread, ev.aux);
        cr_assert_eq(ev.addr, ((uint64_t)ev.thread << 32) | ev.aux);
        char name[32];
        snprintf(name, sizeof name, "producer-%u", ev.thread);
        cr_assert_str_eq(mh_reader_string(r, ev.str), name, "definition before use");
        next[ev.thread] = ev.aux;
        seen[ev.thread]++;
        total++;
    }
    cr_expect_eq(rc, 0, "%s", mh_reader_errmsg(r));
    for (int t = 0; t < WAVES * THREADS; t++)
        cr_expect_eq(seen[t + 1], ps[t].ok, "thread %d: every accepted event once", t + 1);
    struct mh_file_summary s;
    mh_reader_summary(r, &s);
    cr_expect_eq(s.dropped, full);
    cr_expect_eq(total + s.dropped, (uint64_t)WAVES * THREADS * PER_THREAD);
    mh_reader_close(r);
    unlink(path);
    for (int i = 0; i < WAVES * THREADS; i++)
        free(ps[i].accepted);
}
