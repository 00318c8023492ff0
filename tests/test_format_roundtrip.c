/* test_format_roundtrip.c - write/read round trips of the .memhist format:
 * every event kind and field, interning and definitions, metadata and
 * devices, summary, rewind, file and memory outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "memhist/version.h"
#include "test_format_util.h"

#define NEV 20000

static struct mh_event *random_events(uint64_t seed, size_t n, uint32_t nstr, uint32_t nstack)
{
    struct mh_event *evs = malloc(sizeof *evs * n);
    uint64_t t = 1700000000000000000ull;
    for (size_t i = 0; i < n; i++)
        tu_event(&seed, &evs[i], nstr, nstack, &t);
    /* address reuse, as allocators do */
    for (size_t i = 10; i < n; i += 3)
        evs[i].addr = evs[i - 1 - seed % 9].addr, evs[i].size = evs[i - 7].size;
    return evs;
}

/* Closes a memory writer and opens a reader on what it wrote. */
static struct mh_reader *close_and_read(struct mh_writer *w)
{
    const void *data;
    size_t len;
    struct mh_reader *r;
    cr_assert_eq(mh_writer_close(w), 0);
    cr_assert_eq(mh_writer_mem(w, &data, &len), 0);
    cr_assert_eq(mh_reader_open_mem(data, len, &r), 0);
    return r;
}

static void check_all(struct mh_reader *r, const struct mh_event *evs, size_t n)
{
    struct mh_event ev;
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(mh_reader_next(r, &ev), 1, "event %zu: %s", i, mh_reader_errmsg(r));
        tu_expect_event(&ev, &evs[i], i);
    }
    cr_assert_eq(mh_reader_next(r, &ev), 0, "%s", mh_reader_errmsg(r));
    cr_assert_eq(mh_reader_next(r, &ev), 0);
}

Test(format_roundtrip, every_field_every_kind_memory)
{
    uint32_t chunk_sizes[] = {0, 1, 7, 4096, 65536};
    for (size_t c = 0; c < sizeof chunk_sizes / sizeof chunk_sizes[0]; c++) {
        struct mh_writer_opts o = {.source = "simulated", .chunk_events = chunk_sizes[c]};
        struct mh_writer *w;
        cr_assert_eq(mh_writer_open_mem(&o, &w), 0);
        for (int i = 0; i < 5; i++)
            cr_assert_eq(mh_writer_intern_string(w, "abcde" + i, 5 - (size_t)i), i + 1);
        uint32_t f = (uint32_t)mh_writer_intern_frame(w, "a.py", "f", 1);
        cr_assert_eq(mh_writer_intern_stack(w, &f, 1), 1);
        size_t n = chunk_sizes[c] == 1 ? 500 : NEV;
        struct mh_event *evs = random_events(42 + c, n, 7, 1);
        uint64_t kinds[MH_EV_KIND_COUNT] = {0};
        for (size_t i = 0; i < n; i++) {
            cr_assert_eq(mh_writer_event(w, &evs[i]), 0);
            kinds[evs[i].kind]++;
        }
        cr_assert_eq(mh_writer_close(w), 0);
        const void *data;
        size_t len;
        cr_assert_eq(mh_writer_mem(w, &data, &len), 0);
        struct mh_reader *r;
        cr_assert_eq(mh_reader_open_mem(data, len, &r), 0);
        cr_expect_str_eq(mh_reader_meta(r, "source"), "simulated");
        check_all(r, evs, n);
        struct mh_file_summary s;
        mh_reader_summary(r, &s);
        cr_expect_eq(s.format_version, MH_FORMAT_VERSION);
        cr_expect_eq(s.has_trailer, 1);
        cr_expect_eq(s.damaged, 0);
        cr_expect_eq(s.events, n);
        for (int k = 0; k < MH_EV_KIND_COUNT; k++)
            cr_expect_eq(s.events_by_kind[k], kinds[k], "kind %d", k);
        mh_reader_close(r);
        mh_writer_free_mem(w);
        free(evs);
    }
}

Test(format_roundtrip, events_before_any_definition_and_empty_file)
{
    struct mh_writer *w;
    cr_assert_eq(mh_writer_open_mem(NULL, &w), 0);
    struct mh_reader *r = close_and_read(w);
    struct mh_event ev;
    cr_expect_eq(mh_reader_next(r, &ev), 0);
    struct mh_file_summary s;
    mh_reader_summary(r, &s);
    cr_expect_eq(s.events, 0);
    cr_expect_eq(s.has_trailer, 1);
    cr_expect_eq(s.first_time_ns, 0);
    cr_expect_str_eq(mh_reader_meta(r, "source"), "recorded");
    cr_expect_str_eq(mh_reader_meta(r, "library_version"), MH_VERSION_STRING);
    cr_expect_not_null(mh_reader_meta(r, "pid"));
    cr_expect_not_null(mh_reader_meta(r, "host"));
    mh_reader_close(r);
    mh_writer_free_mem(w);
}

