/* test_analysis_answers.c - the answers the commands print, computed in
 * src/analysis: the layers answer (layers ordered by what they hold at the
 * peak, the plan taken from the ranking with its estimate, and each reason
 * there can be no plan: no steps nor scopes, activations without scopes, no
 * saved activations), the device report (peaks, categories and groups at
 * the peak, the fragmentation trend and its what-if replay), the OOM cases of a device (each
 * OOM's state, verdict and checked suggestions), the diff of two runs (peaks, common steps, layers and
 * stacks matched by name and ordered by the size of their change), and the
 * step lookup by number. Recordings come from the simulator's GPT workload
 * and from events written here. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "device_report.h"
#include "diff.h"
#include "layers_answer.h"
#include "oom_explain.h"
#include "memhist/memhist.h"
#include "sim.h"
#include "workload.h"

struct mem_run {
    struct mh_writer *w;
    struct mh__analysis a;
};

static void open_written(struct mem_run *r, int peak_groups)
{
    const void *data;
    size_t len;
    const struct mh__analysis_want want = {peak_groups ? MH__WANT_WHATIF_TREND : 0, peak_groups,
                                          peak_groups};
    cr_assert_eq(mh_writer_close(r->w), 0);
    cr_assert_eq(mh_writer_mem(r->w, &data, &len), 0);
    cr_assert_eq(mh__analysis_open_mem(data, len, "run", &want, &r->a), 0);
}

static void simulate(const char *params, uint64_t steps, struct mem_run *r)
{
    const struct mh__workload *wl = mh__workload_find("gpt");
    int64_t values[MH__WORKLOAD_MAX_PARAMS];
    char err[128];
    struct mh_writer_opts wo = {.source = "simulated"};
    struct mh__sim_opts so;
    struct mh__sim *s;
    struct mh__workload_result res;
    memset(r, 0, sizeof *r);
    memset(&so, 0, sizeof so);
    cr_assert_eq(mh__workload_parse_params(wl, params, values, err, sizeof err), 0, "%s", err);
    cr_assert_eq(mh_writer_open_mem(&wo, &r->w), 0);
    so.writer = r->w;
    cr_assert_eq(mh__sim_new(&so, &s), 0);
    cr_assert_eq(mh__workload_run(wl, s, values, steps, 1, &res), 0);
    mh__sim_free(s);
    open_written(r, 1);
}

static void run_free(struct mem_run *r)
{
    mh__analysis_close(&r->a);
    mh_writer_free_mem(r->w);
}

#define GPT "layers=4,hidden=256,heads=4,seq=256,batch=%d,vocab=1000,seqvar=0"

static void gpt(int batch, uint64_t steps, struct mem_run *r)
{
    char params[128];
    snprintf(params, sizeof params, GPT, batch);
    simulate(params, steps, r);
}

Test(layers_answer, a_plan_from_the_ranking)
{
    struct mem_run r;
    gpt(4, 3, &r);
    struct mh__layers_answer ans;
    cr_assert_eq(mh__layers_answer(&r.a, 0, &ans), 0);
    struct mh_peak p;
    cr_assert_eq(mh_model_peak_allocated(r.a.rp.model, 0, &p), 0);
    cr_expect_eq(ans.peak, p.value);
    cr_assert_gt(ans.nlayers, 4);
    for (size_t i = 1; i < ans.nlayers; i++)
        cr_expect_geq(ans.layers[ans.by_live[i - 1]].live_at_peak,
                      ans.layers[ans.by_live[i]].live_at_peak, "largest first");
    cr_assert_gt(ans.best, 0, "the blocks' activations make a plan");
    cr_expect_eq(ans.none_because, MH__NO_PLAN_NONE);
    cr_expect_null(mh__no_plan_name(ans.none_because));
    cr_expect_eq(ans.plan_peak, ans.peak_after[ans.best - 1]);
    cr_expect_lt(ans.plan_peak, ans.peak);
    cr_expect(ans.recompute_share > 0 && ans.recompute_share <= 1.0, "%f", ans.recompute_share);
    uint64_t est;
    cr_assert_eq(mh__layers_estimate(ans.ly, ans.ranking, ans.best, &est), 0);
    cr_expect_eq(est, ans.plan_peak, "the estimate of the plan's layers is its peak");
    for (size_t k = 0; k < ans.nranking; k++)
        cr_expect(ans.layers[ans.ranking[k]].candidate, "ranking %zu is a candidate", k);
    cr_expect_gt(ans.nsteps, 0);
    for (size_t i = 0; i < ans.nsteps; i++) {
        uint64_t top = ans.steps[i].top_bytes[0];
        cr_expect_leq(top, ans.steps[i].bytes, "step %zu: a layer holds at most the step's peak", i);
        cr_expect_geq(top, ans.steps[i].top_bytes[1]);
    }
    mh__layers_answer_free(&ans);
    run_free(&r);
}

static void put(struct mh_writer *w, int kind, uint64_t t, uint64_t addr, uint64_t size, uint32_t aux)
{
    struct mh_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = (uint8_t)kind;
    ev.time_ns = 1000 + t;
    ev.addr = addr;
    ev.size = size;
    ev.aux = aux;
    ev.thread = 1;
    cr_assert_eq(mh_writer_event(w, &ev), 0);
}

/* Two steps of hand-made events: a block made before the steps, then per
 * step `fwd` blocks allocated in forward and freed in backward (kind 0),
 * or freed in forward (kind 1); with `steps` 0 there are no steps or
 * phases at all. */
