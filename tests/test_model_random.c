/* test_model_random.c - a long pseudo-random but valid allocator sequence,
 * made by a tiny best-fit driver that reads the model's own free blocks
 * (same stream and pool, smallest that fits, allocate at its front, new
 * segment of mh_allocation_size when none fits, pending and immediate
 * frees, occasional empty_cache). After every event the state must tile,
 * free neighbours must be merged, every counter must equal the sum over the
 * live blocks and segments, and no anomaly may appear. */
#include <stdio.h>

#include "test_model_util.h"

#define NLIVE 4096

struct live {
    uint64_t addr, size;
    int pending;
};

struct fit {
    uint64_t need, stream, best_addr, best_size;
    int small;
};

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int best_fit(void *user, const struct mh_segment_view *s, const struct mh_block_view *b)
{
    struct fit *f = user;
    if (b->state == MH_BLOCK_INACTIVE && s->stream == f->stream && s->small_pool == f->small &&
        b->size >= f->need && (!f->best_size || b->size < f->best_size)) {
        f->best_size = b->size;
        f->best_addr = b->address;
    }
    return 0;
}

static int free_segments(void *user, const struct mh_segment_view *s)
{
    uint64_t *list = user;
    if (s->active == 0 && list[0] < 255)
        list[1 + list[0]++] = s->address;
    return 0;
}

static uint64_t expected_allocated;
static int step_no;

static void apply_checked(struct mh_model *m, struct mh_event *e, struct mh_apply_result *r)
{
    char where[64];
    cr_assert_eq(mh_model_apply(m, e, r), 0);
    cr_assert_eq(r->anomaly, 0, "event %d kind %d: anomaly %d", step_no, e->kind, r->anomaly);
    expected_allocated += (uint64_t)r->allocated_delta;
    snprintf(where, sizeof where, "event %d (%s)", step_no, mh_event_kind_name(e->kind));
    tcheck_device(m, 0, 1, where);
    struct mh_mem_stats st;
    mh_model_stats(m, 0, &st);
    cr_assert_eq(st.allocated, expected_allocated, "%s: delta sum", where);
}

static uint64_t random_size(void)
{
    uint64_t r = rnd();
    if (r % 4 != 0)
        return 1 + rnd() % (256 * 1024); /* small pool */
    return MH_MB + rnd() % (48 * MH_MB); /* large pool */
}

static void do_alloc(struct mh_model *m, const struct mh_alloc_conf *c, struct live *lv, int *n,
                     uint64_t *bump)
{
    uint64_t size = random_size();
    struct fit f = {.need = mh_round_size(c, size), .stream = rnd() % 2};
    f.small = mh_is_small_size(f.need);
    struct mh_event e;
    struct mh_apply_result r;
    mh_model_foreach_block(m, 0, best_fit, &f);
    if (!f.best_size) {
        uint64_t seg = mh_allocation_size(c, f.need);
        e = tev(MH_EV_SEGMENT_ALLOC, *bump, seg);
        e.stream = f.stream;
        e.flags = MH_EVF_POOL_KNOWN | (f.small ? MH_EVF_POOL_SMALL : 0);
        apply_checked(m, &e, &r);
        f.best_addr = *bump;
        *bump += seg + (rnd() % 2) * 2 * MH_MB;
    }
    e = tev(MH_EV_ALLOC, f.best_addr, size);
    e.stream = f.stream;
    apply_checked(m, &e, &r);
    lv[*n].addr = f.best_addr;
    lv[*n].size = size;
    lv[*n].pending = 0;
    (*n)++;
}

static void do_free(struct mh_model *m, struct live *lv, int *n)
{
    int i = (int)(rnd() % (uint64_t)*n);
    struct mh_event e;
    struct mh_apply_result r;
    if (!lv[i].pending && rnd() % 2) {
        e = tev(MH_EV_FREE_REQUESTED, lv[i].addr, lv[i].size);
        apply_checked(m, &e, &r);
        lv[i].pending = 1;
        return;
    }
    e = tev(MH_EV_FREE_COMPLETED, lv[i].addr, lv[i].size);
    apply_checked(m, &e, &r);
    lv[i] = lv[--*n];
}

