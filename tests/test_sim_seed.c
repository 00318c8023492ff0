/* test_sim_seed.c - what-if replay of a trace that starts mid-run: the
 * simulator seeded with the state at the trace's start (mh__sim_seed).
 *
 * A simulated run is cut in the middle; the state at the cut, taken from the
 * model, becomes preexisting events (as `memhist import` writes them for a
 * torch snapshot whose trace starts mid-run) followed by the rest of the
 * run. Replayed under its own settings, the seeded replay must reproduce
 * every allocator event of the rest and its reserved peak; the same rest
 * replayed without its starting state must not. Seeding is also checked
 * directly on constructed states (segments, expandable ranges, blocks that
 * do not fit). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "memhist/memhist.h"
#include "memhist/model.h"
#include "sim.h"
#include "sim_replay.h"
#include "workload.h"

#define MB (1024ull * 1024)

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

static void simulate(struct evs *out)
{
    const struct mh__workload *wl = mh__workload_find("gpt");
    int64_t v[MH__WORKLOAD_MAX_PARAMS];
    cr_assert_eq(
        mh__workload_parse_params(
            wl, "layers=3,hidden=256,heads=4,seq=512,batch=4,vocab=6000,seqvar=40", v, NULL, 0),
        0);
    struct mh__sim_opts o;
    struct mh__sim *s;
    memset(&o, 0, sizeof o);
    o.emit = keep;
    o.emit_user = out;
    cr_assert_eq(mh__sim_new(&o, &s), 0);
    cr_assert_eq(mh__workload_run(wl, s, v, 4, 5, NULL), 0);
    mh__sim_free(s);
}

/* The state at the cut as preexisting events, in address order. */
struct state {
    struct evs *out;
    uint64_t time_ns, last_segment;
    size_t segments, blocks;
    int unknown_sizes; /* write blocks as of unknown size (block_size 0) */
};

static int put_block(void *user, const struct mh_segment_view *seg, const struct mh_block_view *b)
{
    struct state *st = user;
    struct mh_event e;
    memset(&e, 0, sizeof e);
    e.time_ns = st->time_ns;
    e.stream = seg->stream;
    e.flags = MH_EVF_PREEXISTING;
    if (seg->address != st->last_segment) {
        e.kind = MH_EV_SEGMENT_ALLOC;
        e.flags |= MH_EVF_POOL_KNOWN | (seg->small_pool ? MH_EVF_POOL_SMALL : 0);
        e.addr = seg->address;
        e.size = seg->size;
        keep(st->out, &e);
        st->last_segment = seg->address;
        st->segments++;
        e.flags = MH_EVF_PREEXISTING;
    }
    if (b->state != MH_BLOCK_ALLOCATED && b->state != MH_BLOCK_PENDING_FREE)
        return 0;
    e.kind = MH_EV_ALLOC;
    e.addr = b->address;
    e.size = b->requested;
    e.block_size = st->unknown_sizes ? 0 : b->size;
    e.stream = b->stream;
    keep(st->out, &e);
    st->blocks++;
    if (b->state == MH_BLOCK_PENDING_FREE) {
        e.kind = MH_EV_FREE_REQUESTED;
        keep(st->out, &e);
    }
    return 0;
}

/* Replays run[0..cut) into a model; `in` gets the state there and run[cut..n).
 * Returns the largest reserved from the cut on. */
static uint64_t cut_run(const struct evs *run, size_t cut, struct evs *in, struct state *st)
{
    struct mh_model_opts mo;
    struct mh_model *m;
    struct mh_apply_result r;
    int64_t reserved = 0;
    uint64_t peak = 0;
    memset(&mo, 0, sizeof mo);
    cr_assert_eq(mh_model_new(&mo, &m), 0);
    for (size_t i = 0; i < run->n; i++) {
        if (i == cut) {
            st->out = in;
            st->time_ns = run->ev[i].time_ns;
            cr_assert_eq(mh_model_foreach_block(m, 0, put_block, st), 0);
        }
        cr_assert_geq(mh_model_apply(m, &run->ev[i], &r), 0);
        reserved += r.reserved_delta;
        if (i >= cut && (uint64_t)reserved > peak)
            peak = (uint64_t)reserved;
        if (i >= cut)
            keep(in, &run->ev[i]);
    }
    mh_model_free(m);
    return peak;
}