static void hand_made(int steps, int freed_in_forward, struct mem_run *r)
{
    struct mh_writer_opts wo = {.source = "recorded"};
    const uint64_t seg = 0x100000;
    uint64_t t = 0;
    memset(r, 0, sizeof *r);
    cr_assert_eq(mh_writer_open_mem(&wo, &r->w), 0);
    put(r->w, MH_EV_SEGMENT_ALLOC, t++, seg, 20 << 20, 0);
    put(r->w, MH_EV_ALLOC, t++, seg, 1 << 20, 0);
    for (uint32_t s = 0; s < 2; s++) {
        if (steps) {
            put(r->w, MH_EV_STEP_BEGIN, t++, 0, 0, s);
            put(r->w, MH_EV_PHASE, t++, 0, 0, MH_PHASE_FORWARD);
        }
        for (uint64_t k = 1; k <= 4; k++) {
            put(r->w, MH_EV_ALLOC, t++, seg + k * (2 << 20), 2 << 20, 0);
            if (freed_in_forward)
                put(r->w, MH_EV_FREE_REQUESTED, t++, seg + k * (2 << 20), 2 << 20, 0);
        }
        if (steps)
            put(r->w, MH_EV_PHASE, t++, 0, 0, MH_PHASE_BACKWARD);
        for (uint64_t k = 1; k <= 4 && !freed_in_forward; k++)
            put(r->w, MH_EV_FREE_REQUESTED, t++, seg + k * (2 << 20), 2 << 20, 0);
        if (steps)
            put(r->w, MH_EV_STEP_END, t++, 0, 0, s);
    }
    open_written(r, 0);
}

static enum mh__no_plan reason_of(int steps, int freed_in_forward, uint64_t *bytes)
{
    struct mem_run r;
    struct mh__layers_answer ans;
    hand_made(steps, freed_in_forward, &r);
    cr_assert_eq(mh__layers_answer(&r.a, 0, &ans), 0);
    cr_expect_eq(ans.best, 0);
    enum mh__no_plan why = ans.none_because;
    *bytes = ans.none_bytes;
    cr_expect_not_null(mh__no_plan_name(why));
    mh__layers_answer_free(&ans);
    run_free(&r);
    return why;
}

Test(layers_answer, each_reason_for_no_plan)
{
    uint64_t bytes;
    cr_expect_eq(reason_of(0, 0, &bytes), MH__NO_PLAN_UNKNOWN, "no steps, no scopes");
    cr_expect_eq(bytes, 9u << 20, "all of the peak is unknown: %llu", (unsigned long long)bytes);
    cr_expect_eq(reason_of(1, 0, &bytes), MH__NO_PLAN_NO_SCOPES, "activations, no scopes");
    cr_expect_eq(bytes, 8u << 20, "the activations at the peak: %llu", (unsigned long long)bytes);
    cr_expect_eq(reason_of(1, 1, &bytes), MH__NO_PLAN_NOTHING, "temporaries only");
}

