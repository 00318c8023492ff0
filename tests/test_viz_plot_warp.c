/* test_viz_plot_warp.c - the timeline's x axis mappings. The compressed
 * time axis (viz/plot/plot_warp.c): a long idle stretch before the steps
 * shrinks so the steps fill most of the width, busy stretches keep their
 * proportions, and axis values map back to real times. The events and steps
 * axes (viz/plot/plot_xmap.c): event i at value i whatever the time between
 * events, every step and the set-up one unit wide, all monotone. */
#include <criterion/criterion.h>
#include <string.h>

#include "plot_int.h"

#define MS 1000000ull

/* Memory events every millisecond over [from, to) ms, offered as the scan
 * offers them. */
static void activity(struct mh__plot_warp *w, uint64_t *last, uint64_t from, uint64_t to)
{
    for (uint64_t t = from; t < to; t++) {
        if (*last)
            mh__plot_warp_offer(w, *last, t * MS);
        *last = t * MS;
    }
}

Test(viz_plot_warp, a_long_idle_setup_gives_the_steps_most_of_the_axis)
{
    struct mh__plot_warp w;
    memset(&w, 0, sizeof w);
    uint64_t last = 0, t0 = 1 * MS;
    activity(&w, &last, 1, 50);      /* set-up allocations */
    activity(&w, &last, 2050, 2150); /* four steps after two idle seconds */
    mh__plot_warp_finish(&w, 2149 * MS - t0);
    cr_assert_eq(w.n, 1, "one idle stretch, not the 1 ms spacing of busy times");
    double total = mh__plot_warp(&w, t0, 2149 * MS);
    double steps = total - mh__plot_warp(&w, t0, 2050 * MS);
    cr_expect_gt(steps / total, 0.6, "steps take %.0f%% of the axis", 100 * steps / total);
    /* busy stretches keep their time scale */
    cr_expect_float_eq(mh__plot_warp(&w, t0, 40 * MS) - mh__plot_warp(&w, t0, 20 * MS),
                       20.0 * MS, 1e-6);
    /* values map back to real times, inside and outside the gap */
    for (uint64_t t = 10; t < 2149; t += 97) {
        double v = mh__plot_warp(&w, t0, t * MS);
        cr_expect_float_eq(mh__plot_unwarp(&w, t0, v), (double)(t * MS - t0), 1.0, "at %llu ms",
                           (unsigned long long)t);
    }
}

Test(viz_plot_warp, steady_activity_is_not_compressed)
{
    struct mh__plot_warp w;
    memset(&w, 0, sizeof w);
    uint64_t last = 0;
    activity(&w, &last, 1, 500);
    mh__plot_warp_finish(&w, 498 * MS);
    cr_expect_eq(w.n, 0);
    cr_expect_float_eq(mh__plot_warp(&w, 1 * MS, 300 * MS), 299.0 * MS, 1e-6);
}

/* ---- --x events and --x steps (viz/plot/plot_xmap.c) ---------------------- */

/* Values at increasing times never go back. */
static void expect_monotone(const struct mh__plot_warp *w, uint64_t from, uint64_t to,
                            uint64_t step)
{
    double prev = mh__plot_warp(w, from, from);
    for (uint64_t t = from; t <= to; t += step) {
        double v = mh__plot_warp(w, from, t);
        cr_expect_geq(v, prev, "the axis goes back at t=%llu", (unsigned long long)t);
        prev = v;
    }
}