Test(format_roundtrip, interning_dedup_and_definitions)
{
    struct mh_writer *w;
    cr_assert_eq(mh_writer_open_mem(NULL, &w), 0);
    int64_t a = mh_writer_intern_string(w, "alpha", 5);
    cr_expect_eq(mh_writer_intern_string(w, "alpha", 5), a);
    cr_expect_neq(mh_writer_intern_string(w, "alph", 4), a);
    int64_t empty = mh_writer_intern_string(w, "", 0);
    cr_expect_gt(empty, 0);
    int64_t f1 = mh_writer_intern_frame(w, "x.py", "f", 1);
    int64_t f2 = mh_writer_intern_frame(w, "x.py", "g", 2);
    int64_t f3 = mh_writer_intern_frame(w, "y.py", "main", 3);
    cr_expect_eq(mh_writer_intern_frame(w, "x.py", "f", 1), f1);
    cr_expect_neq(mh_writer_intern_frame(w, "x.py", "f", 2), f1);
    uint32_t s1f[] = {(uint32_t)f1, (uint32_t)f2, (uint32_t)f3};
    uint32_t s2f[] = {(uint32_t)f2, (uint32_t)f3};
    uint32_t s3f[] = {(uint32_t)f1, (uint32_t)f3};
    int64_t s1 = mh_writer_intern_stack(w, s1f, 3);
    int64_t s2 = mh_writer_intern_stack(w, s2f, 2);
    int64_t s3 = mh_writer_intern_stack(w, s3f, 2);
    cr_expect_eq(mh_writer_intern_stack(w, s1f, 3), s1);
    cr_expect(s1 > 0 && s2 > 0 && s3 > 0 && s1 != s2 && s2 != s3);
    cr_expect_eq(mh_writer_intern_stack(w, s1f, 0), 0);
    uint32_t bad = 999;
    cr_expect_eq(mh_writer_intern_stack(w, &bad, 1), MH_EINVAL);
    struct mh_event ev = {.kind = MH_EV_ALLOC, .stack = 99};
    cr_expect_eq(mh_writer_event(w, &ev), MH_EINVAL, "unknown stack id refused");
    ev.stack = (uint32_t)s1;
    ev.str = (uint32_t)a;
    cr_assert_eq(mh_writer_event(w, &ev), 0);
    /* interned after the first event: must still arrive before its use */
    int64_t late = mh_writer_intern_string(w, "late", 4);
    ev.str = (uint32_t)late;
    ev.stack = (uint32_t)s3;
    cr_assert_eq(mh_writer_event(w, &ev), 0);
    struct mh_reader *r = close_and_read(w);
    struct mh_event e;
    cr_assert_eq(mh_reader_next(r, &e), 1);
    cr_expect_str_eq(mh_reader_string(r, e.str), "alpha");
    cr_assert_eq(mh_reader_next(r, &e), 1);
    cr_expect_str_eq(mh_reader_string(r, e.str), "late");
    const uint32_t *frames;
    size_t nf;
    cr_assert_eq(mh_reader_stack(r, e.stack, &frames, &nf), 0);
    cr_assert_eq(nf, 2);
    struct mh_frame fr;
    cr_assert_eq(mh_reader_frame(r, frames[0], &fr), 0);
    cr_expect_str_eq(fr.file, "x.py");
    cr_expect_str_eq(fr.func, "f");
    cr_expect_eq(fr.line, 1);
    cr_assert_eq(mh_reader_frame(r, frames[1], &fr), 0);
    cr_expect_str_eq(fr.func, "main");
    cr_assert_eq(mh_reader_stack(r, (uint32_t)s1, &frames, &nf), 0);
    cr_expect_eq(nf, 3);
    cr_expect_eq(frames[0], f1);
    cr_expect_eq(frames[1], f2);
    cr_expect_eq(frames[2], f3);
    cr_expect_str_eq(mh_reader_string(r, (uint32_t)empty), "");
    cr_expect_null(mh_reader_string(r, 0));
    cr_expect_null(mh_reader_string(r, 1000));
    cr_expect_eq(mh_reader_stack(r, 1000, &frames, &nf), MH_ENOTFOUND);
    cr_expect_eq(mh_reader_frame(r, 0, &fr), MH_ENOTFOUND);
    mh_reader_close(r);
    mh_writer_free_mem(w);
}

