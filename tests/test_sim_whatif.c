/* test_sim_whatif.c - what-if replay: a simulated run replayed under its
 * own settings reproduces every allocator event; under other settings or a
 * smaller device the differences show (fewer segments with expandable
 * segments, an OOM that stops the replay). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/memhist.h"
#include "sim_replay.h"
#include "sim.h"
#include "workload.h"

struct evs {
    struct mh_event *ev;
    size_t n, cap;
};

static int keep(void *user, const struct mh_event *e)
{
    struct evs *v = user;
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 4096;
        v->ev = realloc(v->ev, v->cap * sizeof *v->ev);
        cr_assert_not_null(v->ev);
    }
    v->ev[v->n++] = *e;
    return 0;
}

static struct mh__sim *make(const char *conf, uint64_t capacity, struct evs *out)
{
    struct mh__sim_opts o;
    struct mh__sim *s;
    memset(&o, 0, sizeof o);
    cr_assert_eq(mh_alloc_conf_parse(conf, &o.conf, NULL, 0), 0);
    o.capacity = capacity;
    o.emit = keep;
    o.emit_user = out;
    cr_assert_eq(mh__sim_new(&o, &s), 0);
    return s;
}

static void simulate(const char *conf, uint64_t capacity, const char *params, struct evs *out)
{
    const struct mh__workload *wl = mh__workload_find("gpt");
    int64_t v[MH__WORKLOAD_MAX_PARAMS];
    cr_assert_eq(mh__workload_parse_params(wl, params, v, NULL, 0), 0);
    struct mh__sim *s = make(conf, capacity, out);
    cr_assert_eq(mh__workload_run(wl, s, v, 4, 5, NULL), 0);
    mh__sim_free(s);
}

static void replay(const struct evs *in, const char *conf, uint64_t capacity, int oracle,
                   struct evs *out, struct mh__sim_replay_result *res)
{
    struct mh__sim_replay_opts o;
    memset(&o, 0, sizeof o);
    cr_assert_eq(mh_alloc_conf_parse(conf, &o.conf, NULL, 0), 0);
    o.capacity = capacity;
    o.use_oracle = oracle;
    o.emit = keep;
    o.emit_user = out;
    cr_assert_eq(mh__sim_replay_events(in->ev, in->n, &o, res), 0);
}

#define PARAMS "layers=3,hidden=256,heads=4,seq=512,batch=4,vocab=6000,seqvar=40"

static void self_match(const char *conf, uint64_t capacity)
{
    struct evs rec = {0}, out = {0};
    struct mh__sim_replay_result res;
    simulate(conf, capacity, PARAMS, &rec);
    replay(&rec, conf, capacity, 1, &out, &res);
    cr_expect_gt(res.recorded_alloc_events, 20);
    cr_expect_eq(res.matched, res.recorded_alloc_events, "%s: %llu of %llu", conf,
                 (unsigned long long)res.matched, (unsigned long long)res.recorded_alloc_events);
    cr_expect_eq(res.simulated_alloc_events, res.recorded_alloc_events);
    free(rec.ev);
    free(out.ev);
}

Test(sim_whatif, own_settings_match_100_percent)
{
    self_match("", 0);
    self_match("expandable_segments:True", 0);
    self_match("max_split_size_mb:20", 0);
    self_match("roundup_power2_divisions:[256:2,>:8]", 0);
}

Test(sim_whatif, retries_and_oom_match_too)
{
    struct evs probe = {0};
    simulate("max_split_size_mb:20", 0, PARAMS, &probe);
    uint64_t peak = 0, cur = 0;
    for (size_t i = 0; i < probe.n; i++) {
        if (probe.ev[i].kind == MH_EV_SEGMENT_ALLOC)
            cur += probe.ev[i].size;
        if (probe.ev[i].kind == MH_EV_SEGMENT_FREE)
            cur -= probe.ev[i].size;
        peak = cur > peak ? cur : peak;
    }
    free(probe.ev);
    self_match("max_split_size_mb:20", peak * 8 / 10); /* release-and-retry */
    self_match("", peak / 3);                          /* OOM */
}

