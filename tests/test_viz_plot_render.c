/* test_viz_plot_render.c - the PNG plots end to end: small runs built with
 * the writer in memory, rendered by mh__plot_render, decoded again with
 * libpng and checked for what a reader of the picture relies on (the peak
 * marker's column, reserved never below allocated, step lines where the
 * steps begin), for clear errors on bad options, for a message image on
 * empty input, and byte for byte against the golden PNGs in
 * tests/data/golden (regenerate with scripts/regen-golden.sh). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/memhist.h"
#include "palette.h"
#include "plot.h"
#include "plot_int.h"
#include "png_out.h"
#include "test_viz_plot_util.h"

static void run_open(struct run *b)
{
    memset(b, 0, sizeof *b);
    cr_assert_eq(mh_writer_open_mem(NULL, &b->w), 0);
    mh_writer_set_meta(b->w, "torch_version", "2.5.1");
    mh_writer_set_device(b->w, 0, "Test GPU", 16ull << 30);
    static const char *const files[] = {"model/attn.py", "model/mlp.py", "model/norm.py",
                                        "train.py"};
    for (int i = 0; i < 4; i++) {
        uint32_t f[2];
        f[0] = (uint32_t)mh_writer_intern_frame(b->w, files[i], "forward", (uint32_t)(10 + i));
        f[1] = (uint32_t)mh_writer_intern_frame(b->w, "train.py", "main", 99);
        b->stack[i] = (uint32_t)mh_writer_intern_stack(b->w, f, 2);
    }
}

#define SEG 0x10000000ull

/* Three steps of 100 ms: forward allocates three blocks, backward frees
 * them. Step 1 is the largest; its peak is at 160 ms (all three live). */
static void basic_run(struct run *b)
{
    run_open(b);
    ev(b, MH_EV_SEGMENT_ALLOC, 0, SEG, 256 * MIB, b->stack[3], 0);
    for (uint32_t s = 0; s < 3; s++) {
        uint64_t t = 100 * s + 10, k = s == 1 ? 2 : 1;
        ev(b, MH_EV_STEP_BEGIN, t, 0, 0, 0, s);
        ev(b, MH_EV_ALLOC, t + 10, SEG, 32 * MIB * k, b->stack[0], 0);
        ev(b, MH_EV_ALLOC, t + 30, SEG + 64 * MIB, 16 * MIB * k, b->stack[1], 0);
        ev(b, MH_EV_ALLOC, t + 50, SEG + 128 * MIB, 8 * MIB * k - 1000, b->stack[2], 0);
        ev(b, MH_EV_FREE_REQUESTED, t + 60, SEG + 128 * MIB, 8 * MIB * k - 1000, b->stack[2], 0);
        ev(b, MH_EV_FREE_COMPLETED, t + 60, SEG + 128 * MIB, 8 * MIB * k - 1000, b->stack[2], 0);
        ev(b, MH_EV_FREE_REQUESTED, t + 70, SEG + 64 * MIB, 16 * MIB * k, b->stack[1], 0);
        ev(b, MH_EV_FREE_COMPLETED, t + 70, SEG + 64 * MIB, 16 * MIB * k, b->stack[1], 0);
        ev(b, MH_EV_FREE_REQUESTED, t + 80, SEG, 32 * MIB * k, b->stack[0], 0);
        ev(b, MH_EV_FREE_COMPLETED, t + 80, SEG, 32 * MIB * k, b->stack[0], 0);
        ev(b, MH_EV_STEP_END, t + 90, 0, 0, 0, s);
    }
    run_close(b);
}

static int render(struct run *b, const struct mh__plot_opts *o, struct mh__canvas *img,
                  struct mh__plot_result *res, char *err)
{
    struct mh__sink sink;
    mh__sink_init_mem(&sink);
    int rc = mh__plot_render(b->s, o, &sink, res, err, 256);
    if (rc == 0) {
        cr_assert_eq(mh__png_read(sink.buf, sink.len, img), 0, "output is not a PNG");
    }
    mh__sink_free(&sink);
    return rc;
}

static void small_opts(struct mh__plot_opts *o)
{
    memset(o, 0, sizeof *o);
    o->width = 1000;
    o->height = 600;
    o->name = "basic.memhist";
}

static struct mh__plot_frame frame_for(const struct mh__plot_opts *o, uint64_t first_ms,
                                       uint64_t last_ms)
{
    struct mh__plot_frame f;
    mh__plot_layout(o->width, o->height, MH__PLOT_TOP, &f);
    f.tx.v0 = (double)(first_ms * MS);
    f.tx.v1 = (double)(last_ms * MS);
    f.tx.p0 = f.x;
    f.tx.p1 = f.x + f.w;
    return f;
}

