/* test_format_seeds.c - the committed format-version-1 files in
 * tests/fuzz/corpus/format (also the fuzzer's seeds) still read completely
 * and say what they said when they were written. */
#include <stdio.h>

#include "test_format_util.h"

static struct mh_reader *open_seed(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/format/%s", MH_SOURCE_DIR, name);
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open(path, &r), 0, "%s", path);
    return r;
}

Test(format_seeds, empty)
{
    struct mh_reader *r = open_seed("empty.memhist");
    int last;
    cr_expect_eq(tu_read_all(r, &last), 0);
    cr_expect_eq(last, 0);
    struct mh_file_summary s;
    mh_reader_summary(r, &s);
    cr_expect_eq(s.format_version, 1);
    cr_expect_eq(s.has_trailer, 1);
    mh_reader_close(r);
}

Test(format_seeds, kinds)
{
    struct mh_reader *r = open_seed("kinds.memhist");
    struct mh_event ev;
    for (unsigned i = 0; i < 64; i++) {
        cr_assert_eq(mh_reader_next(r, &ev), 1, "%s", mh_reader_errmsg(r));
        cr_expect_eq(ev.time_ns, 1700000000000000000ull + i * 1500);
        cr_expect_eq(ev.addr, 0x7f0000000000ull + (i % 6) * 8192);
        cr_expect_eq(ev.size, 8192 + (i % 3) * 512);
        cr_expect_eq(ev.kind, i % 21);
        cr_expect_eq(ev.aux, i);
        cr_expect_eq(ev.thread, 100 + i % 2);
        const uint32_t *fr;
        size_t n;
        cr_assert_eq(mh_reader_stack(r, ev.stack, &fr, &n), 0);
        cr_expect_eq(n, i % 2 ? 3 : 2);
        struct mh_frame f;
        cr_assert_eq(mh_reader_frame(r, fr[n - 1], &f), 0);
        cr_expect_str_eq(f.func, "main");
        if (i % 5 == 0)
            cr_expect_str_eq(mh_reader_string(r, ev.str), "aten::mm");
    }
    cr_expect_eq(mh_reader_next(r, &ev), 0);
    cr_expect_str_eq(mh_reader_meta(r, "torch_version"), "2.5.1");
    struct mh_device_info d;
    cr_assert_eq(mh_reader_device(r, 0, &d), 0);
    cr_expect_str_eq(d.name, "NVIDIA H100");
    struct mh_file_summary s;
    mh_reader_summary(r, &s);
    cr_expect_eq(s.dropped, 2);
    mh_reader_close(r);
}

Test(format_seeds, extremes)
{
    struct mh_reader *r = open_seed("extremes.memhist");
    struct mh_event ev;
    for (unsigned i = 0; i < 40; i++) {
        cr_assert_eq(mh_reader_next(r, &ev), 1, "%s", mh_reader_errmsg(r));
        cr_expect_eq(ev.time_ns, 5000 - i * 3);
        cr_expect_eq(ev.addr, i % 2 ? 0 : ~0ull - i);
        cr_expect_eq(ev.size, ~0ull - i * 511);
        cr_expect_eq(ev.device, -1);
        cr_expect_eq(ev.dur_ns, (uint64_t)i << 20);
        cr_expect_eq(ev.pool[1], 1);
        cr_expect_eq(ev.flags, i & 31);
    }
    cr_expect_eq(mh_reader_next(r, &ev), 0);
    mh_reader_close(r);
}