/* Frees up to 255 wholly free segments; returns how many. */
static uint64_t empty_cache(struct mh_model *m)
{
    uint64_t list[256] = {0};
    struct mh_apply_result r;
    mh_model_foreach_segment(m, 0, free_segments, list);
    for (uint64_t i = 0; i < list[0]; i++) {
        struct mh_event e = tev(MH_EV_SEGMENT_FREE, list[1 + i], 0);
        apply_checked(m, &e, &r);
    }
    return list[0];
}

static void run(const char *conf, int events)
{
    static struct live lv[NLIVE];
    struct mh_model *m = tmodel(conf);
    struct mh_alloc_conf c = {0};
    if (conf)
        mh_alloc_conf_parse(conf, &c, NULL, 0);
    int n = 0;
    uint64_t bump = 0x7c0000000000ull;
    expected_allocated = 0;
    for (step_no = 0; step_no < events; step_no++) {
        uint64_t r = rnd() % 100;
        if (n < NLIVE && (n == 0 || r < 52))
            do_alloc(m, &c, lv, &n, &bump);
        else if (r < 99)
            do_free(m, lv, &n);
        else
            empty_cache(m);
    }
    while (n > 0)
        do_free(m, lv, &n);
    while (empty_cache(m))
        ;
    struct mh_mem_stats st;
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.allocated, 0);
    cr_expect_eq(st.active, 0);
    cr_expect_eq(st.reserved, 0);
    mh_model_free(m);
}

Test(random, best_fit_sequence_default, .timeout = 300)
{
    run(NULL, 6000);
}

Test(random, best_fit_sequence_settings, .timeout = 300)
{
    run("max_split_size_mb:24,roundup_power2_divisions:[1:4,>:8]", 6000);
}

/* Arbitrary events over a small address space: anomalies are expected, but
 * the state must stay consistent after every one of them. */
static struct mh_event chaos_event(void)
{
    static const uint64_t sizes[] = {0, 512, 4096, MH_MB, 2 * MH_MB, 20 * MH_MB, 3 * MH_MB};
    struct mh_event e =
        tev((unsigned)(rnd() % 14), 0x7b0000000000ull + (rnd() % 64) * MH_MB, sizes[rnd() % 7]);
    if (rnd() % 4 == 0)
        e.addr += (rnd() % 8) * 512;
    e.flags = (uint8_t)(rnd() % 16);
    e.stream = rnd() % 2;
    e.device = (int16_t)(rnd() % 64 == 0 ? 300 : 0);
    e.aux = (uint32_t)(rnd() % 9);
    e.time_ns = rnd() % 8 ? (uint64_t)step_no * 10 : 0;
    return e;
}

Test(random, chaos_stays_consistent, .timeout = 300)
{
    struct mh_model *m = tmodel(NULL);
    char where[64];
    for (step_no = 0; step_no < 20000; step_no++) {
        struct mh_event e = chaos_event();
        cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
        snprintf(where, sizeof where, "chaos %d (%s)", step_no, mh_event_kind_name(e.kind));
        tcheck_device(m, 0, 1, where);
    }
    mh_model_finish(m);
    uint64_t anomalies = 0;
    for (int a = 1; a < MH_ANOM_COUNT; a++)
        anomalies += mh_model_anomaly_count(m, a);
    struct mh_mem_stats st;
    mh_model_stats(m, 0, &st);
    cr_expect_gt(anomalies, 0);
    cr_expect_gt(st.segment_allocs + st.maps, 100);
    cr_expect_gt(st.allocs, 100);
    cr_expect_gt(st.unmaps + st.segment_frees, 10);
    cr_expect_eq(mh_model_event_count(m), 20000);
    mh_model_free(m);
}