/* The largest reserved of a replay's own events. */
static uint64_t replay_peak(const struct evs *in, struct mh__sim_replay_result *res)
{
    struct evs out = {0};
    struct mh__sim_replay_opts o;
    memset(&o, 0, sizeof o);
    o.use_oracle = 1;
    o.emit = keep;
    o.emit_user = &out;
    cr_assert_eq(mh__sim_replay_events(in->ev, in->n, &o, res), 0);
    struct mh_model_opts mo;
    struct mh_model *m;
    struct mh_apply_result r;
    int64_t reserved = 0;
    uint64_t peak = 0;
    memset(&mo, 0, sizeof mo);
    cr_assert_eq(mh_model_new(&mo, &m), 0);
    for (size_t i = 0; i < out.n; i++) {
        cr_assert_geq(mh_model_apply(m, &out.ev[i], &r), 0);
        reserved += r.reserved_delta;
        if ((uint64_t)reserved > peak)
            peak = (uint64_t)reserved;
    }
    mh_model_free(m);
    free(out.ev);
    return peak;
}

/* An allocation about halfway through the run (never between a free's
 * request and its completion). */
static size_t middle(const struct evs *run)
{
    size_t cut = run->n / 2;
    while (cut < run->n && run->ev[cut].kind != MH_EV_ALLOC)
        cut++;
    cr_assert_lt(cut, run->n);
    return cut;
}

static double percent(const struct mh__sim_replay_result *r)
{
    return r->recorded_alloc_events ? 100.0 * (double)r->matched / (double)r->recorded_alloc_events
                                    : 0.0;
}

Test(sim_seed, seeded_replay_of_a_cut_run_reproduces_the_rest)
{
    struct evs run = {0}, in = {0};
    struct state st = {0};
    struct mh__sim_replay_result res;
    simulate(&run);
    size_t cut = middle(&run);
    uint64_t torch_peak = cut_run(&run, cut, &in, &st);
    cr_assert_gt(st.segments, 1);
    cr_assert_gt(st.blocks, 10);
    uint64_t peak = replay_peak(&in, &res);
    cr_expect_eq(res.seeded_segments, st.segments);
    cr_expect_eq(res.seeded_blocks, st.blocks);
    cr_expect_eq(res.seeded_unknown, 0);
    cr_expect_eq(res.seed_rejected, 0);
    cr_expect_eq(res.unknown_frees, 0);
    cr_expect_gt(res.recorded_alloc_events, 100);
    cr_expect_eq(res.matched, res.recorded_alloc_events, "%.2f %% matched", percent(&res));
    cr_expect_eq(res.placed, res.allocs);
    cr_expect_eq(res.matched_segment_events, res.recorded_segment_events);
    cr_expect_eq(peak, torch_peak, "replay peak reserved %llu, run's %llu",
                 (unsigned long long)peak, (unsigned long long)torch_peak);
    free(run.ev);
    free(in.ev);
}

Test(sim_seed, the_same_rest_without_its_starting_state_does_not_match)
{
    struct evs run = {0}, in = {0};
    struct state st = {0};
    struct mh__sim_replay_result res;
    simulate(&run);
    size_t cut = middle(&run);
    cut_run(&run, cut, &in, &st);
    size_t pre = 0;
    while (pre < in.n && (in.ev[pre].flags & MH_EVF_PREEXISTING))
        pre++;
    cr_assert_geq(pre, st.segments + st.blocks);
    cr_assert_eq(in.n - pre, run.n - cut);
    struct evs rest = {in.ev + pre, in.n - pre, 0};
    replay_peak(&rest, &res);
    cr_expect_eq(res.seeded_segments, 0);
    cr_expect_gt(res.unknown_frees, 0);
    cr_expect_lt(percent(&res), 95.0, "%.2f %% matched without the starting state", percent(&res));
    free(run.ev);
    free(in.ev);
}

Test(sim_seed, blocks_of_unknown_size_take_the_rounded_request)
{
    struct evs run = {0}, in = {0};
    struct state st = {.unknown_sizes = 1};
    struct mh__sim_replay_result res;
    simulate(&run);
    cut_run(&run, middle(&run), &in, &st);
    replay_peak(&in, &res);
    cr_expect_eq(res.seeded_blocks, st.blocks);
    cr_expect_eq(res.seeded_unknown, st.blocks);
    cr_expect_geq(percent(&res), 95.0, "%.2f %% matched", percent(&res));
    free(run.ev);
    free(in.ev);
}

static struct mh_event pre(unsigned kind, uint64_t addr, uint64_t size, uint64_t block_size,
                           unsigned flags)
{
    struct mh_event e;
    memset(&e, 0, sizeof e);
    e.kind = (uint8_t)kind;
    e.addr = addr;
    e.size = size;
    e.block_size = block_size;
    e.flags = (uint8_t)(MH_EVF_PREEXISTING | flags);
    return e;
}

