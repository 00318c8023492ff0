/* test_cli_answers_layers.c - the answers on simulated GPT runs with known
 * shapes: categories (parameter, gradient, optimizer state and input bytes
 * equal the workload's tensor sizes; a block kept from backward is a
 * gradient only where torch did not name the gradients), layer attribution at the peak (within
 * 1 % of what the shapes give), and the checkpointing estimate against the
 * simulator's own run with those layers checkpointed (within 10 %). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/memhist.h"
#include "analysis.h"
#include "layers.h"
#include "layer_names.h"
#include "categories.h"
#include "sim.h"
#include "workload.h"

/* A recording written to memory and opened as an analysis, with every
 * allocation's record (classified, in allocation order). */
struct run {
    struct mh_writer *w;
    struct mh__analysis a;
    const struct mh_reader *r;
    const struct mh_model *m;
    struct mh__alloc_rec *recs;
    size_t nrecs, cap;
};

static int keep_record(void *user, const struct mh__alloc_rec *rec)
{
    struct run *run = user;
    if (run->nrecs == run->cap) {
        run->cap = run->cap ? 2 * run->cap : 256;
        run->recs = realloc(run->recs, run->cap * sizeof *run->recs);
        cr_assert_not_null(run->recs);
    }
    run->recs[run->nrecs++] = *rec;
    return 0;
}

static int by_alloc_index(const void *x, const void *y)
{
    const struct mh__alloc_rec *a = x, *b = y;
    return (a->alloc_index > b->alloc_index) - (a->alloc_index < b->alloc_index);
}

/* Opens the recording the writer made (closed here) and gathers the records. */
static void open_run(struct run *out)
{
    const void *data;
    size_t len;
    cr_assert_eq(mh_writer_close(out->w), 0);
    cr_assert_eq(mh_writer_mem(out->w, &data, &len), 0);
    cr_assert_eq(mh__analysis_open_mem(data, len, "run", NULL, &out->a), 0);
    out->r = out->a.rp.reader;
    out->m = out->a.rp.model;
    cr_assert_eq(mh__analysis_each_record(&out->a, keep_record, out), 0);
    if (out->nrecs)
        qsort(out->recs, out->nrecs, sizeof *out->recs, by_alloc_index);
}

static void simulate(const char *params, uint64_t steps, struct run *out)
{
    const struct mh__workload *wl = mh__workload_find("gpt");
    int64_t values[MH__WORKLOAD_MAX_PARAMS];
    char err[128];
    struct mh_writer_opts wo = {.source = "simulated"};
    struct mh__sim_opts so;
    struct mh__sim *s;
    struct mh__workload_result res;
    memset(out, 0, sizeof *out);
    memset(&so, 0, sizeof so);
    cr_assert_eq(mh__workload_parse_params(wl, params, values, err, sizeof err), 0, "%s", err);
    cr_assert_eq(mh_writer_open_mem(&wo, &out->w), 0);
    so.writer = out->w;
    cr_assert_eq(mh__sim_new(&so, &s), 0);
    cr_assert_eq(mh__workload_run(wl, s, values, steps, 1, &res), 0);
    mh__sim_free(s);
    open_run(out);
}

static void run_free(struct run *r)
{
    mh__analysis_close(&r->a);
    mh_writer_free_mem(r->w);
    free(r->recs);
}

/* Small model: every tensor <= 1 MiB, so blocks are exactly 512-rounded. */
#define L 2
#define H 256
#define NH 4
#define S 256
#define B 2
#define V 1000
#define T (B * S)
#define SMALL "layers=2,hidden=256,heads=4,seq=256,batch=2,vocab=1000,seqvar=0"

static uint64_t param_bytes(void)
{
    return 4ull * (V * H + S * H + 2 * H + L * (12ull * H * H + 13 * H));
}