static int count_in_column(const struct mh__canvas *img, int x, int y0, int y1, uint32_t rgb)
{
    int n = 0;
    for (int y = y0; y <= y1; y++)
        n += mh__canvas_get(img, x, y) == rgb;
    return n;
}

Test(plot_render, peak_marker_at_the_peak_column)
{
    struct run b;
    basic_run(&b);
    struct mh__plot_opts o;
    small_opts(&o);
    o.x_axis = MH__PLOT_X_TIME; /* positions on a linear time axis */
    struct mh__canvas img;
    struct mh__plot_result res;
    char err[256];
    cr_assert_eq(render(&b, &o, &img, &res, err), 0, "%s", err);
    cr_assert_eq(res.empty, 0);
    /* events span 0 .. 300 ms; the peak is the third alloc of step 1 */
    struct mh__plot_frame f = frame_for(&o, 0, 300);
    int expect = mh__plot_axis_px(&f.tx, 160.0 * MS);
    int best = -1, best_n = 0;
    for (int x = f.x; x < f.x + f.w; x++) {
        int n = count_in_column(&img, x, f.y, f.y + f.h - 1, MH__COL_PEAK);
        if (n > best_n) {
            best_n = n;
            best = x;
        }
    }
    cr_assert_gt(best_n, 10, "no peak marker found");
    cr_assert(best >= expect - 1 && best <= expect + 1, "peak marker at x=%d, expected %d", best,
              expect);
    mh__canvas_release(&img);
    run_free(&b);
}

/* Topmost pixel of a colour in a column of the panel, or -1. */
static int top_of(const struct mh__canvas *img, int x, int y0, int y1, uint32_t rgb)
{
    for (int y = y0; y <= y1; y++)
        if (mh__canvas_get(img, x, y) == rgb)
            return y;
    return -1;
}

Test(plot_render, reserved_never_below_allocated)
{
    struct run b;
    basic_run(&b);
    struct mh__plot_opts o;
    small_opts(&o);
    struct mh__canvas img;
    char err[256];
    cr_assert_eq(render(&b, &o, &img, NULL, err), 0, "%s", err);
    struct mh__plot_frame f = frame_for(&o, 0, 300);
    int checked = 0;
    for (int x = f.x; x < f.x + f.w; x++) {
        int ya = top_of(&img, x, f.y, f.y + f.h - 1, MH__COL_ALLOCATED);
        int yr = top_of(&img, x, f.y, f.y + f.h - 1, MH__COL_RESERVED);
        if (ya < 0 || yr < 0)
            continue;
        cr_assert_leq(yr, ya, "column %d: reserved (y=%d) drawn below allocated (y=%d)", x, yr, ya);
        checked++;
    }
    cr_assert_gt(checked, f.w / 2);
    mh__canvas_release(&img);
    run_free(&b);
}

Test(plot_render, step_lines_at_step_begins)
{
    struct run b;
    basic_run(&b);
    struct mh__plot_opts o;
    small_opts(&o);
    o.x_axis = MH__PLOT_X_TIME; /* positions on a linear time axis */
    struct mh__canvas img;
    char err[256];
    cr_assert_eq(render(&b, &o, &img, NULL, err), 0, "%s", err);
    struct mh__plot_frame f = frame_for(&o, 0, 300);
    /* the steps begin with their STEP_BEGIN events at 10, 110 and 210 ms */
    struct mh__plot_scan s;
    cr_assert_eq(mh__plot_scan_run(b.s, &o, &s, err, sizeof err), 0);
    cr_assert_eq(mh_model_step_count(s.model, 0), 3);
    int expect[3];
    for (size_t i = 0; i < 3; i++) {
        struct mh_step_stats st;
        cr_assert_eq(mh_model_step(s.model, 0, i, &st), 0);
        cr_assert_eq(st.begin_ns, T0 + (100 * i + 10) * MS);
        expect[i] = mh__plot_axis_px(&f.tx, (double)(st.begin_ns - T0));
    }
    mh__plot_scan_free(&s);
    for (int x = f.x; x < f.x + f.w; x++) {
        int n = count_in_column(&img, x, f.y, f.y + f.h - 1, MH__COL_STEP);
        int is_step = x == expect[0] || x == expect[1] || x == expect[2];
        if (is_step)
            cr_assert_gt(n, f.h / 4, "no step line at x=%d", x);
        else
            cr_assert_lt(n, 3, "unexpected step-coloured line at x=%d", x);
    }
    mh__canvas_release(&img);
    run_free(&b);
}