static struct mh__sim *new_sim(const char *conf, struct evs *out)
{
    struct mh__sim_opts o;
    struct mh__sim *s;
    memset(&o, 0, sizeof o);
    cr_assert_eq(mh_alloc_conf_parse(conf, &o.conf, NULL, 0), 0);
    o.emit = keep;
    o.emit_user = out;
    cr_assert_eq(mh__sim_new(&o, &s), 0);
    return s;
}

Test(sim_seed, constructed_segments_and_blocks)
{
    const uint64_t base = 0x7f4000000000ull;
    struct evs out = {0};
    struct mh__sim *s = new_sim("", &out);
    struct mh_event e = pre(MH_EV_SEGMENT_ALLOC, base, 20 * MB, 0, MH_EVF_POOL_KNOWN);
    cr_assert_eq(mh__sim_seed(s, &e), 0);
    e = pre(MH_EV_ALLOC, base + 4 * MB, 3 * MB, 3 * MB, 0);
    cr_assert_eq(mh__sim_seed(s, &e), 0);
    e = pre(MH_EV_ALLOC, base + 5 * MB, MB, MB, 0); /* overlaps the block before */
    cr_expect_eq(mh__sim_seed(s, &e), 1);
    e = pre(MH_EV_SEGMENT_ALLOC, base + 10 * MB, 20 * MB, 0, MH_EVF_POOL_KNOWN); /* overlaps */
    cr_expect_eq(mh__sim_seed(s, &e), 1);
    e.flags = 0;
    cr_expect_eq(mh__sim_seed(s, &e), MH_EINVAL);
    struct mh__sim_stats st;
    mh__sim_stats(s, &st);
    cr_expect_eq(st.reserved, 20 * MB);
    cr_expect_eq(st.allocated, 3 * MB);
    cr_expect_eq(out.n, 2, "only the accepted events are emitted");
    /* best fit among the seeded free space: the 13 MiB after the block */
    uint64_t addr = 0;
    cr_assert_eq(mh__sim_malloc(s, 12 * MB, 0, 0, 0, &addr), 0);
    cr_expect_eq(addr, base + 7 * MB);
    cr_assert_eq(mh__sim_malloc(s, 4 * MB, 0, 0, 0, &addr), 0);
    cr_expect_eq(addr, base);
    cr_expect_eq(mh__sim_block_size(s, base + 4 * MB), 3 * MB);
    cr_expect_eq(mh__sim_free_block(s, base + 4 * MB, 0, 0, 0), 0);
    mh__sim_stats(s, &st);
    cr_expect_eq(st.segment_allocs, 0, "nothing new was cudaMalloc'd");
    mh__sim_free(s);
    free(out.ev);
}

Test(sim_seed, constructed_expandable_ranges)
{
    const uint64_t small = 0x7f4000000000ull, large = 0x7f4100000000ull;
    struct evs out = {0};
    struct mh__sim *s = new_sim("expandable_segments:True", &out);
    unsigned fl = MH_EVF_EXPANDABLE | MH_EVF_POOL_KNOWN;
    struct mh_event e = pre(MH_EV_SEGMENT_MAP, small, 2 * MB, 0, fl | MH_EVF_POOL_SMALL);
    cr_assert_eq(mh__sim_seed(s, &e), 0);
    /* a range of another pool inside the first reservation's unmapped tail
     * ends that reservation there */
    e = pre(MH_EV_SEGMENT_MAP, large, 40 * MB, 0, fl);
    cr_assert_eq(mh__sim_seed(s, &e), 0);
    e = pre(MH_EV_ALLOC, large, 30 * MB, 30 * MB, 0);
    cr_assert_eq(mh__sim_seed(s, &e), 0);
    e = pre(MH_EV_SEGMENT_MAP, large + 10 * MB, 20 * MB, 0, fl); /* mapped already */
    cr_expect_eq(mh__sim_seed(s, &e), 1);
    uint64_t addr = 0;
    /* the 10 MiB left plus one new 20 MiB page right after the seeded range */
    cr_assert_eq(mh__sim_malloc(s, 20 * MB, 0, 0, 0, &addr), 0);
    cr_expect_eq(addr, large + 30 * MB);
    struct mh__sim_stats st;
    mh__sim_stats(s, &st);
    cr_expect_eq(st.reserved, 62 * MB);
    cr_expect_eq(st.maps, 1);
    cr_assert_eq(mh__sim_malloc(s, 1000, 0, 0, 0, &addr), 0);
    cr_expect_eq(addr, small);
    mh__sim_free(s);
    free(out.ev);
}