Test(answers_categories, known_parameter_gradient_optimizer_input_bytes)
{
    struct run r;
    simulate(SMALL, 3, &r);
    size_t n = r.nrecs;
    const struct mh__alloc_rec *recs = r.recs;
    uint64_t by[MH__CAT_COUNT] = {0}, grads_step1 = 0, inputs_step1 = 0;
    for (size_t i = 0; i < n; i++) {
        by[recs[i].category] += recs[i].requested;
        if (recs[i].alloc_step == 1 && recs[i].category == MH__CAT_GRADIENT)
            grads_step1 += recs[i].requested;
        if (recs[i].alloc_step == 1 && recs[i].category == MH__CAT_INPUT)
            inputs_step1 += recs[i].requested;
    }
    cr_expect_eq(by[MH__CAT_PARAMETER], param_bytes());
    cr_expect_eq(by[MH__CAT_OPTIMIZER_STATE], 2 * param_bytes());
    cr_expect_eq(grads_step1, param_bytes(), "one fp32 gradient per parameter per step");
    cr_expect_eq(inputs_step1, 2ull * T * 8, "tokens and targets");
    cr_expect_gt(by[MH__CAT_ACTIVATION], 0);
    cr_expect_gt(by[MH__CAT_TEMPORARY], 0);
    struct mh_peak p;
    struct mh__lifetimes *kept;
    uint64_t bytes[MH__CAT_COUNT], req[MH__CAT_COUNT];
    cr_assert_eq(mh_model_peak_allocated(r.m, 0, &p), 0);
    cr_assert_eq(mh__analysis_moments(&r.a, &p.event_index, 1, &kept), 0);
    cr_assert_eq(mh__lifetimes_live_by_category(kept, 0, p.event_index, bytes, req), 0);
    mh__lifetimes_free(kept);
    cr_expect_eq(req[MH__CAT_PARAMETER], param_bytes());
    uint64_t total = 0;
    for (int c = 0; c < MH__CAT_COUNT; c++)
        total += bytes[c];
    cr_expect_eq(total, p.value, "categories partition the allocated bytes at the peak");
    run_free(&r);
}

/* Hand-made events written and opened as a run (run_free). */
static void replay(const struct mh_event *ev, size_t n, struct run *out)
{
    struct mh_writer_opts wo = {.source = "recorded"};
    memset(out, 0, sizeof *out);
    cr_assert_eq(mh_writer_open_mem(&wo, &out->w), 0);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(mh_writer_event(out->w, &ev[i]), 0, "event %zu", i);
    open_run(out);
}

Test(answers_categories, no_steps_means_unknown)
{
    struct mh_event ev[] = {
        {.time_ns = 1, .kind = MH_EV_SEGMENT_ALLOC, .addr = 0x100000, .size = 2 << 20},
        {.time_ns = 2, .kind = MH_EV_ALLOC, .addr = 0x100000, .size = 4096},
    };
    struct run r;
    replay(ev, 2, &r);
    size_t n = r.nrecs;
    const struct mh__alloc_rec *recs = r.recs;
    cr_assert_eq(n, 1);
    cr_expect_eq(recs[0].category, MH__CAT_UNKNOWN);
    cr_expect_eq(recs[0].size, 4096);
    run_free(&r);
}

/* The categories of a hand-made step: a gradient from backward (tagged
 * when `tag_grad`) and a block from backward that is never freed (a
 * workspace the autograd thread's cuBLAS handle took); the step ends when
 * `step_ends`, else the recording stops inside it (an OOM). */
static void backward_leftover(int tag_grad, int step_ends, int *grad_cat, int *leftover_cat)
{
    struct mh_event ev[] = {
        {.time_ns = 1, .kind = MH_EV_SEGMENT_ALLOC, .addr = 0x100000, .size = 2 << 20},
        {.time_ns = 2, .kind = MH_EV_STEP_BEGIN, .aux = 0},
        {.time_ns = 3, .kind = MH_EV_PHASE, .aux = MH_PHASE_FORWARD},
        {.time_ns = 4, .kind = MH_EV_PHASE, .aux = MH_PHASE_BACKWARD},
        {.time_ns = 5, .kind = MH_EV_ALLOC, .addr = 0x100000, .size = 4096},
        {.time_ns = 6, .kind = MH_EV_ALLOC, .addr = 0x101000, .size = 8192},
        {.time_ns = 7, .kind = MH_EV_PHASE, .aux = MH_PHASE_OPTIMIZER},
        {.time_ns = 8, .kind = tag_grad ? MH_EV_TAG : MH_EV_PHASE, .addr = 0x100000,
         .aux = tag_grad ? MH_ROLE_GRADIENT : MH_PHASE_OPTIMIZER},
        {.time_ns = 9, .kind = step_ends ? MH_EV_STEP_END : MH_EV_PHASE,
         .aux = step_ends ? 0 : MH_PHASE_OPTIMIZER},
        {.time_ns = 10, .kind = MH_EV_FREE_REQUESTED, .addr = 0x100000, .size = 4096},
    };
    struct run r;
    replay(ev, sizeof ev / sizeof ev[0], &r);
    size_t n = r.nrecs;
    const struct mh__alloc_rec *recs = r.recs;
    cr_assert_eq(n, 2);
    *grad_cat = recs[0].category;
    *leftover_cat = recs[1].category;
    run_free(&r);
}

