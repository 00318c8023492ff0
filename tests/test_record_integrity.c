/* test_record_integrity.c - the recorder's accounting: an event naming an
 * unknown id is skipped alone and counted, dropped counts reach the file at
 * every flush (so a recording that never closes still has them, per thread),
 * `written` never counts what did not reach the file, and metadata keys can
 * be set any number of times. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "memhist/recorder.h"
#include "test_format_util.h"

static char *tmp_path(void)
{
    static char path[64];
    strcpy(path, "/tmp/mh_test_integ_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    return path;
}

/* Reads a file to its end: events, summary and the final code. */
static size_t read_file(const char *path, struct mh_file_summary *s, int *last)
{
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open(path, &r), 0);
    size_t n = tu_read_all(r, last);
    mh_reader_summary(r, s);
    mh_reader_close(r);
    return n;
}

Test(record_integrity, bad_event_is_skipped_alone_and_counted)
{
    char *path = tmp_path();
    struct mh_recorder *rec;
    cr_assert_eq(mh_recorder_open(path, NULL, &rec), 0);
    uint32_t f = (uint32_t)mh_intern_frame(rec, "a.py", "fn", 3);
    int64_t st = mh_intern_stack(rec, &f, 1);
    cr_assert(st > 0);
    for (int i = 0; i < 3000; i++) {
        struct mh_event ev = {.kind = MH_EV_ALLOC,
                              .time_ns = 1000 + (uint64_t)i,
                              .addr = 4096 * (uint64_t)(i + 1),
                              .size = 512,
                              .stack = i == 17 ? 999 : (uint32_t)st,
                              .thread = 5};
        cr_assert_eq(mh_emit(rec, &ev), 0);
    }
    cr_assert_eq(mh_recorder_flush(rec), 0);
    struct mh_recorder_counts c;
    mh_recorder_get_counts(rec, &c);
    cr_expect_eq(c.emitted, 3000);
    cr_expect_eq(c.written, 2999);
    cr_expect_eq(c.dropped, 1);
    cr_assert_eq(mh_recorder_close(rec), 0);
    struct mh_file_summary s;
    int last;
    cr_expect_eq(read_file(path, &s, &last), 2999);
    cr_expect_eq(last, 0);
    cr_expect_eq(s.dropped, 1);
    unlink(path);
}

/* The file of a recording that is still open (as a killed one is left)
 * carries the dropped count of its last flush. */
Test(record_integrity, dropped_count_is_in_every_flush)
{
    char *path = tmp_path();
    struct mh_recorder_opts o = {.thread_buffer_events = 64, .flush_interval_ms = 1000};
    struct mh_recorder *rec;
    cr_assert_eq(mh_recorder_open(path, &o, &rec), 0);
    uint64_t full = 0;
    for (int i = 0; i < 1000; i++) {
        struct mh_event ev = {.kind = MH_EV_MARK, .time_ns = 1 + (uint64_t)i};
        full += mh_emit(rec, &ev) == MH_EFULL;
    }
    cr_assert_gt(full, 0);
    cr_assert_eq(mh_recorder_flush(rec), 0);
    struct mh_file_summary s;
    int last;
    read_file(path, &s, &last);
    cr_expect_eq(last, MH_ETRUNCATED, "no trailer yet");
    cr_expect_eq(s.dropped, full);
    cr_assert_eq(mh_recorder_close(rec), 0);
    read_file(path, &s, &last);
    cr_expect_eq(last, 0);
    cr_expect_eq(s.dropped, full);
    unlink(path);
}

Test(record_integrity, written_counts_only_what_reached_the_file)
{
    int fd = open("/dev/full", O_WRONLY);
    cr_assert(fd >= 0);
    struct mh_recorder *rec;
    cr_assert_eq(mh_recorder_open_fd(fd, NULL, &rec), 0);
    /* The drain thread may meet the full device (writing the header) while
     * events are still being emitted: from then on recording has stopped
     * and emit says so. */
    uint64_t accepted = 0;
    for (int i = 0; i < 100; i++) {
        struct mh_event ev = {.kind = MH_EV_MARK, .time_ns = 1 + (uint64_t)i};
        int rc = mh_emit(rec, &ev);
        cr_assert(rc == 0 || rc == MH_ESTATE, "emit %d returned %d", i, rc);
        accepted += rc == 0;
    }
    cr_expect_eq(mh_recorder_flush(rec), MH_EIO);
    struct mh_recorder_counts c;
    mh_recorder_get_counts(rec, &c);
    cr_expect_eq(c.emitted, accepted);
    cr_expect_eq(c.written, 0, "nothing reached /dev/full");
    mh_recorder_close(rec);
    close(fd);
}

Test(record_integrity, meta_key_can_be_set_any_number_of_times)
{
    char *path = tmp_path();
    struct mh_recorder *rec;
    cr_assert_eq(mh_recorder_open(path, NULL, &rec), 0);
    char v[32];
    for (int i = 0; i < 6000; i++) {
        snprintf(v, sizeof v, "step %d", i);
        cr_assert_eq(mh_recorder_set_meta(rec, "progress", v), 0, "call %d", i);
    }
    cr_assert_eq(mh_recorder_close(rec), 0);
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open(path, &r), 0);
    int last;
    tu_read_all(r, &last);
    cr_expect_eq(last, 0);
    cr_expect_str_eq(mh_reader_meta(r, "progress"), "step 5999");
    mh_reader_close(r);
    unlink(path);
}
