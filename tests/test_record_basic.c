/* test_record_basic.c - the recorder end to end on one or two threads:
 * every field through a file, interning and definitions before use, context
 * token resolution, several recorders, drops, periodic writes, and failure
 * paths (/dev/full, a pipe with no reader, a closed descriptor). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memhist/recorder.h"
#include "test_format_util.h"

static char *tmp_path(void)
{
    static char path[64];
    strcpy(path, "/tmp/mh_test_rec_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    return path;
}

static struct mh_reader *open_file(const char *path)
{
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open(path, &r), 0);
    return r;
}

Test(record_basic, every_field_through_a_file)
{
    char *path = tmp_path();
    struct mh_recorder *rec;
    struct mh_recorder_opts o = {.source = "recorded"};
    cr_assert_eq(mh_recorder_open(path, &o, &rec), 0);
    cr_assert_eq(mh_recorder_set_meta(rec, "torch_version", "2.5"), 0);
    cr_assert_eq(mh_recorder_set_device(rec, 0, "Test GPU", 1ull << 34), 0);
    int64_t s = mh_intern_string(rec, "name", 4);
    uint32_t f = (uint32_t)mh_intern_frame(rec, "a.py", "fn", 3);
    int64_t st = mh_intern_stack(rec, &f, 1);
    cr_assert(s > 0 && st > 0);
    cr_expect_eq(mh_intern_string(rec, "name", 4), s);
    uint64_t seed = 5, t = 1000;
    struct mh_event evs[3000];
    for (int i = 0; i < 3000; i++) {
        tu_event(&seed, &evs[i], (uint32_t)s, (uint32_t)st, &t);
        evs[i].flags &= (uint8_t)~MH_EVF_CTX_TOKEN;
        evs[i].time_ns |= 1;
        cr_assert_eq(mh_emit(rec, &evs[i]), 0);
        if (i == 1500)
            cr_assert_eq(mh_recorder_flush(rec), 0);
    }
    struct mh_recorder_counts c;
    cr_assert_eq(mh_recorder_flush(rec), 0);
    mh_recorder_get_counts(rec, &c);
    cr_expect_eq(c.emitted, 3000);
    cr_expect_eq(c.written, 3000);
    cr_expect_eq(c.dropped, 0);
    cr_expect_eq(c.threads, 1);
    cr_expect_null(mh_recorder_failure(rec));
    cr_assert_eq(mh_recorder_close(rec), 0);

    struct mh_reader *r = open_file(path);
    /* one producer thread: its order is kept whatever the times say */
    struct mh_event ev;
    for (int i = 0; i < 3000; i++) {
        cr_assert_eq(mh_reader_next(r, &ev), 1, "%s", mh_reader_errmsg(r));
        tu_expect_event(&ev, &evs[i], (size_t)i);
    }
    cr_expect_eq(mh_reader_next(r, &ev), 0);
    cr_expect_str_eq(mh_reader_meta(r, "torch_version"), "2.5");
    cr_expect_str_eq(mh_reader_string(r, (uint32_t)s), "name");
    struct mh_device_info d;
    cr_assert_eq(mh_reader_device(r, 0, &d), 0);
    cr_expect_str_eq(d.name, "Test GPU");
    mh_reader_close(r);
    unlink(path);
}

struct tokstate {
    int resolved, released;
    uint64_t last_release;
};

static uint32_t resolve(void *user, struct mh_recorder *rec, uint64_t token)
{
    struct tokstate *ts = user;
    ts->resolved++;
    char file[32];
    snprintf(file, sizeof file, "tok%llu.py", (unsigned long long)token);
    uint32_t fr[2];
    fr[0] = (uint32_t)mh_intern_frame(rec, file, "inner", (uint32_t)token);
    fr[1] = (uint32_t)mh_intern_frame(rec, "main.py", "main", 1);
    return (uint32_t)mh_intern_stack(rec, fr, 2);
}

static void release(void *user, uint64_t token)
{
    struct tokstate *ts = user;
    ts->released++;
    ts->last_release = token;
}

