/* test_sim_workload.c - the built-in workloads end to end: determinism for a
 * seed, OOM exactly when the device is too small, expandable segments
 * against fragmentation, and simulated files replayed through the model
 * (zero anomalies, the model's counters equal the simulator's). */
#include <criterion/criterion.h>
#include <string.h>

#include "memhist/memhist.h"
#include "sim.h"
#include "workload.h"

#define SMALL_GPT "layers=2,hidden=256,heads=4,seq=256,batch=4,vocab=4000"

struct digest {
    uint64_t h, n, last_alloc_kind;
};

static int hash_event(void *user, const struct mh_event *e)
{
    struct digest *d = user;
    uint64_t v[5] = {e->kind, e->addr, e->size, e->time_ns, e->stack};
    for (int i = 0; i < 5; i++)
        d->h = (d->h ^ v[i]) * 0x100000001b3ull;
    d->n++;
    if (e->kind <= MH_EV_OOM)
        d->last_alloc_kind = e->kind;
    return 0;
}

static int run(const char *wname, const char *params, const char *conf, uint64_t capacity,
               uint64_t steps, uint64_t seed, struct mh_writer *w, struct digest *d,
               struct mh__workload_result *res, struct mh__sim_stats *st)
{
    const struct mh__workload *wl = mh__workload_find(wname);
    cr_assert_not_null(wl);
    int64_t values[MH__WORKLOAD_MAX_PARAMS];
    char err[128];
    cr_assert_eq(mh__workload_parse_params(wl, params, values, err, sizeof err), 0, "%s", err);
    struct mh__sim_opts o;
    memset(&o, 0, sizeof o);
    cr_assert_eq(mh_alloc_conf_parse(conf, &o.conf, err, sizeof err), 0);
    o.capacity = capacity;
    o.writer = w;
    if (d) {
        memset(d, 0, sizeof *d);
        d->h = 0xcbf29ce484222325ull;
        o.emit = hash_event;
        o.emit_user = d;
    }
    struct mh__sim *s;
    cr_assert_eq(mh__sim_new(&o, &s), 0);
    int rc = mh__workload_run(wl, s, values, steps, seed, res);
    if (st)
        mh__sim_stats(s, st);
    mh__sim_free(s);
    return rc;
}

Test(sim_workload, deterministic_for_a_seed)
{
    struct digest a, b, c;
    struct mh__workload_result r;
    cr_assert_eq(run("gpt", SMALL_GPT ",seqvar=60", "", 0, 6, 7, NULL, &a, &r, NULL), 0);
    cr_assert_eq(run("gpt", SMALL_GPT ",seqvar=60", "", 0, 6, 7, NULL, &b, &r, NULL), 0);
    cr_assert_eq(run("gpt", SMALL_GPT ",seqvar=60", "", 0, 6, 8, NULL, &c, &r, NULL), 0);
    cr_expect_eq(a.h, b.h);
    cr_expect_eq(a.n, b.n);
    cr_expect_neq(a.h, c.h, "another seed gives other sequence lengths");
    cr_expect_eq(r.steps_done, 6);
}

Test(sim_workload, oom_when_and_only_when_too_small)
{
    struct mh__workload_result r;
    struct mh__sim_stats st;
    struct digest d;
    cr_assert_eq(run("gpt", SMALL_GPT, "", 0, 3, 1, NULL, &d, &r, &st), 0);
    cr_expect_eq(r.oom, 0);
    uint64_t peak = st.peak_reserved;
    cr_assert_eq(run("gpt", SMALL_GPT, "", peak, 3, 1, NULL, &d, &r, &st), 0);
    cr_expect_eq(r.oom, 0, "exactly the peak fits");
    cr_expect_eq(r.steps_done, 3);
    cr_assert_eq(run("gpt", SMALL_GPT, "", peak / 2, 3, 1, NULL, &d, &r, &st), 0);
    cr_expect_eq(r.oom, 1);
    cr_expect_eq(st.ooms, 1);
    cr_expect_eq(d.last_alloc_kind, MH_EV_OOM, "the run stops at the OOM");
    cr_expect_lt(r.steps_done, 3);
    cr_assert_eq(run("resnet", "depth=18,batch=8,image=64", "", 1ull << 20, 2, 1, NULL, &d, &r,
                     &st), 0);
    cr_expect_eq(r.oom, 1);
}