Test(plot_render, columns_keep_reserved_above_allocated_and_groups_sum)
{
    struct run b;
    basic_run(&b);
    struct mh__plot_opts o;
    small_opts(&o);
    char err[256];
    struct mh__plot_scan s;
    cr_assert_eq(mh__plot_scan_run(b.s, &o, &s, err, sizeof err), 0);
    /* 64 + 32 MiB and 16 MiB - 1000 B rounded up to a multiple of 512 */
    uint64_t third = 16 * MIB - 512;
    cr_assert_eq(s.peak.value, 96 * MIB + third);
    cr_assert_eq(s.peak.time_ns, T0 + 160 * MS);
    cr_assert_eq(mh__plot_scan_rank(b.s, &s, 2), 0);
    cr_assert_eq(s.ngroups, 2);
    cr_assert_str_eq(s.labels[0], "model/attn.py:10 forward");
    cr_assert_eq(s.group_peak[0], 64 * MIB);
    cr_assert_eq(s.group_peak[1], 32 * MIB);
    cr_assert_eq(s.group_peak[2], third, "the rest holds the third site");
    struct mh__plot_cols c;
    cr_assert_eq(mh__plot_cols_run(b.s, &o, &s, 300, s.win_first, s.win_last, &c), 0);
    for (int i = 0; i < c.n; i++) {
        uint64_t sum = 0;
        for (unsigned g = 0; g <= c.ngroups; g++)
            sum += c.groups[(size_t)i * (c.ngroups + 1) + g];
        cr_assert_eq(sum, c.alloc[i], "column %d: groups %llu != allocated %llu", i,
                     (unsigned long long)sum, (unsigned long long)c.alloc[i]);
        cr_assert_geq(c.reserved[i], c.alloc[i]);
    }
    mh__plot_cols_free(&c);
    mh__plot_scan_free(&s);
    run_free(&b);
}

static void expect_message_image(struct run *b)
{
    struct mh__plot_opts o;
    small_opts(&o);
    struct mh__canvas img;
    struct mh__plot_result res;
    char err[256];
    cr_assert_eq(render(b, &o, &img, &res, err), 0, "%s", err);
    cr_assert_eq(res.empty, 1);
    cr_assert_eq(img.width, 1000);
    cr_assert_eq(img.height, 600);
    int text = 0;
    for (int x = 0; x < img.width; x++)
        text += count_in_column(&img, x, img.height / 2 - 12, img.height / 2 + 12, MH__COL_TEXT);
    cr_assert_gt(text, 50, "the message is missing");
    mh__canvas_release(&img);
}

Test(plot_render, empty_file_gives_a_message_image)
{
    struct run b;
    run_open(&b);
    run_close(&b);
    expect_message_image(&b);
    run_free(&b);
}

Test(plot_render, one_event_gives_a_message_image)
{
    struct run b;
    run_open(&b);
    ev(&b, MH_EV_SEGMENT_ALLOC, 5, SEG, 2 * MIB, b.stack[0], 0);
    run_close(&b);
    expect_message_image(&b);
    run_free(&b);
}

static void expect_error(struct mh__plot_opts *o, const char *needle)
{
    struct run b;
    basic_run(&b);
    struct mh__canvas img;
    char err[256];
    cr_assert_eq(render(&b, o, &img, NULL, err), MH_EINVAL);
    cr_assert(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err, needle);
    run_free(&b);
}

Test(plot_render, bad_options_are_clear_errors)
{
    struct mh__plot_opts o;
    small_opts(&o);
    o.width = 10;
    expect_error(&o, "image size 10x600");
    small_opts(&o);
    o.has_device = 1;
    o.device = 3;
    expect_error(&o, "unknown device 3; the file has device 0");
    small_opts(&o);
    o.has_steps = 1;
    o.step_lo = 7;
    o.step_hi = 9;
    expect_error(&o, "--steps window holds no events");
    small_opts(&o);
    o.kind = MH__PLOT_SEGMENTS;
    o.at = MH__MOMENT_OOM;
    expect_error(&o, "no out-of-memory event");
    small_opts(&o);
    o.top = 99;
    expect_error(&o, "--top 99");
}

