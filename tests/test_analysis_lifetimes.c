/* test_analysis_lifetimes.c - the lifetimes of a pass hold the live
 * allocations, not the run: the records the first pass keeps at each
 * device's allocated peak equal those a second pass keeps there, with the
 * same categories; every record a later pass hands out at its end is
 * classified as the first pass's facts say; the records kept at a moment
 * are exactly those live there; the kept records of a first step found to
 * be set-up (a STEP_BEGIN of the step the model already counted) are made
 * set-up too; records gathered by riding another analysis's pass (the
 * layers', one full pass) equal those of a pass of their own; and what the
 * first pass keeps follows the live set at the peak, not the number of
 * allocations of the run. Recordings come
 * from the simulator's GPT workload and from events written here. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "layers_answer.h"
#include "memhist/memhist.h"
#include "session.h"
#include "sim.h"
#include "workload.h"

struct mem_run {
    struct mh_writer *w;
    struct mh__analysis a;
};

static void open_written(struct mem_run *r)
{
    const void *data;
    size_t len;
    cr_assert_eq(mh_writer_close(r->w), 0);
    cr_assert_eq(mh_writer_mem(r->w, &data, &len), 0);
    cr_assert_eq(mh__analysis_open_mem(data, len, "run", NULL, &r->a), 0);
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
    open_written(r);
}

static void run_free(struct mem_run *r)
{
    mh__analysis_close(&r->a);
    mh_writer_free_mem(r->w);
}

#define SMALL "layers=2,hidden=256,heads=4,seq=256,batch=2,vocab=1000,seqvar=30"

/* The kept records of two collections are the same, field by field. */
static void expect_same_records(const struct mh__lifetimes *x, const struct mh__lifetimes *y)
{
    size_t nx, ny;
    const struct mh__alloc_rec *rx = mh__lifetimes_records(x, &nx),
                               *ry = mh__lifetimes_records(y, &ny);
    cr_assert_eq(nx, ny, "%zu records kept, %zu by the second pass", nx, ny);
    cr_assert_gt(nx, 0);
    for (size_t i = 0; i < nx; i++) {
        cr_expect_eq(rx[i].alloc_index, ry[i].alloc_index, "record %zu", i);
        cr_expect_eq(rx[i].free_index, ry[i].free_index, "record %zu", i);
        cr_expect_eq(rx[i].size, ry[i].size, "record %zu", i);
        cr_expect_eq(rx[i].category, ry[i].category, "record %zu: category %d, then %d", i,
                     rx[i].category, ry[i].category);
    }
}

Test(lifetimes, first_pass_peak_records_equal_a_second_pass)
{
    struct mem_run r;
    simulate(SMALL, 12, &r);
    struct mh_peak p;
    cr_assert_eq(mh_model_peak_allocated(r.a.rp.model, 0, &p), 0);
    struct mh__life_curve c;
    mh__lifetimes_curve(r.a.lt, 0, &c);
    cr_expect_eq(c.peak, p.value, "the curve's peak is the model's");
    cr_expect_eq(c.peak_index, p.event_index);
    cr_assert(mh__lifetimes_holds(r.a.lt, p.event_index), "the first pass kept the peak");
    cr_expect_not(mh__lifetimes_holds(r.a.lt, p.event_index - 1), "and nothing else");
    struct mh__lifetimes *again;
    cr_assert_eq(mh__analysis_moments(&r.a, &p.event_index, 1, &again), 0);
    expect_same_records(r.a.lt, again);
    uint64_t a[MH__CAT_COUNT], b[MH__CAT_COUNT], total = 0;
    cr_assert_eq(mh__lifetimes_live_by_category(r.a.lt, 0, p.event_index, a, NULL), 0);
    cr_assert_eq(mh__lifetimes_live_by_category(again, 0, p.event_index, b, NULL), 0);
    for (int k = 0; k < MH__CAT_COUNT; k++) {
        cr_expect_eq(a[k], b[k], "%s", mh__category_name(k));
        total += a[k];
    }
    cr_expect_eq(total, p.value, "the kept records hold the peak");
    cr_expect_eq(mh__lifetimes_live_by_category(again, 0, p.event_index - 1, b, NULL), MH_EINVAL,
                 "a moment not kept is refused");
    mh__lifetimes_free(again);
    run_free(&r);
}

/* Each record at its end, and the records live at a moment, from a
 * later pass. */
struct check {
    uint64_t moment, live_at_moment, records, live_bytes;
};

static int count_record(void *user, const struct mh__alloc_rec *rec)
{
    struct check *c = user;
    c->records++;
    if (mh__alloc_rec_live_at(rec, c->moment)) {
        c->live_at_moment++;
        c->live_bytes += rec->size;
    }
    return 0;
}

Test(lifetimes, kept_moment_holds_exactly_the_live_records)
{
    struct mem_run r;
    simulate(SMALL, 6, &r);
    uint64_t moment = mh__lifetimes_event_count(r.a.lt) / 2;
    struct check c = {moment, 0, 0, 0};
    cr_assert_eq(mh__analysis_each_record(&r.a, count_record, &c), 0);
    cr_assert_gt(c.records, c.live_at_moment);
    struct mh__lifetimes *kept;
    cr_assert_eq(mh__analysis_moments(&r.a, &moment, 1, &kept), 0);
    size_t n;
    const struct mh__alloc_rec *rec = mh__lifetimes_records(kept, &n);
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        cr_expect(mh__alloc_rec_live_at(&rec[i], moment));
        cr_expect(i == 0 || rec[i - 1].alloc_index < rec[i].alloc_index, "allocation order");
        bytes += rec[i].size;
    }
    cr_expect_eq(n, c.live_at_moment, "kept %zu, live %llu", n,
                 (unsigned long long)c.live_at_moment);
    cr_expect_eq(bytes, c.live_bytes);
    mh__lifetimes_free(kept);
    run_free(&r);
}