/* An empty string interned before anything else leaves the string arena
 * empty; comparing and copying into it must stay defined (the sanitizer
 * builds abort on arithmetic on a null arena). */
Test(format_roundtrip, empty_string_interned_first)
{
    struct mh_writer *w;
    cr_assert_eq(mh_writer_open_mem(NULL, &w), 0);
    int64_t empty = mh_writer_intern_string(w, "", 0);
    cr_assert_eq(empty, 1);
    cr_expect_eq(mh_writer_intern_string(w, NULL, 0), empty);
    int64_t word = mh_writer_intern_string(w, "word", 4);
    cr_expect_eq(word, 2);
    struct mh_event ev = {.kind = MH_EV_ALLOC, .str = (uint32_t)empty};
    cr_assert_eq(mh_writer_event(w, &ev), 0);
    struct mh_reader *r = close_and_read(w);
    struct mh_event e;
    cr_assert_eq(mh_reader_next(r, &e), 1);
    cr_expect_str_eq(mh_reader_string(r, e.str), "");
    cr_expect_str_eq(mh_reader_string(r, (uint32_t)word), "word");
    mh_reader_close(r);
    mh_writer_free_mem(w);
}

Test(format_roundtrip, meta_devices_dropped_rewind_file)
{
    char path[] = "/tmp/mh_test_rt_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    struct mh_writer *w;
    cr_assert_eq(mh_writer_open(path, NULL, &w), 0);
    mh_writer_set_meta(w, "k1", "v1");
    mh_writer_set_meta(w, "k2", "v2");
    mh_writer_set_device(w, 0, "GPU A", 1000);
    mh_writer_set_device(w, 1, "GPU B", 2000);
    struct mh_event *evs = random_events(7, 9000, 0, 0);
    for (int i = 0; i < 9000; i++) {
        cr_assert_eq(mh_writer_event(w, &evs[i]), 0);
        if (i == 5000) {
            mh_writer_set_meta(w, "k1", "v1b");
            mh_writer_set_device(w, 0, "GPU A2", 1001);
            cr_assert_eq(mh_writer_flush(w), 0);
            cr_expect_gt(mh_writer_bytes(w), 0);
        }
    }
    mh_writer_add_dropped(w, 11);
    mh_writer_add_dropped(w, 1);
    cr_assert_eq(mh_writer_close(w), 0);

    struct mh_reader *r;
    cr_assert_eq(mh_reader_open(path, &r), 0);
    check_all(r, evs, 9000);
    cr_expect_str_eq(mh_reader_meta(r, "k1"), "v1b");
    cr_expect_str_eq(mh_reader_meta(r, "k2"), "v2");
    cr_assert_eq(mh_reader_device_count(r), 2);
    struct mh_device_info d;
    cr_assert_eq(mh_reader_device(r, 0, &d), 0);
    cr_expect_eq(d.device, 0);
    cr_expect_str_eq(d.name, "GPU A2");
    cr_expect_eq(d.total_bytes, 1001);
    cr_assert_eq(mh_reader_device(r, 1, &d), 0);
    cr_expect_str_eq(d.name, "GPU B");
    struct mh_file_summary s;
    mh_reader_summary(r, &s);
    cr_expect_eq(s.dropped, 12);
    cr_expect_eq(s.events, 9000);
    cr_assert_eq(mh_reader_rewind(r), 0);
    check_all(r, evs, 9000);
    mh_reader_summary(r, &s);
    cr_expect_eq(s.events, 9000);
    cr_expect_eq(s.dropped, 12);
    const char *k, *v;
    size_t nmeta = 0;
    while (mh_reader_meta_at(r, nmeta, &k, &v))
        nmeta++;
    cr_expect_geq(nmeta, 2 + 5);
    mh_reader_close(r);
    unlink(path);
    free(evs);
}

/* A batch spanning several chunks, with events naming unknown ids among
 * them: those alone are left out, counted as their thread's losses, and the
 * others read back in order, as one event at a time would write them. */