Test(record_basic, context_tokens_resolved_on_the_drain_thread)
{
    char *path = tmp_path();
    struct tokstate ts = {0};
    struct mh_recorder_opts o = {
        .resolve_stack = resolve, .release_token = release, .resolver_user = &ts};
    struct mh_recorder *rec;
    cr_assert_eq(mh_recorder_open(path, &o, &rec), 0);
    for (uint64_t i = 1; i <= 500; i++) {
        struct mh_event ev = {.kind = MH_EV_ALLOC,
                              .addr = i * 512,
                              .size = 512,
                              .flags = i % 2 ? MH_EVF_CTX_TOKEN : 0,
                              .ctx = i % 2 ? i : 0};
        cr_assert_eq(mh_emit(rec, &ev), 0);
    }
    cr_assert_eq(mh_recorder_close(rec), 0);
    cr_expect_eq(ts.resolved, 250);
    cr_expect_eq(ts.released, 250);
    cr_expect_eq(ts.last_release, 499);

    struct mh_reader *r = open_file(path);
    struct mh_event ev;
    for (uint64_t i = 1; i <= 500; i++) {
        cr_assert_eq(mh_reader_next(r, &ev), 1, "%s", mh_reader_errmsg(r));
        cr_expect_eq(ev.addr, i * 512);
        cr_expect_eq(ev.ctx, 0);
        cr_expect_eq(ev.flags & MH_EVF_CTX_TOKEN, 0);
        if (i % 2 == 0) {
            cr_expect_eq(ev.stack, 0);
            continue;
        }
        const uint32_t *fr;
        size_t n;
        cr_assert_eq(mh_reader_stack(r, ev.stack, &fr, &n), 0);
        cr_assert_eq(n, 2);
        struct mh_frame f;
        cr_assert_eq(mh_reader_frame(r, fr[0], &f), 0);
        cr_expect_eq(f.line, i);
        cr_assert_eq(mh_reader_frame(r, fr[1], &f), 0);
        cr_expect_str_eq(f.func, "main");
    }
    cr_expect_eq(mh_reader_next(r, &ev), 0);
    mh_reader_close(r);
    unlink(path);
}

Test(record_basic, two_recorders_do_not_mix)
{
    char p1[64], p2[64];
    strcpy(p1, tmp_path());
    strcpy(p2, tmp_path());
    struct mh_recorder *a, *b;
    cr_assert_eq(mh_recorder_open(p1, NULL, &a), 0);
    cr_assert_eq(mh_recorder_open(p2, NULL, &b), 0);
    for (int i = 0; i < 1000; i++) {
        struct mh_event ev = {.kind = MH_EV_MARK, .aux = (uint32_t)i};
        ev.device = 1;
        cr_assert_eq(mh_emit(a, &ev), 0);
        ev.device = 2;
        cr_assert_eq(mh_emit(b, &ev), 0);
    }
    cr_assert_eq(mh_recorder_close(a), 0);
    cr_assert_eq(mh_recorder_close(b), 0);
    const char *paths[2] = {p1, p2};
    for (int k = 0; k < 2; k++) {
        struct mh_reader *r = open_file(paths[k]);
        struct mh_event ev;
        uint32_t n = 0;
        while (mh_reader_next(r, &ev) == 1) {
            cr_expect_eq(ev.device, k + 1);
            cr_expect_eq(ev.aux, n);
            cr_expect_neq(ev.time_ns, 0, "emit fills a zero time");
            n++;
        }
        cr_expect_eq(n, 1000);
        mh_reader_close(r);
        unlink(paths[k]);
    }
}

Test(record_basic, full_buffer_drops_and_counts)
{
    char *path = tmp_path();
    struct mh_recorder_opts o = {.thread_buffer_events = 64, .flush_interval_ms = 1000};
    struct mh_recorder *rec;
    cr_assert_eq(mh_recorder_open(path, &o, &rec), 0);
    int ok = 0, full = 0;
    for (int i = 0; i < 1000; i++) {
        struct mh_event ev = {.kind = MH_EV_MARK, .time_ns = 1 + (uint64_t)i, .aux = (uint32_t)i};
        int rc = mh_emit(rec, &ev);
        cr_assert(rc == 0 || rc == MH_EFULL);
        rc == 0 ? ok++ : full++;
    }
    struct mh_recorder_counts c;
    mh_recorder_get_counts(rec, &c);
    cr_expect_eq(c.emitted, (uint64_t)ok);
    cr_expect_eq(c.dropped, (uint64_t)full);
    cr_expect_geq(full, 1000 - 64 * 17, "a 64-slot buffer cannot take everything");
    cr_assert_eq(mh_recorder_close(rec), 0);
    struct mh_reader *r = open_file(path);
    int last;
    cr_expect_eq(tu_read_all(r, &last), (size_t)ok);
    struct mh_file_summary s;
    mh_reader_summary(r, &s);
    cr_expect_eq(s.dropped, (uint64_t)full);
    mh_reader_close(r);
    unlink(path);
}