Test(sim_workload, expandable_segments_lower_peak_reserved)
{
    struct mh__workload_result r;
    struct mh__sim_stats plain, exp;
    const char *p = "layers=4,hidden=512,heads=8,seq=512,batch=8,vocab=8000,seqvar=50";
    cr_assert_eq(run("gpt", p, "", 0, 8, 3, NULL, NULL, &r, &plain), 0);
    cr_assert_eq(run("gpt", p, "expandable_segments:True", 0, 8, 3, NULL, NULL, &r, &exp), 0);
    cr_expect_gt(plain.peak_reserved, plain.peak_allocated * 11 / 10, "the workload fragments");
    cr_expect_lt(exp.peak_reserved, plain.peak_reserved);
}

static void check_through_model(const char *wname, const char *params, const char *conf,
                                uint64_t capacity)
{
    struct mh_writer *w;
    struct mh_writer_opts wo = {.source = "simulated"};
    struct mh__workload_result r;
    struct mh__sim_stats st;
    cr_assert_eq(mh_writer_open_mem(&wo, &w), 0);
    cr_assert_eq(mh_writer_set_meta(w, "alloc_conf", conf), 0);
    cr_assert_eq(run(wname, params, conf, capacity, 3, 1, w, NULL, &r, &st), 0);
    cr_assert_eq(mh_writer_close(w), 0);
    const void *data;
    size_t len;
    cr_assert_eq(mh_writer_mem(w, &data, &len), 0);
    struct mh_reader *rd;
    cr_assert_eq(mh_reader_open_mem(data, len, &rd), 0);
    struct mh_model_opts mo;
    memset(&mo, 0, sizeof mo);
    cr_assert_eq(mh_alloc_conf_parse(conf, &mo.conf, NULL, 0), 0);
    struct mh_model *m;
    cr_assert_eq(mh_model_new(&mo, &m), 0);
    struct mh_event e;
    int rc;
    while ((rc = mh_reader_next(rd, &e)) == 1)
        cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    cr_assert_eq(rc, 0, "%s", mh_reader_errmsg(rd));
    cr_expect_str_eq(mh_reader_meta(rd, "source"), "simulated");
    mh_model_finish(m);
    for (int a = 1; a < MH_ANOM_COUNT; a++)
        cr_expect_eq(mh_model_anomaly_count(m, a), 0, "%s: %s", wname, mh_anomaly_name(a));
    struct mh_mem_stats ms;
    struct mh_peak pa, pr;
    cr_assert_eq(mh_model_stats(m, 0, &ms), 0);
    cr_assert_eq(mh_model_peak_allocated(m, 0, &pa), 0);
    cr_assert_eq(mh_model_peak_reserved(m, 0, &pr), 0);
    cr_expect_eq(ms.allocated, st.allocated);
    cr_expect_eq(ms.reserved, st.reserved);
    cr_expect_eq(ms.active, st.active);
    cr_expect_eq(pa.value, st.peak_allocated);
    cr_expect_eq(pr.value, st.peak_reserved);
    cr_expect_eq(ms.segment_allocs + ms.maps, st.segment_allocs + st.maps);
    cr_expect_eq(ms.ooms, st.ooms);
    cr_expect_geq(mh_model_step_count(m, 0), 1);
    mh_model_free(m);
    mh_reader_close(rd);
    mh_writer_free_mem(w);
}

Test(sim_workload, model_agrees_with_simulator)
{
    check_through_model("gpt", SMALL_GPT, "", 0);
    check_through_model("gpt", SMALL_GPT ",flash=0", "expandable_segments:True", 0);
    check_through_model("gpt", SMALL_GPT, "max_split_size_mb:20,roundup_power2_divisions:4", 0);
    check_through_model("resnet", "depth=18,batch=8,image=64", "", 0);
}

Test(sim_workload, bad_parameters_are_named)
{
    const struct mh__workload *wl = mh__workload_find("gpt");
    int64_t v[MH__WORKLOAD_MAX_PARAMS];
    char err[128];
    cr_expect_neq(mh__workload_parse_params(wl, "layerz=3", v, err, sizeof err), 0);
    cr_expect(strstr(err, "layerz") != NULL, "%s", err);
    cr_expect_neq(mh__workload_parse_params(wl, "layers=x", v, err, sizeof err), 0);
    cr_expect(strstr(err, "layers") != NULL, "%s", err);
    cr_expect_null(mh__workload_find("nope"));
}
