/* test_viz_plot_warp.c - the timeline's compressed time axis
 * (viz/plot/plot_warp.c): a long idle stretch before the steps shrinks so
 * the steps fill most of the width, busy stretches keep their proportions,
 * and axis values map back to real times. */
#include <criterion/criterion.h>
#include <string.h>

#include "plot_internal.h"

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