Test(plot_render, window_narrows_the_time_axis)
{
    struct run b;
    basic_run(&b);
    struct mh__plot_opts o;
    small_opts(&o);
    o.has_steps = 1;
    o.step_lo = o.step_hi = 2;
    char err[256];
    struct mh__plot_scan s;
    cr_assert_eq(mh__plot_scan_run(b.s, &o, &s, err, sizeof err), 0, "%s", err);
    /* step 2 runs from the end of step 1 (200 ms) to its own end (300 ms) */
    cr_assert_geq(s.win_first, T0 + 190 * MS);
    cr_assert_leq(s.win_first, T0 + 210 * MS);
    cr_assert_geq(s.win_last, T0 + 290 * MS);
    cr_assert_leq(s.win_last, T0 + 300 * MS);
    cr_assert_eq(s.peak.value, 48 * MIB + 8 * MIB - 512);
    cr_assert_eq(s.peak.time_ns, T0 + 260 * MS);
    mh__plot_scan_free(&s);
    run_free(&b);
}

Test(plot_render, same_input_same_bytes)
{
    struct run b;
    basic_run(&b);
    struct mh__plot_opts o;
    small_opts(&o);
    struct mh__sink s1, s2;
    char err[256];
    mh__sink_init_mem(&s1);
    mh__sink_init_mem(&s2);
    cr_assert_eq(mh__plot_render(b.s, &o, &s1, NULL, err, sizeof err), 0);
    cr_assert_eq(mh__plot_render(b.s, &o, &s2, NULL, err, sizeof err), 0);
    cr_assert_eq(s1.len, s2.len);
    cr_assert_eq(memcmp(s1.buf, s2.buf, s1.len), 0);
    mh__sink_free(&s1);
    mh__sink_free(&s2);
    run_free(&b);
}

/* Golden images: compared byte for byte; MH_REGEN_GOLDEN=DIR writes them
 * into DIR instead (scripts/regen-golden.sh). */
static void golden(const char *name, struct run *b, const struct mh__plot_opts *o)
{
    struct mh__sink sink;
    char err[256], path[1024];
    mh__sink_init_mem(&sink);
    cr_assert_eq(mh__plot_render(b->s, o, &sink, NULL, err, sizeof err), 0, "%s", err);
    const char *regen = getenv("MH_REGEN_GOLDEN");
    snprintf(path, sizeof path, "%s/%s/%s", regen ? regen : MH_TEST_DATA_DIR,
             regen ? "" : "golden", name);
    if (regen) {
        FILE *fp = fopen(path, "wb");
        cr_assert(fp && fwrite(sink.buf, 1, sink.len, fp) == sink.len && fclose(fp) == 0);
    } else {
        FILE *fp = fopen(path, "rb");
        cr_assert(fp, "missing golden %s (run scripts/regen-golden.sh)", path);
        char *want = malloc(sink.len + 1);
        size_t n = fread(want, 1, sink.len + 1, fp);
        fclose(fp);
        cr_assert(n == sink.len && memcmp(want, sink.buf, n) == 0,
                  "%s differs from the rendering (%zu vs %zu bytes); if the change is intended, "
                  "run scripts/regen-golden.sh", path, n, sink.len);
        free(want);
    }
    mh__sink_free(&sink);
}

/* The CLI tests (tests/python/test_plot_cli.py) plot these same inputs. */
static void save_input(const char *name, struct run *b)
{
    const char *regen = getenv("MH_REGEN_GOLDEN");
    const void *data;
    size_t len;
    char path[1024];
    if (!regen)
        return;
    snprintf(path, sizeof path, "%s/%s", regen, name);
    cr_assert_eq(mh_writer_mem(b->w, &data, &len), 0);
    FILE *fp = fopen(path, "wb");
    cr_assert(fp && fwrite(data, 1, len, fp) == len && fclose(fp) == 0);
}

Test(plot_golden, timeline_basic)
{
    struct run b;
    basic_run(&b);
    save_input("basic.memhist", &b);
    struct mh__plot_opts o;
    small_opts(&o);
    golden("plot_timeline_basic.png", &b, &o);
    run_free(&b);
}

Test(plot_golden, segments_at_peak)
{
    struct run b;
    basic_run(&b);
    struct mh__plot_opts o;
    small_opts(&o);
    o.kind = MH__PLOT_SEGMENTS;
    golden("plot_segments_peak.png", &b, &o);
    run_free(&b);
}

Test(plot_golden, empty_file)
{
    struct run b;
    run_open(&b);
    run_close(&b);
    save_input("empty.memhist", &b);
    struct mh__plot_opts o;
    small_opts(&o);
    o.name = "empty.memhist";
    o.width = 640;
    o.height = 400;
    golden("plot_empty.png", &b, &o);
    run_free(&b);
}