Test(viz_plot_xmap, events_sit_at_their_ordinal_whatever_the_time_between_them)
{
    struct mh__plot_warp w;
    memset(&w, 0, sizeof w);
    /* bursts of events 1 us apart, with idle seconds between the bursts */
    uint64_t t = 5 * MS, n = 0, times[30000];
    for (int burst = 0; burst < 3; burst++, t += 2000 * MS)
        for (int i = 0; i < 10000; i++, n++) {
            times[n] = t + (uint64_t)i * 1000;
            cr_assert_eq(mh__plot_xmap_event(&w, times[n], n), 0);
        }
    cr_assert_eq(mh__plot_xmap_events_finish(&w, 1 * MS, times[n - 1] + 10 * MS), 0);
    cr_assert_eq(w.mode, MH__PLOT_X_EVENTS);
    cr_expect_leq(w.nk, MH__PLOT_EVENT_KNOTS + 3, "the knots stay bounded (%zu)", w.nk);
    for (uint64_t i = 0; i < n; i += 997)
        cr_expect_float_eq(mh__plot_warp(&w, 0, times[i]), (double)i, 1e-6, "event %llu",
                           (unsigned long long)i);
    /* each burst is a third of the axis although the idle time is 99 % of the run */
    double total = mh__plot_warp(&w, 0, times[n - 1]);
    double first = mh__plot_warp(&w, 0, times[9999]) - mh__plot_warp(&w, 0, times[0]);
    cr_expect_float_eq(first / total, 1.0 / 3, 0.01);
    expect_monotone(&w, 0, times[n - 1] + 20 * MS, 37 * MS / 10);
    /* the window's start before the first event maps to 0; back from values to times */
    cr_expect_float_eq(mh__plot_warp(&w, 0, 1 * MS), 0.0, 1e-9);
    cr_expect_float_eq(mh__plot_unwarp(&w, 0, 15000.0), (double)times[15000], 1.0);
    mh__plot_xmap_free(&w);
}

Test(viz_plot_xmap, one_event_is_not_an_events_axis)
{
    struct mh__plot_warp w;
    memset(&w, 0, sizeof w);
    cr_assert_eq(mh__plot_xmap_event(&w, 7 * MS, 0), 0);
    cr_assert_eq(mh__plot_xmap_events_finish(&w, 1 * MS, 9 * MS), 0);
    cr_expect_eq(w.nk, 0);
    cr_expect_float_eq(mh__plot_warp(&w, 1 * MS, 5 * MS), 4.0 * MS, 1e-6, "plain time");
    mh__plot_xmap_free(&w);
}

static void apply(struct mh_model *m, int kind, uint64_t t_ms, uint64_t addr, uint64_t size,
                  uint32_t aux)
{
    struct mh_event e;
    memset(&e, 0, sizeof e);
    e.time_ns = t_ms * MS;
    e.kind = (uint8_t)kind;
    e.addr = addr;
    e.size = size;
    e.aux = aux;
    e.device = (int16_t)(kind == MH_EV_STEP_BEGIN || kind == MH_EV_STEP_END ? -1 : 0);
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
}

/* A run with a long set-up and steps of very different lengths. */
static struct mh_model *uneven_steps(void)
{
    struct mh_model *m;
    cr_assert_eq(mh_model_new(NULL, &m), 0);
    apply(m, MH_EV_SEGMENT_ALLOC, 1, 0x1000000, 64 << 20, 0);
    apply(m, MH_EV_ALLOC, 2, 0x1000000, 1 << 20, 0);
    static const uint64_t begin[] = {3000, 3010, 3500, 3520, 9000};
    for (uint32_t s = 0; s < 5; s++) {
        apply(m, MH_EV_STEP_BEGIN, begin[s], 0, 0, s);
        apply(m, MH_EV_ALLOC, begin[s] + 1, 0x1100000, 1 << 20, 0);
        apply(m, MH_EV_FREE_COMPLETED, begin[s] + 2, 0x1100000, 1 << 20, 0);
    }
    apply(m, MH_EV_FREE_COMPLETED, 9900, 0x1000000, 1 << 20, 0);
    mh_model_finish(m);
    return m;
}