Test(diff, layers_and_stacks_matched_and_ordered_by_change)
{
    struct mem_run a, b;
    gpt(2, 3, &a);
    gpt(4, 2, &b);
    const struct mh__analysis *run[2] = {&a.a, &b.a};
    const int dev[2] = {-1, -1};
    struct mh__diff d;
    cr_assert_eq(mh__diff_runs(run, dev, &d), 0);
    cr_expect_lt(d.allocated[0].value, d.allocated[1].value, "a larger batch peaks higher");
    cr_expect_eq(d.steps_a, 3);
    cr_expect_eq(d.nsteps, 2, "the steps both runs have");
    for (size_t i = 0; i < d.nsteps; i++)
        cr_expect_eq(d.steps[i].step, (int64_t)i);
    cr_assert_gt(d.nlayers, 4);
    int blocks = 0;
    for (size_t i = 0; i < d.nlayers; i++) {
        if (strncmp(d.layers[i].name, "transformer.h.", 14) == 0) {
            blocks++;
            cr_expect(d.layers[i].a > 0 && d.layers[i].b > d.layers[i].a, "%s: %llu -> %llu",
                      d.layers[i].name, (unsigned long long)d.layers[i].a,
                      (unsigned long long)d.layers[i].b);
        }
        for (size_t k = 0; k < i; k++)
            cr_expect_neq(strcmp(d.layers[k].name, d.layers[i].name), 0, "%s twice",
                          d.layers[i].name);
    }
    cr_expect_eq(blocks, 4, "each block once, in both runs");
    for (size_t i = 1; i < d.nlayers; i++) {
        int64_t x = (int64_t)d.layers[i - 1].b - (int64_t)d.layers[i - 1].a;
        int64_t y = (int64_t)d.layers[i].b - (int64_t)d.layers[i].a;
        cr_expect_geq(llabs(x), llabs(y), "largest change first");
    }
    cr_assert_gt(d.nstacks, 0);
    size_t both = 0;
    for (size_t i = 0; i < d.nstacks; i++)
        both += d.stacks[i].a > 0 && d.stacks[i].b > 0;
    cr_expect_gt(both, d.nstacks / 2, "most stacks are found in both runs by their label");
    mh__diff_free(&d);
    run_free(&a);
    run_free(&b);
}

Test(step_find, by_number_or_not_found)
{
    struct mem_run r;
    gpt(2, 5, &r);
    struct mh_step_stats st;
    for (int64_t s = 0; s < 5; s++) {
        cr_assert_eq(mh__step_find(r.a.rp.model, 0, s, &st), 0, "step %lld", (long long)s);
        cr_expect_eq(st.step, s);
    }
    cr_expect_eq(mh__step_find(r.a.rp.model, 0, 5, &st), MH_ENOTFOUND);
    cr_expect_eq(mh__step_find(r.a.rp.model, 0, -1, &st), MH_ENOTFOUND);
    cr_expect_eq(mh__step_find(r.a.rp.model, 3, 0, &st), MH_ENOTFOUND, "no such device");
    run_free(&r);
}

Test(device_report, peaks_categories_groups_and_trend)
{
    struct mem_run r;
    gpt(4, 4, &r);
    struct mh__device_reports dr;
    cr_assert_eq(mh__device_reports(&r.a, -1, 5, &dr), 0);
    cr_assert_eq(dr.n, 1);
    const struct mh__device_report *d = &dr.devs[0];
    struct mh_peak pa, pr;
    cr_assert_eq(mh_model_peak_allocated(r.a.rp.model, 0, &pa), 0);
    cr_assert_eq(mh_model_peak_reserved(r.a.rp.model, 0, &pr), 0);
    cr_expect_eq(d->peak_allocated.value, pa.value);
    cr_expect_eq(d->peak_reserved.value, pr.value);
    uint64_t cats = 0, groups = 0;
    for (int k = 0; k < MH__CAT_COUNT; k++)
        cats += d->category_at_peak[k];
    cr_expect_eq(cats, pa.value, "the categories partition the peak");
    cr_expect_eq(d->live_at_peak_bytes, pa.value, "the groups hold the peak");
    cr_assert_gt(d->ntop, 0);
    cr_expect_leq(d->ntop, 5, "at most the groups asked for");
    for (size_t i = 0; i < d->ntop; i++) {
        groups += d->top[i].bytes;
        cr_expect(i == 0 || d->top[i - 1].bytes >= d->top[i].bytes, "largest first");
    }
    cr_expect_leq(groups, pa.value);
    cr_expect_eq(d->trend.steps, 4, "a trend over the run's steps");
    cr_expect_eq(d->ngrowth, 0, "nothing grows in a steady run");
    mh__device_reports_free(&dr);
    cr_expect_eq(mh__device_reports(&r.a, 3, 5, &dr), 0);
    cr_expect_eq(dr.n, 0, "a device the file lacks has no report");
    mh__device_reports_free(&dr);
    run_free(&r);
}

/* The simulator's default GPT varies its sequence length from step to step:
 * reserved memory grows while allocated does not, and the what-if replay
 * under expandable segments, checked by the replay under the recorded
 * settings, reserves less. Without the variation nothing fragments. */
