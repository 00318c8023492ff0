/* test_viz_plot_worst.c - one rule names the worst rank of a job: the rank
 * table (src/analysis/job_ranks.h) and the plot of the same files, as
 * timeline panels and as a heat map, name the same file when a process a
 * rank started (a helper) reserves more than every rank; when every file is
 * a helper the largest of them is the worst. Rank files are written here,
 * three steps each. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "job_ranks.h"
#include "plot.h"
#include "sink.h"
#include "test_viz_plot_util.h"

/* A rank file reserving `seg_mib` in each of three steps. */
static void rank_file(struct run *b, const char *rank, const char *role, uint64_t seg_mib,
                      struct mh__analysis *a)
{
    struct mh_writer_opts wo = {.source = "recorded"};
    memset(b, 0, sizeof *b);
    cr_assert_eq(mh_writer_open_mem(&wo, &b->w), 0);
    cr_assert_eq(mh_writer_set_meta(b->w, "rank", rank), 0);
    cr_assert_eq(mh_writer_set_meta(b->w, "rank_process", role), 0);
    const uint64_t seg = 0x7f0000000000ull;
    ev(b, MH_EV_SEGMENT_ALLOC, 0, seg, seg_mib * MIB, 0, 0);
    for (uint32_t s = 0; s < 3; s++) {
        uint64_t t = 10 + 10 * s;
        ev(b, MH_EV_STEP_BEGIN, t, 0, 0, 0, s);
        ev(b, MH_EV_ALLOC, t + 1, seg, MIB, 0, 0);
        ev(b, MH_EV_FREE_REQUESTED, t + 2, seg, MIB, 0, 0);
        ev(b, MH_EV_FREE_COMPLETED, t + 3, seg, MIB, 0, 0);
        ev(b, MH_EV_STEP_END, t + 4, 0, 0, 0, s);
    }
    run_close(b);
    const void *data;
    size_t len;
    cr_assert_eq(mh_writer_mem(b->w, &data, &len), 0);
    cr_assert_eq(mh__analysis_open_mem(data, len, rank, NULL, a), 0);
}

/* The worst file by the rank table and by the plot (`heat`: as a heat map). */
static void worst_of(const char *const *roles, const uint64_t *mib, size_t n, size_t *table,
                     size_t *plot, int heat)
{
    struct run b[4];
    struct mh__analysis a[4];
    struct mh__rank_row rows[4];
    struct mh__session *rd[4];
    const char *names[4] = {"job.rank0", "job.rank0.pid9", "job.rank1", "job.rank2"};
    char rank[4][8];
    for (size_t i = 0; i < n; i++) {
        snprintf(rank[i], sizeof rank[i], "%zu", i == 1 ? (size_t)0 : i);
        rank_file(&b[i], rank[i], roles[i], mib[i], &a[i]);
        mh__rank_row_fill(&a[i], &rows[i]);
        rd[i] = b[i].s;
    }
    struct mh__job_spread s;
    mh__job_spread(rows, n, &s);
    *table = s.max;
    struct mh__plot_opts o;
    memset(&o, 0, sizeof o);
    o.ranks_view = heat ? MH__PLOT_RANKS_HEATMAP : MH__PLOT_RANKS_PANELS;
    struct mh__plot_result res[4];
    struct mh__sink sink;
    char err[256];
    mh__sink_init_mem(&sink);
    cr_assert_eq(mh__plot_render_ranks(rd, names, n, &o, &sink, res, err, sizeof err), 0, "%s", err);
    mh__sink_free(&sink);
    *plot = n;
    for (size_t i = 0; i < n; i++)
        if (res[i].worst) {
            cr_expect_eq(*plot, n, "one worst rank");
            *plot = i;
        }
    for (size_t i = 0; i < n; i++) {
        mh__analysis_close(&a[i]);
        run_free(&b[i]);
    }
}

Test(plot_worst, a_helper_reserving_most_is_not_the_worst_rank)
{
    const char *roles[] = {"main", "helper", "main", "main"};
    const uint64_t mib[] = {20, 64, 40, 30};
    for (int heat = 0; heat < 2; heat++) {
        size_t table, plot;
        worst_of(roles, mib, 4, &table, &plot, heat);
        cr_expect_eq(table, 2, "the rank table names rank 1 (%s), not the helper", heat ? "heat" : "panels");
        cr_expect_eq(plot, table, "the plot (%s) names file %zu, the table %zu",
                     heat ? "heat map" : "panels", plot, table);
    }
}

Test(plot_worst, among_helpers_only_the_largest)
{
    const char *roles[] = {"helper", "helper", "helper"};
    const uint64_t mib[] = {20, 64, 40};
    size_t table, plot;
    worst_of(roles, mib, 3, &table, &plot, 0);
    cr_expect_eq(table, 1);
    cr_expect_eq(plot, 1);
    const uint64_t reserved[] = {5, 9, 9, 2};
    const uint8_t helper[] = {0, 1, 0, 0};
    cr_expect_eq(mh__job_worst(reserved, helper, 4), 2, "the first of the ranks' own largest");
    cr_expect_eq(mh__job_worst(reserved, NULL, 4), 1, "no helpers: the first of the largest");
    cr_expect_eq(mh__job_worst(reserved, helper, 0), 0, "no files");
}