Test(viz_plot_xmap, every_step_and_the_setup_get_the_same_width)
{
    struct mh_model *m = uneven_steps();
    struct mh__plot_warp w;
    memset(&w, 0, sizeof w);
    cr_assert_eq(mh__plot_xmap_steps(&w, m, 0, 1 * MS, 9900 * MS), 0);
    cr_assert_eq(w.mode, MH__PLOT_X_STEPS);
    cr_assert_eq(w.nk, 7, "setup, five steps and the end: %zu knots", w.nk);
    cr_expect_eq(w.kstep[0], -1, "the first piece is the setup");
    static const uint64_t bounds[] = {1, 3000, 3010, 3500, 3520, 9000, 9900};
    for (int i = 0; i < 7; i++)
        cr_expect_float_eq(mh__plot_warp(&w, MS, bounds[i] * MS), (double)i, 1e-9,
                           "boundary %d at value %d", i, i);
    for (int i = 1; i < 6; i++)
        cr_expect_eq(w.kstep[i], i - 1);
    /* half-way through a piece is half-way through its unit */
    cr_expect_float_eq(mh__plot_warp(&w, MS, 3005 * MS), 1.5, 1e-9);
    cr_expect_float_eq(mh__plot_warp(&w, MS, 6260 * MS), 4.5, 1e-9);
    expect_monotone(&w, MS, 9950 * MS, 3 * MS);
    mh__plot_xmap_free(&w);
    mh_model_free(m);
}

Test(viz_plot_xmap, a_window_inside_one_step_is_a_time_axis)
{
    struct mh_model *m = uneven_steps();
    struct mh__plot_warp w;
    memset(&w, 0, sizeof w);
    cr_assert_eq(mh__plot_xmap_steps(&w, m, 0, 5000 * MS, 8000 * MS), 0);
    cr_expect_eq(w.nk, 0);
    cr_expect_eq(w.mode, MH__PLOT_X_TIME);
    mh__plot_xmap_free(&w);
    mh_model_free(m);
}

/* A set-up of three seconds before steps of a few ms (uneven_steps): the
 * compressed axis draws it at the scale that gives it a fifth of the width;
 * the steps keep their own scale, and the map stays monotone. */
Test(viz_plot_xmap, a_long_setup_takes_a_fifth_of_the_compressed_axis)
{
    struct mh_model *m = uneven_steps();
    struct mh__plot_warp w;
    memset(&w, 0, sizeof w);
    cr_assert_eq(mh__plot_xmap_squeeze_setup(&w, m, 0, MS, MS, 9900 * MS), 0);
    cr_assert(w.nk > 0, "knots drawn");
    cr_expect(w.setup_scale > 0 && w.setup_scale < 1, "scale %f", w.setup_scale);
    double setup = mh__plot_warp(&w, MS, 3000 * MS) - mh__plot_warp(&w, MS, MS);
    double total = mh__plot_warp(&w, MS, 9900 * MS) - mh__plot_warp(&w, MS, MS);
    cr_expect_float_eq(setup / total, MH__PLOT_SETUP_SHARE, 1e-6, "setup share %f", setup / total);
    cr_expect_float_eq(mh__plot_warp(&w, MS, 3520 * MS) - mh__plot_warp(&w, MS, 3500 * MS),
                       20.0 * MS, 1e-3, "a step keeps its real length");
    expect_monotone(&w, MS, 9950 * MS, 3 * MS);
    mh__plot_xmap_free(&w);
    mh_model_free(m);
}

Test(viz_plot_xmap, a_short_setup_is_left_as_it_is)
{
    struct mh_model *m = uneven_steps();
    struct mh__plot_warp w;
    memset(&w, 0, sizeof w);
    /* from 2.9 s the set-up is 0.1 s of the 7 s window */
    cr_assert_eq(mh__plot_xmap_squeeze_setup(&w, m, 0, 2900 * MS, 2900 * MS, 9900 * MS), 0);
    cr_expect_eq(w.nk, 0);
    cr_expect_float_eq(w.setup_scale, 1.0, 1e-12);
    mh_model_free(m);
}