Test(answers_categories, backward_leftover_is_no_gradient_where_gradients_are_tagged)
{
    int grad, leftover;
    backward_leftover(1, 1, &grad, &leftover);
    cr_expect_eq(grad, MH__CAT_GRADIENT);
    cr_expect_eq(leftover, MH__CAT_UNKNOWN, "torch named the gradients: the block kept from backward is not one");
    backward_leftover(0, 1, &grad, &leftover);
    cr_expect_eq(grad, MH__CAT_GRADIENT);
    cr_expect_eq(leftover, MH__CAT_GRADIENT, "no gradient tags: by lifetime, a block kept from backward is one");
    backward_leftover(1, 0, &grad, &leftover);
    cr_expect_eq(leftover, MH__CAT_GRADIENT, "a step still open at the end: its gradients are not tagged yet");
}

/* Forward blocks of three steps: A is kept to the end (a DDP bucket rebuilt
 * in forward), B lives until the next step's forward (an output the loop
 * holds), C is freed in its backward, D is the last step's, alive when the
 * recording stops. */
static const struct mh_event forward_kept[] = {
    {.time_ns = 1, .kind = MH_EV_SEGMENT_ALLOC, .addr = 0x100000, .size = 2 << 20},
    {.time_ns = 2, .kind = MH_EV_STEP_BEGIN, .aux = 0},
    {.time_ns = 3, .kind = MH_EV_PHASE, .aux = MH_PHASE_FORWARD},
    {.time_ns = 4, .kind = MH_EV_ALLOC, .addr = 0x100000, .size = 4096},
    {.time_ns = 5, .kind = MH_EV_ALLOC, .addr = 0x101000, .size = 4096},
    {.time_ns = 6, .kind = MH_EV_PHASE, .aux = MH_PHASE_BACKWARD},
    {.time_ns = 7, .kind = MH_EV_STEP_END, .aux = 0},
    {.time_ns = 8, .kind = MH_EV_STEP_BEGIN, .aux = 1},
    {.time_ns = 9, .kind = MH_EV_PHASE, .aux = MH_PHASE_FORWARD},
    {.time_ns = 10, .kind = MH_EV_FREE_REQUESTED, .addr = 0x101000, .size = 4096},
    {.time_ns = 11, .kind = MH_EV_ALLOC, .addr = 0x102000, .size = 4096},
    {.time_ns = 12, .kind = MH_EV_PHASE, .aux = MH_PHASE_BACKWARD},
    {.time_ns = 13, .kind = MH_EV_FREE_REQUESTED, .addr = 0x102000, .size = 4096},
    {.time_ns = 14, .kind = MH_EV_STEP_END, .aux = 1},
    {.time_ns = 15, .kind = MH_EV_STEP_BEGIN, .aux = 2},
    {.time_ns = 16, .kind = MH_EV_PHASE, .aux = MH_PHASE_FORWARD},
    {.time_ns = 17, .kind = MH_EV_ALLOC, .addr = 0x103000, .size = 4096},
};
#define FORWARD_KEPT_N (sizeof forward_kept / sizeof forward_kept[0])

static int note_livecat_end(void *user, const struct mh__livecat_end *end)
{
    ((int *)user)[end->tag] = end->category;
    return 0;
}

Test(answers_categories, forward_block_kept_through_the_next_step_is_no_activation)
{
    struct run r;
    replay(forward_kept, FORWARD_KEPT_N, &r);
    size_t n = r.nrecs;
    const struct mh__alloc_rec *recs = r.recs;
    cr_assert_eq(n, 4);
    int want[4] = {MH__CAT_UNKNOWN, MH__CAT_ACTIVATION, MH__CAT_ACTIVATION, MH__CAT_ACTIVATION};
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(recs[i].category, want[i], "block %c: category %d, want %d", (int)('A' + i),
                     recs[i].category, want[i]);
    run_free(&r);
    /* the streaming classifier agrees, at each block's free and at the end */
    struct mh_model_opts mo;
    struct mh_model *m;
    struct mh__livecat *lc;
    memset(&mo, 0, sizeof mo);
    cr_assert_eq(mh_model_new(&mo, &m), 0);
    cr_assert_eq(mh__livecat_new(&lc), 0);
    int got[4] = {-1, -1, -1, -1};
    uint64_t allocs = 0;
    for (size_t i = 0; i < FORWARD_KEPT_N; i++) {
        struct mh_apply_result ar;
        struct mh__livecat_end end;
        cr_assert_eq(mh_model_apply(m, &forward_kept[i], &ar), 0);
        uint64_t tag = forward_kept[i].kind == MH_EV_ALLOC ? allocs++ : 0;
        if (mh__livecat_observe(lc, m, &forward_kept[i], &ar, tag, &end) == 1 && end.ended)
            got[end.tag] = end.category;
    }
    cr_assert_eq(mh__livecat_finish(lc, note_livecat_end, got), 0);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(got[i], want[i], "streaming: block %c: category %d, want %d", 'A' + i, got[i], want[i]);
    mh__livecat_free(lc);
    mh_model_free(m);
}