Test(device_report, a_fragmenting_trend_and_its_checked_whatif)
{
    struct mem_run r;
    simulate("", 12, &r);
    struct mh__device_reports dr;
    cr_assert_eq(mh__device_reports(&r.a, 0, 3, &dr), 0);
    cr_assert_eq(dr.n, 1);
    const struct mh__frag_trend *t = &dr.devs[0].trend;
    struct mh_step_stats first;
    cr_assert_eq(mh_model_step(r.a.rp.model, 0, 0, &first), 0);
    cr_expect_eq(t->steps, 12);
    cr_expect_gt(t->reserved_growth, 2 * t->allocated_growth, "reserved outgrows allocated");
    cr_expect_gt((double)t->reserved_growth, 0.05 * (double)first.peak_reserved);
    cr_expect(t->fragmenting, "a fragmenting run");
    cr_expect(t->whatif_ok, "the what-if replay ran");
    cr_expect_lt(t->whatif_peak_reserved, dr.devs[0].peak_reserved.value,
                 "expandable segments reserve less");
    cr_expect(t->whatif_checked, "the replay under the recorded settings reproduces the run");
    cr_expect_gt(t->baseline_match, 99.0);
    mh__device_reports_free(&dr);
    run_free(&r);

    gpt(4, 6, &r);
    cr_assert_eq(mh__device_reports(&r.a, 0, 3, &dr), 0);
    t = &dr.devs[0].trend;
    cr_expect_eq(t->fragmenting, 0, "a steady run does not fragment");
    cr_expect(t->whatif_ok, "its what-if replay ran too");
    cr_expect_eq(t->whatif_checked, 0, "and is not checked: nothing to fix");
    mh__device_reports_free(&dr);
    run_free(&r);
}

/* A device of 64 MiB: 32 MiB reserved, 1 MiB allocated, then two OOMs
 * (96 MiB and 48 MiB asked for) with 16 MiB and 8 MiB free on the device. */
static void two_ooms(struct mem_run *r)
{
    struct mh_writer_opts wo = {.source = "recorded"};
    const uint64_t seg = 0x7f0000000000ull, mib = 1 << 20;
    memset(r, 0, sizeof *r);
    cr_assert_eq(mh_writer_open_mem(&wo, &r->w), 0);
    put(r->w, MH_EV_SEGMENT_ALLOC, 0, seg, 32 * mib, 0);
    put(r->w, MH_EV_ALLOC, 1, seg, mib, 0);
    put(r->w, MH_EV_OOM, 2, 16 * mib, 96 * mib, 0);
    put(r->w, MH_EV_ALLOC, 3, seg + 2 * mib, 2 * mib, 0);
    put(r->w, MH_EV_OOM, 4, 8 * mib, 48 * mib, 0);
    const void *data;
    size_t len;
    const struct mh__analysis_want want = {MH__WANT_WHATIF_OOM, 0, 0};
    cr_assert_eq(mh_writer_close(r->w), 0);
    cr_assert_eq(mh_writer_mem(r->w, &data, &len), 0);
    cr_assert_eq(mh__analysis_open_mem(data, len, "ooms", &want, &r->a), 0);
}

Test(oom_cases, each_oom_with_its_state_verdict_and_suggestions)
{
    struct mem_run r;
    two_ooms(&r);
    const struct mh__oom_opts o = {0, 0, 8};
    struct mh__oom_cases cs;
    cr_assert_eq(mh__oom_cases(&r.a, 0, &o, &cs), 0);
    cr_assert_eq(cs.n, 2);
    const uint64_t mib = 1 << 20, request[2] = {96 * mib, 48 * mib}, live[2] = {mib, 3 * mib};
    for (size_t i = 0; i < 2; i++) {
        const struct mh__oom_case *c = &cs.c[i];
        cr_expect_eq(c->oom.request, request[i], "case %zu: request %llu", i,
                     (unsigned long long)c->oom.request);
        cr_expect_eq(c->live_bytes, live[i], "case %zu: live at the OOM %llu", i,
                     (unsigned long long)c->live_bytes);
        cr_expect_eq(c->verdict, MH__OOM_VERDICT_EXHAUSTION, "case %zu: more than there is", i);
        cr_expect_eq(c->nsugg, 3, "case %zu: three settings", i);
        cr_expect(c->sugg[0].ok, "case %zu: expandable segments replayed", i);
        uint64_t free_bytes = 0;
        for (size_t k = 0; k < c->nfree; k++)
            free_bytes += c->free[k].total;
        cr_expect_eq(free_bytes, 32 * mib - live[i], "case %zu: free blocks of the segment", i);
    }
    cr_expect_eq(cs.c[0].sugg[0].peak_reserved, cs.c[1].sugg[0].peak_reserved,
                 "the cases share one replay of a setting");
    mh__oom_cases_free(&cs);
    const struct mh__oom_opts peak = {1, 0, 8};
    cr_assert_eq(mh__oom_cases(&r.a, 0, &peak, &cs), 0);
    cr_expect_eq(cs.n, 1, "--at peak explains the allocated peak");
    cr_expect_eq(cs.c[0].verdict, MH__OOM_VERDICT_NONE);
    mh__oom_cases_free(&cs);
    cr_assert_eq(mh__oom_cases(&r.a, 2, &o, &cs), 0);
    cr_expect_eq(cs.n, 0, "no case on a device without OOMs");
    run_free(&r);
}
