/* test_record_cupti_absent.c - CUPTI unavailable: mh_cupti_start fails
 * cleanly with a reason, records it in the file's "cupti" meta, and the
 * recorder keeps recording everything else. On a machine where CUPTI works
 * (a GPU), the first test instead checks that start and stop succeed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memhist/cupti.h"
#include "memhist/memhist.h"

static void tmp_path(char *buf, size_t len, const char *tag)
{
    snprintf(buf, len, "%s/cupti_absent_%s_%ld.memhist", MH_BINARY_DIR, tag, (long)getpid());
}

static struct mh_event alloc_event(uint64_t t)
{
    struct mh_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = MH_EV_SEGMENT_ALLOC;
    ev.time_ns = t;
    ev.addr = 0x7f0000000000ull;
    ev.size = 2 << 20;
    return ev;
}

/* Reads the file back: the number of events and the "cupti" meta. */
static uint64_t read_back(const char *path, char *cupti, size_t len)
{
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open(path, &r), 0);
    struct mh_event ev;
    uint64_t n = 0;
    while (mh_reader_next(r, &ev) == 1)
        n++;
    const char *m = mh_reader_meta(r, "cupti");
    snprintf(cupti, len, "%s", m ? m : "");
    mh_reader_close(r);
    return n;
}

Test(cupti_absent, start_fails_cleanly_and_recording_continues)
{
    char path[512], meta[512], why[256] = "x";
    tmp_path(path, sizeof path, "default");
    struct mh_recorder *rec;
    cr_assert_eq(mh_recorder_open(path, NULL, &rec), 0);
    struct mh_event ev = alloc_event(mh_clock_ns());
    cr_assert_eq(mh_emit(rec, &ev), 0);
    int rc = mh_cupti_start(rec, NULL, why, sizeof why);
    if (rc == 0) { /* a machine with a working CUPTI */
        cr_assert(mh_cupti_active());
        cr_assert_eq(mh_cupti_flush(), 0);
        cr_assert_eq(mh_cupti_stop(), 0);
    } else {
        cr_assert_eq(rc, MH_EUNAVAILABLE);
        cr_assert_gt(strlen(why), 5, "a reason is given");
        cr_assert_not(mh_cupti_active());
        cr_assert_eq(mh_cupti_flush(), MH_ESTATE);
        cr_assert_eq(mh_cupti_stop(), 0, "stop without start is harmless");
    }
    ev.time_ns = mh_clock_ns();
    ev.kind = MH_EV_SEGMENT_FREE;
    cr_assert_eq(mh_emit(rec, &ev), 0, "the recorder keeps working");
    cr_assert_eq(mh_recorder_close(rec), 0);
    uint64_t n = read_back(path, meta, sizeof meta);
    cr_assert_geq(n, 2);
    if (rc != 0) {
        cr_assert_eq(strncmp(meta, "unavailable: ", 13), 0, "meta: '%s'", meta);
        cr_assert(strstr(meta, why) != NULL, "meta '%s' holds the reason '%s'", meta, why);
    } else {
        cr_assert_eq(strncmp(meta, "enabled", 7), 0, "meta: '%s'", meta);
    }
    unlink(path);
}

Test(cupti_absent, missing_library_names_dlopen)
{
    char path[512], meta[512], why[256];
    tmp_path(path, sizeof path, "nolib");
    struct mh_recorder *rec;
    cr_assert_eq(mh_recorder_open(path, NULL, &rec), 0);
    struct mh_cupti_opts o;
    memset(&o, 0, sizeof o);
    o.library = "/nonexistent/libcupti.so.13";
    cr_assert_eq(mh_cupti_start(rec, &o, why, sizeof why), MH_EUNAVAILABLE);
    cr_assert(strstr(why, "libcupti") != NULL, "why: %s", why);
    /* a second attempt behaves the same (no state left behind) */
    cr_assert_eq(mh_cupti_start(rec, &o, NULL, 0), MH_EUNAVAILABLE);
    struct mh_event ev = alloc_event(mh_clock_ns());
    cr_assert_eq(mh_emit(rec, &ev), 0);
    cr_assert_eq(mh_recorder_close(rec), 0);
    cr_assert_geq(read_back(path, meta, sizeof meta), 1);
    cr_assert(strstr(meta, "cannot load libcupti") != NULL, "meta: %s", meta);
    unlink(path);
}

Test(cupti_absent, bad_arguments)
{
    cr_assert_eq(mh_cupti_start(NULL, NULL, NULL, 0), MH_EINVAL);
    struct mh_cupti_counts c;
    mh_cupti_get_counts(&c);
    cr_assert_eq(c.events, 0);
}

Test(cupti_absent, injection_registry)
{
    cr_assert_null(mh_inject_recorder());
    char path[512];
    tmp_path(path, sizeof path, "registry");
    struct mh_recorder *rec;
    cr_assert_eq(mh_recorder_open(path, NULL, &rec), 0);
    mh_inject_set_recorder(rec);
    cr_assert_eq(mh_inject_recorder(), rec);
    mh_inject_set_recorder(NULL);
    cr_assert_null(mh_inject_recorder());
    cr_assert_eq(mh_recorder_close(rec), 0);
    unlink(path);
}
