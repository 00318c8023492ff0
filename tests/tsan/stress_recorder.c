/* stress_recorder.c - recorder stress test as a plain program, for the
 * thread sanitizer (Criterion cannot start under TSan). Several waves of
 * threads emit numbered events while the main thread flushes, interns and sets
 * metadata; then the file is read back and checked: every event is present
 * exactly once or counted as dropped, and each thread's events keep their
 * order. Exit status 0 = pass, 1 = fail (with the reason on stderr). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memhist/memhist.h"

#define WAVES 3
#define THREADS 6
#define EVENTS 20000

struct worker {
    struct mh_recorder *rec;
    uint32_t id;
};

static void *produce(void *arg)
{
    struct worker *w = arg;
    for (uint32_t i = 0; i < EVENTS; i++) {
        struct mh_event ev = {0};
        ev.kind = MH_EV_MARK;
        ev.time_ns = mh_clock_ns();
        ev.correlation = w->id;
        ev.aux = i;
        mh_emit(w->rec, &ev);
    }
    return NULL;
}

static int fail(const char *why)
{
    fprintf(stderr, "stress_recorder: %s\n", why);
    return 1;
}

static int run_waves(struct mh_recorder *rec)
{
    struct worker workers[WAVES * THREADS];
    for (int wave = 0; wave < WAVES; wave++) {
        pthread_t threads[THREADS];
        for (int t = 0; t < THREADS; t++) {
            struct worker *w = &workers[wave * THREADS + t];
            *w = (struct worker){rec, (uint32_t)(wave * THREADS + t)};
            if (pthread_create(&threads[t], NULL, produce, w) != 0)
                return fail("pthread_create failed");
        }
        char name[32];
        snprintf(name, sizeof name, "wave-%d", wave);
        mh_intern_string(rec, name, strlen(name));
        mh_recorder_set_meta(rec, "wave", name);
        mh_recorder_flush(rec);
        for (int t = 0; t < THREADS; t++)
            pthread_join(threads[t], NULL);
    }
    return 0;
}

static int check_file(const char *path, uint64_t dropped_by_recorder)
{
    static int64_t last[WAVES * THREADS];
    for (int i = 0; i < WAVES * THREADS; i++)
        last[i] = -1;
    struct mh_reader *r;
    if (mh_reader_open(path, &r) < 0)
        return fail("cannot open the written file");
    struct mh_event ev;
    uint64_t seen = 0;
    int rc, bad = 0;
    while ((rc = mh_reader_next(r, &ev)) == 1) {
        if (ev.kind != MH_EV_MARK || ev.correlation >= WAVES * THREADS ||
            (int64_t)ev.aux <= last[ev.correlation])
            bad = 1;
        else
            last[ev.correlation] = ev.aux;
        seen++;
    }
    struct mh_file_summary s;
    mh_reader_summary(r, &s);
    mh_reader_close(r);
    if (rc < 0 || bad)
        return fail(rc < 0 ? "the file does not read back"
                           : "an event is duplicated or out of order");
    if (seen + s.dropped != (uint64_t)WAVES * THREADS * EVENTS || s.dropped != dropped_by_recorder)
        return fail("events lost: written + dropped != emitted");
    printf("stress_recorder: %llu events written, %llu dropped, order kept\n",
           (unsigned long long)seen, (unsigned long long)s.dropped);
    return 0;
}

int main(void)
{
    char path[] = "/tmp/memhist-stress-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return fail("mkstemp failed");
    close(fd);
    struct mh_recorder_opts opts = {.thread_buffer_events = 4096, .flush_interval_ms = 5};
    struct mh_recorder *rec;
    if (mh_recorder_open(path, &opts, &rec) < 0)
        return fail("cannot open the recorder");
    int rc = run_waves(rec);
    struct mh_recorder_counts counts;
    mh_recorder_get_counts(rec, &counts);
    if (mh_recorder_close(rec) < 0)
        rc = fail("close reported an error");
    if (rc == 0)
        rc = check_file(path, counts.dropped);
    unlink(path);
    return rc;
}