Test(lifetimes, moments_riding_the_layers_pass_equal_their_own_pass)
{
    struct mem_run r;
    simulate(SMALL, 6, &r);
    uint64_t moments[2] = {mh__lifetimes_event_count(r.a.lt) / 3,
                           mh__lifetimes_event_count(r.a.lt) / 2};
    struct mh__lifetimes *rode, *own;
    struct mh__observer obs;
    cr_assert_eq(mh__analysis_moments_observer(&r.a, moments, 2, &rode, &obs), 0);
    cr_assert_eq(mh__session_observe(r.a.session, &obs), 0);
    unsigned passes = mh__session_passes(r.a.session);
    struct mh__layers_answer la;
    cr_assert_eq(mh__layers_answer(&r.a, 0, &la), 0);
    cr_assert_eq(mh__session_passes(r.a.session), passes + 1, "the layers make one pass");
    mh__session_forget(r.a.session);
    cr_assert_eq(mh__analysis_moments(&r.a, moments, 2, &own), 0);
    expect_same_records(rode, own);
    for (int k = 0; k < 2; k++) {
        uint64_t a[MH__CAT_COUNT], b[MH__CAT_COUNT];
        cr_assert_eq(mh__lifetimes_live_by_category(rode, 0, moments[k], a, NULL), 0);
        cr_assert_eq(mh__lifetimes_live_by_category(own, 0, moments[k], b, NULL), 0);
        cr_expect_arr_eq(a, b, sizeof a, "moment %d", k);
    }
    mh__layers_answer_free(&la);
    mh__lifetimes_free(rode);
    mh__lifetimes_free(own);
    run_free(&r);
}

/* Records kept at the peak and records of the whole run, after `steps`. */
static void counts_for(uint64_t steps, size_t *kept, uint64_t *records)
{
    struct mem_run r;
    simulate(SMALL, steps, &r);
    struct check c = {0, 0, 0, 0};
    cr_assert_eq(mh__analysis_each_record(&r.a, count_record, &c), 0);
    mh__lifetimes_records(r.a.lt, kept);
    *records = c.records;
    run_free(&r);
}

Test(lifetimes, kept_records_follow_the_live_set_not_the_run)
{
    size_t kept4, kept16;
    uint64_t all4, all16;
    counts_for(4, &kept4, &all4);
    counts_for(16, &kept16, &all16);
    cr_expect_gt(all16, 3 * all4, "the run has %llu allocations after 16 steps, %llu after 4",
                 (unsigned long long)all16, (unsigned long long)all4);
    cr_expect_lt(kept4, all4 / 2);
    cr_expect_leq(kept16, kept4 + kept4 / 4,
                  "records kept at the peak: %zu after 4 steps, %zu after 16", kept4, kept16);
}

/* Records handed out by a later pass; those made before event 5 must be
 * set-up. */
struct early {
    uint64_t records, not_setup;
};

static int note_early(void *user, const struct mh__alloc_rec *rec)
{
    struct early *e = user;
    e->records++;
    e->not_setup += rec->alloc_index < 5 && rec->alloc_step != -1;
    return 0;
}

static void put(struct mh_writer *w, int kind, uint64_t t, uint64_t addr, uint64_t size,
                uint32_t aux)
{
    struct mh_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = (uint8_t)kind;
    ev.time_ns = 1000 + t;
    ev.addr = addr;
    ev.size = size;
    ev.aux = aux;
    cr_assert_eq(mh_writer_event(w, &ev), 0);
}

Test(lifetimes, a_first_step_found_to_be_setup_makes_its_records_setup)
{
    struct mem_run r;
    struct mh_writer_opts wo = {.source = "recorded"};
    const uint64_t seg = 0x100000;
    memset(&r, 0, sizeof r);
    cr_assert_eq(mh_writer_open_mem(&wo, &r.w), 0);
    put(r.w, MH_EV_SEGMENT_ALLOC, 0, seg, 2 << 20, 0);
    put(r.w, MH_EV_STEP_END, 1, 0, 0, 0);   /* the model counts step 1 from here */
    put(r.w, MH_EV_ALLOC, 2, seg, 4096, 0); /* freed before the step is found set-up */
    put(r.w, MH_EV_ALLOC, 3, seg + 4096, 8192, 0);
    put(r.w, MH_EV_FREE_REQUESTED, 4, seg, 4096, 0);
    put(r.w, MH_EV_STEP_BEGIN, 5, 0, 0, 1); /* step 1 begins: before was set-up */
    put(r.w, MH_EV_PHASE, 6, 0, 0, MH_PHASE_FORWARD);
    put(r.w, MH_EV_ALLOC, 7, seg + 12288, 4096, 0);
    open_written(&r);
    struct early e = {0, 0};
    cr_assert_eq(mh__analysis_each_record(&r.a, note_early, &e), 0);
    cr_expect_eq(e.records, 3);
    cr_expect_eq(e.not_setup, 0, "a record made before the STEP_BEGIN is not set-up");
    uint64_t at = 3; /* after the second allocation: both early blocks live */
    struct mh__lifetimes *kept;
    cr_assert_eq(mh__analysis_moments(&r.a, &at, 1, &kept), 0);
    size_t n;
    const struct mh__alloc_rec *rec = mh__lifetimes_records(kept, &n);
    cr_assert_eq(n, 2);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(rec[i].alloc_step, -1, "record %zu: made before the first step", i);
    mh__lifetimes_free(kept);
    run_free(&r);
}