static const struct mh__layer_stats *find_layer(const struct mh__layers *ly, const char *name)
{
    size_t n;
    const struct mh__layer_stats *st = mh__layers_list(ly, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(st[i].name, name) == 0)
            return &st[i];
    return NULL;
}

Test(answers_layers, attribution_matches_the_shapes)
{
    struct run r;
    struct mh__layers *ly;
    simulate(SMALL, 3, &r);
    cr_assert_eq(mh__layers_analyze(&r.a, 0, NULL, 0, &ly), 0);
    struct mh_peak p;
    cr_assert_eq(mh_model_peak_allocated(r.m, 0, &p), 0);
    cr_expect_eq(mh__layers_peak(ly, NULL, NULL), p.value, "same peak as the model");
    /* What a block keeps for backward (flash attention), from wl_gpt.c's shapes. */
    uint64_t saved = 34ull * T * H + 24ull * H * H + 18ull * H + 16ull * T + 4ull * B * NH * S;
    uint64_t output = 4ull * T * H;
    for (int l = 0; l < L; l++) {
        char name[32];
        snprintf(name, sizeof name, "transformer.h.%d", l);
        const struct mh__layer_stats *s = find_layer(ly, name);
        cr_assert_not_null(s, "%s", name);
        cr_expect_leq(llabs((long long)s->live_at_peak - (long long)(saved + output)),
                      (long long)(saved + output) / 100, "%s live %llu want %llu", name,
                      (unsigned long long)s->live_at_peak, (unsigned long long)(saved + output));
        cr_expect_leq(llabs((long long)s->saved_at_peak - (long long)saved), (long long)saved / 100,
                      "%s saved %llu want %llu", name, (unsigned long long)s->saved_at_peak,
                      (unsigned long long)saved);
        cr_expect(s->candidate);
    }
    mh__layers_free(ly);
    run_free(&r);
}

static uint64_t simulated_peak(const char *params)
{
    struct run r;
    struct mh_peak p;
    simulate(params, 3, &r);
    cr_assert_eq(mh_model_peak_allocated(r.m, 0, &p), 0);
    run_free(&r);
    return p.value;
}

/* Estimate for the plan's first k layers against the simulator's run. */
static void check_estimate(const char *base, size_t k_wanted)
{
    struct run r;
    struct mh__layers *ly;
    simulate(base, 3, &r);
    cr_assert_eq(mh__layers_analyze(&r.a, 0, NULL, 0, &ly), 0);
    const size_t *plan;
    const uint64_t *after;
    size_t n, best, nl, order[64];
    cr_assert_eq(mh__layers_plan(ly, &plan, &after, &n, &best), 0);
    cr_assert_geq(n, k_wanted);
    const struct mh__layer_stats *st = mh__layers_list(ly, &nl);
    uint64_t mask = 0;
    size_t k = 0;
    for (size_t i = 0; i < n && k < k_wanted; i++) {
        int layer;
        if (sscanf(st[plan[i]].name, "transformer.h.%d", &layer) == 1) {
            mask |= 1ull << layer;
            order[k++] = plan[i];
        }
    }
    cr_assert_eq(k, k_wanted);
    uint64_t est, peak = mh__layers_peak(ly, NULL, NULL);
    cr_assert_eq(mh__layers_estimate(ly, order, k, &est), 0);
    char params[256];
    snprintf(params, sizeof params, "%s,checkpoint=%llu", base, (unsigned long long)mask);
    uint64_t actual = simulated_peak(params);
    double want = (double)(peak - actual), got = (double)(peak - est);
    cr_expect_gt(want, 0);
    cr_expect_leq(got > want ? got - want : want - got, 0.10 * want,
                  "k=%zu: estimated saving %.0f, simulated %.0f", k, got, want);
    mh__layers_free(ly);
    run_free(&r);
}

Test(answers_layers, checkpoint_estimate_matches_the_simulator)
{
    const char *base = "layers=6,hidden=512,heads=8,seq=512,batch=4,vocab=8000,seqvar=0";
    check_estimate(base, 1);
    check_estimate(base, 3);
    check_estimate(base, 6);
}

Test(answers_layers, layer_names)
{
    struct run r;
    simulate(SMALL, 1, &r);
    char buf[128];
    uint32_t id = 0;
    /* metadata wins and is cut after the block index */
    for (uint32_t s = 1; s < 4096; s++) {
        const char *t = mh_reader_string(r.r, s);
        if (t && strcmp(t, "transformer.h.1.mlp.c_fc") == 0) {
            id = s;
            break;
        }
    }
    cr_assert_neq(id, 0);
    struct mh__layer_namer nm;
    mh__layer_namer_init(&nm, r.r);
    cr_expect_str_eq(mh__layer_name(&nm, id, 0, MH_ROLE_NONE, buf, sizeof buf), "transformer.h.1");
    run_free(&r);
}