Test(sim_whatif, pending_frees_and_empty_cache_match)
{
    struct evs rec = {0}, out = {0};
    struct mh__sim *s = make("", 0, &rec);
    uint64_t a[8];
    for (int i = 0; i < 8; i++)
        cr_assert_eq(mh__sim_malloc(s, (uint64_t)(i + 1) << 21, (uint64_t)(i % 2), 0, 0, &a[i]), 0);
    for (int i = 0; i < 8; i += 2)
        cr_assert_eq(mh__sim_free_block(s, a[i], 0, 1, mh__sim_time(s) + 100), 0);
    mh__sim_advance(s, 1000);
    uint64_t b;
    cr_assert_eq(mh__sim_malloc(s, 3 << 20, 0, 0, 0, &b), 0);
    for (int i = 1; i < 8; i += 2)
        cr_assert_eq(mh__sim_free_block(s, a[i], 0, 0, 0), 0);
    cr_assert_eq(mh__sim_empty_cache(s), 0);
    cr_assert_eq(mh__sim_malloc(s, 5 << 20, 1, 0, 0, &b), 0);
    mh__sim_free(s);
    struct mh__sim_replay_result res;
    replay(&rec, "", 0, 1, &out, &res);
    for (size_t i = 0; i < rec.n || i < out.n; i++) {
        const struct mh_event *x = i < rec.n ? &rec.ev[i] : NULL, *y = i < out.n ? &out.ev[i] : NULL;
        if (!x || !y || x->kind != y->kind || x->addr != y->addr || x->size != y->size)
            cr_log_info("event %zu: recorded %s %llx %llu, replayed %s %llx %llu", i,
                        x ? mh_event_kind_name(x->kind) : "-", x ? (unsigned long long)x->addr : 0,
                        x ? (unsigned long long)x->size : 0, y ? mh_event_kind_name(y->kind) : "-",
                        y ? (unsigned long long)y->addr : 0, y ? (unsigned long long)y->size : 0);
    }
    cr_expect_eq(res.empty_caches, 1);
    cr_expect_eq(res.matched, res.recorded_alloc_events);
    free(rec.ev);
    free(out.ev);
}

Test(sim_whatif, other_settings_and_smaller_device)
{
    struct evs rec = {0}, out = {0};
    struct mh__sim_replay_result res;
    simulate("", 0, PARAMS, &rec);
    replay(&rec, "expandable_segments:True", 0, 0, &out, &res);
    size_t segs = 0, maps = 0;
    for (size_t i = 0; i < out.n; i++) {
        segs += out.ev[i].kind == MH_EV_SEGMENT_ALLOC;
        maps += out.ev[i].kind == MH_EV_SEGMENT_MAP;
    }
    cr_expect_eq(segs, 0);
    cr_expect_gt(maps, 0);
    cr_expect_eq(res.oom, 0);
    out.n = 0;
    replay(&rec, "", 64ull << 20, 0, &out, &res);
    cr_expect_eq(res.oom, 1, "a 64 MiB device cannot hold this run");
    cr_expect_eq(out.ev[out.n - 1].kind, MH_EV_OOM, "replay stops at the what-if OOM");
    free(rec.ev);
    free(out.ev);
}

/* Every figure of a replay is the same however far apart the simulated and
 * the recorded run may get before the comparison reads the recording with
 * a cursor of its own, and whether a segment the oracle needs is read ahead. */
static void expect_same(const struct mh__sim_replay_result *a, const struct mh__sim_replay_result *b)
{
    cr_expect_eq(a->matched, b->matched);
    cr_expect_eq(a->matched_segment_events, b->matched_segment_events);
    cr_expect_eq(a->simulated_alloc_events, b->simulated_alloc_events);
    cr_expect_eq(a->recorded_alloc_events, b->recorded_alloc_events);
    cr_expect_eq(a->recorded_segment_events, b->recorded_segment_events);
    cr_expect_eq(a->placed, b->placed);
    cr_expect_eq(a->oom, b->oom);
    cr_expect_eq(a->input_events, b->input_events);
}

Test(sim_whatif, comparison_window_does_not_change_results)
{
    struct evs rec = {0};
    const char *runs[][2] = {{"expandable_segments:True", ""}, /* recorded, replayed */
                             {"", "expandable_segments:True"},
                             {"", "max_split_size_mb:20"},
                             {"max_split_size_mb:20", ""}};
    for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
        rec.n = 0;
        simulate(runs[r][0], 0, PARAMS, &rec);
        for (int oracle = 0; oracle <= 1; oracle++) {
            for (uint64_t cap = 0; cap <= 256ull << 20; cap += 256ull << 20) {
                struct mh__sim_replay_opts o;
                struct mh__sim_replay_result wide, narrow;
                memset(&o, 0, sizeof o);
                cr_assert_eq(mh_alloc_conf_parse(runs[r][1], &o.conf, NULL, 0), 0);
                o.use_oracle = oracle;
                o.capacity = cap;
                cr_assert_eq(mh__sim_replay_events(rec.ev, rec.n, &o, &wide), 0);
                o.compare_window = 1;
                cr_assert_eq(mh__sim_replay_events(rec.ev, rec.n, &o, &narrow), 0);
                cr_expect_lt(wide.matched, wide.recorded_alloc_events, "the runs drift apart");
                expect_same(&wide, &narrow);
            }
        }
    }
    free(rec.ev);
}