Test(record_basic, writes_periodically_without_flush)
{
    char *path = tmp_path();
    struct mh_recorder_opts o = {.flush_interval_ms = 10};
    struct mh_recorder *rec;
    cr_assert_eq(mh_recorder_open(path, &o, &rec), 0);
    struct mh_event ev = {.kind = MH_EV_STEP_BEGIN, .aux = 1};
    cr_assert_eq(mh_emit(rec, &ev), 0);
    /* wait (bounded) for the drain thread to write the event on its own */
    int found = 0;
    for (int tries = 0; tries < 1000 && !found; tries++) {
        usleep(10000);
        struct mh_reader *r;
        if (mh_reader_open(path, &r) == 0) {
            struct mh_event e;
            found = mh_reader_next(r, &e) == 1 && e.kind == MH_EV_STEP_BEGIN;
            mh_reader_close(r);
        }
    }
    cr_expect(found, "the event reached the file without flush or close");
    cr_assert_eq(mh_recorder_close(rec), 0);
    unlink(path);
}

static void expect_failure(int fd, const char *why)
{
    struct mh_recorder *rec;
    cr_assert_eq(mh_recorder_open_fd(fd, NULL, &rec), 0);
    struct mh_event ev = {.kind = MH_EV_ALLOC, .addr = 512, .size = 512};
    int rc = mh_emit(rec, &ev); /* the header's write at start may have failed already */
    cr_assert(rc == 0 || rc == MH_ESTATE, "emit gave %d", rc);
    cr_expect_eq(mh_recorder_flush(rec), MH_EIO);
    const char *msg = mh_recorder_failure(rec);
    cr_assert_not_null(msg);
    cr_expect(strstr(msg, why) != NULL, "failure message: %s", msg);
    cr_expect_eq(mh_emit(rec, &ev), MH_ESTATE);
    cr_expect_eq(mh_intern_string(rec, "still fine", 10) > 0, 1);
    cr_expect_eq(mh_recorder_flush(rec), MH_EIO);
    cr_expect_eq(mh_recorder_close(rec), MH_EIO);
}

Test(record_basic, failure_dev_full)
{
    int fd = open("/dev/full", O_WRONLY);
    cr_assert(fd >= 0);
    expect_failure(fd, "No space");
    close(fd);
}

Test(record_basic, failure_pipe_without_reader)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    close(p[0]);
    expect_failure(p[1], "pipe");
    close(p[1]);
}

Test(record_basic, failure_closed_descriptor)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    close(p[0]);
    close(p[1]);
    expect_failure(p[1], "descriptor");
}

Test(record_basic, open_errors_and_null)
{
    struct mh_recorder *rec;
    cr_expect_eq(mh_recorder_open("/nonexistent-dir/x.memhist", NULL, &rec), MH_EIO);
    cr_expect_eq(mh_recorder_open_fd(-1, NULL, &rec), MH_EINVAL);
    cr_expect_eq(mh_recorder_close(NULL), 0);
    cr_expect_eq(mh_emit(NULL, NULL), MH_EINVAL);
    cr_expect_null(mh_recorder_failure(NULL));
}

static void *tid_thread(void *arg)
{
    *(uint32_t *)arg = mh_thread_id();
    return NULL;
}

Test(record_basic, clock_and_thread_id)
{
    uint64_t a = mh_clock_ns(), b = mh_clock_ns();
    cr_expect_gt(a, 1600000000ull * 1000000000ull);
    cr_expect_geq(b + 1000000000ull, a);
    cr_expect_eq(mh_thread_id(), (uint32_t)syscall(SYS_gettid));
    cr_expect_eq(mh_thread_id(), mh_thread_id());
    uint32_t other = 0;
    pthread_t t;
    pthread_create(&t, NULL, tid_thread, &other);
    pthread_join(t, NULL);
    cr_expect_neq(other, 0);
    cr_expect_neq(other, mh_thread_id());
}