Test(format_roundtrip, batch_leaves_out_unknown_ids)
{
    struct mh_writer_opts o = {.chunk_events = 1000};
    struct mh_writer *w;
    cr_assert_eq(mh_writer_open_mem(&o, &w), 0);
    int64_t a = mh_writer_intern_string(w, "alpha", 5);
    cr_assert_gt(a, 0);
    struct mh_event *evs = random_events(11, 5000, 0, 0);
    struct mh_event *kept = malloc(sizeof *kept * 5000);
    size_t nkept = 0, bad = 0, bad_first = 0;
    for (size_t i = 0; i < 5000; i++) {
        evs[i].str = i % 7 == 0 ? (uint32_t)a : 0;
        if (i % 997 == 3) { /* an unknown string or stack id */
            if (i % 2)
                evs[i].str = 999;
            else
                evs[i].stack = 999;
            evs[i].thread = 42;
            bad++;
            bad_first += i < 2500;
        } else {
            kept[nkept++] = evs[i];
        }
    }
    size_t refused = 0;
    cr_assert_eq(mh_writer_events(w, evs, 2500, &refused), 0);
    cr_expect_eq(refused, bad_first);
    cr_assert_eq(mh_writer_events(w, evs + 2500, 2500, NULL), 0);
    cr_assert_eq(mh_writer_events(w, evs, 0, &refused), 0);
    cr_expect_eq(refused, 0);
    cr_expect_eq(mh_writer_events(NULL, evs, 1, &refused), MH_EINVAL);
    cr_expect_eq(mh_writer_events(w, NULL, 1, &refused), MH_EINVAL);
    struct mh_reader *r = close_and_read(w);
    check_all(r, kept, nkept);
    struct mh_file_summary s;
    mh_reader_summary(r, &s);
    cr_expect_eq(s.events, 5000 - bad);
    cr_expect_eq(s.dropped, bad);
    mh_reader_close(r);
    mh_writer_free_mem(w);
    free(kept);
    free(evs);
}

Test(format_roundtrip, memory_writer_and_errors)
{
    struct mh_writer *w;
    struct mh_writer_opts bad = {.source = "made-up"};
    cr_expect_eq(mh_writer_open_mem(&bad, &w), MH_EINVAL);
    cr_expect_eq(mh_writer_open("/nonexistent-dir/x.memhist", NULL, &w), MH_EIO);
    struct mh_reader *r;
    cr_expect_eq(mh_reader_open("/nonexistent-dir/x.memhist", &r), MH_ENOTFOUND);
    cr_expect_eq(mh_reader_open_mem("hello world, not memhist", 24, &r), MH_EFORMAT);
    cr_expect_eq(mh_reader_open_mem("", 0, &r), MH_ETRUNCATED);
    mh_writer_close(NULL);
    mh_writer_free_mem(NULL);
    mh_reader_close(NULL);

    const void *data;
    size_t len;
    tu_small_file(&w, &data, &len, 100, 16);
    cr_expect_eq(mh_writer_bytes(w), len);
    uint8_t *copy = malloc(len);
    memcpy(copy, data, len);
    copy[8] = 99; /* format version from the future */
    cr_expect_eq(mh_reader_open_mem(copy, len, &r), MH_EVERSION);
    free(copy);
    cr_assert_eq(mh_reader_open_mem(data, len, &r), 0);
    int last;
    cr_expect_eq(tu_read_all(r, &last), 100);
    cr_expect_eq(last, 0);
    cr_expect_str_eq(mh_reader_errmsg(r), "");
    cr_expect_str_eq(mh_reader_meta(r, "torch_version"), "2.5.0");
    mh_reader_close(r);
    mh_writer_free_mem(w);
}

Test(format_roundtrip, deep_and_shared_stacks)
{
    struct mh_writer *w;
    cr_assert_eq(mh_writer_open_mem(NULL, &w), 0);
    uint32_t frames[300];
    for (int i = 0; i < 300; i++) {
        char name[16];
        snprintf(name, sizeof name, "fn%d", i);
        frames[i] = (uint32_t)mh_writer_intern_frame(w, "deep.py", name, (uint32_t)i);
    }
    int64_t ids[300];
    for (int d = 1; d <= 300; d++)
        ids[d - 1] = mh_writer_intern_stack(w, frames + 300 - d, (size_t)d);
    struct mh_event ev = {.kind = MH_EV_ALLOC, .stack = (uint32_t)ids[299]};
    mh_writer_event(w, &ev);
    struct mh_reader *r = close_and_read(w);
    int last;
    cr_expect_eq(tu_read_all(r, &last), 1);
    for (int d = 1; d <= 300; d++) {
        const uint32_t *f;
        size_t n;
        cr_assert_eq(mh_reader_stack(r, (uint32_t)ids[d - 1], &f, &n), 0);
        cr_assert_eq(n, (size_t)d);
        for (int j = 0; j < d; j++)
            cr_assert_eq(f[j], frames[300 - d + j]);
    }
    mh_reader_close(r);
    mh_writer_free_mem(w);
}
