/* test_analysis_job_origin.c - the one time origin of a job's recordings
 * (job_origin.h): a recording starts when its file was opened unless its
 * events come earlier (a simulated run, an imported snapshot: then at its
 * first event); the job starts at the earliest start of its files; a file
 * with no events, or standard input, does not count; a file that does not
 * open is an error. Recordings are written here. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job_origin.h"
#include "memhist/memhist.h"

static char dir[] = "/tmp/mh-origin-XXXXXX";

static void make_dir(void)
{
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(job_origin, .init = make_dir, .fini = remove_dir);

/* Writes `name` with allocations at each of `times` (ns, 0-terminated; or
 * none) and returns the header's start_ns. */
static uint64_t write_run(const char *name, const uint64_t *times, char *path, size_t cap)
{
    struct mh_writer *w;
    snprintf(path, cap, "%s/%s", dir, name);
    cr_assert_eq(mh_writer_open(path, NULL, &w), 0);
    for (size_t i = 0; times && times[i]; i++) {
        struct mh_event ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = MH_EV_ALLOC;
        ev.time_ns = times[i];
        ev.addr = 0x1000 * (i + 1);
        ev.size = 512;
        ev.thread = 1;
        cr_assert_eq(mh_writer_event(w, &ev), 0);
    }
    cr_assert_eq(mh_writer_close(w), 0);
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open(path, &r), 0);
    const char *start = mh_reader_meta(r, "start_ns");
    cr_assert_not_null(start, "the writer records when the file was opened");
    uint64_t ns = strtoull(start, NULL, 10);
    mh_reader_close(r);
    cr_assert_gt(ns, 1000000000000000000ull, "a wall-clock time");
    return ns;
}

static uint64_t start_of(const char *path)
{
    struct mh_reader *r;
    struct mh_event ev;
    cr_assert_eq(mh_reader_open(path, &r), 0);
    uint64_t first = mh_reader_next(r, &ev) > 0 ? ev.time_ns : 0;
    uint64_t start = mh__recording_start(r, first);
    mh_reader_close(r);
    return start;
}

static uint64_t origin_of(const char *a, const char *b)
{
    const char *paths[] = {a, b};
    uint64_t origin = 1;
    cr_assert_eq(mh__job_origin(paths, b ? 2 : 1, &origin), 0);
    return origin;
}

Test(job_origin, a_recording_starts_at_its_header_unless_its_events_come_first)
{
    char rec[256], sim[256];
    const uint64_t now = 4000000000000000000ull; /* 2096: after any header's start_ns */
    const uint64_t later[] = {now, now + 5, 0}, early[] = {1000, 2000, 0};
    uint64_t rec_start = write_run("rank0", later, rec, sizeof rec);
    write_run("sim", early, sim, sizeof sim);
    cr_expect_eq(start_of(rec), rec_start, "recorded: when the file was opened");
    cr_expect_eq(start_of(sim), 1000, "events before the header: the first event");
    cr_expect_eq(origin_of(rec, NULL), rec_start);
    cr_expect_eq(origin_of(rec, sim), 1000, "the earliest start of the job's files");
    cr_expect_eq(origin_of(sim, rec), 1000, "whatever their order");
}

Test(job_origin, the_earliest_rank_and_files_without_events)
{
    char r0[256], r1[256], none[256];
    const uint64_t t[] = {4000000000000000000ull, 0};
    uint64_t s0 = write_run("rank0", t, r0, sizeof r0);
    usleep(2000);
    uint64_t s1 = write_run("rank1", t, r1, sizeof r1);
    write_run("empty", NULL, none, sizeof none);
    cr_assert_gt(s1, s0, "rank 1 opened its file later");
    cr_expect_eq(origin_of(r1, r0), s0, "the rank that started first");
    cr_expect_eq(origin_of(none, r1), s1, "a file with no events does not count");
    cr_expect_eq(origin_of(none, NULL), 0, "no events at all: no origin");
    cr_expect_eq(origin_of("-", r1), s1, "standard input is not read for the origin");
}

Test(job_origin, a_file_that_does_not_open_is_an_error)
{
    char r0[256], missing[300], bad[300];
    const uint64_t t[] = {4000000000000000000ull, 0};
    write_run("rank0", t, r0, sizeof r0);
    snprintf(missing, sizeof missing, "%s/missing", dir);
    snprintf(bad, sizeof bad, "%s/bad", dir);
    FILE *f = fopen(bad, "w");
    cr_assert_not_null(f);
    fputs("not a recording", f);
    fclose(f);
    const char *with_missing[] = {r0, missing}, *with_bad[] = {bad, r0};
    uint64_t origin;
    cr_expect_lt(mh__job_origin(with_missing, 2, &origin), 0);
    cr_expect_lt(mh__job_origin(with_bad, 2, &origin), 0);
}
