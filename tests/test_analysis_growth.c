/* test_analysis_growth.c - the growth observer (src/analysis/growth.h) on
 * hand-written recordings replayed through a session: a leak of one size per
 * step is found with its stack, module, bytes per step and first step;
 * steady state (parameters, optimizer state created in the first step, a
 * cache that filled for two steps and stayed) is not growth; too few steps
 * give no answer; growth is per device with per-device step markers; and
 * what follows the last step (the tail) is not counted. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "growth.h"
#include "memhist/memhist.h"
#include "session.h"

#define MB (1024ull * 1024ull)
#define SEG 0x7f0000000000ull

struct rec {
    struct mh_writer *w;
    uint64_t t;
    uint32_t stack[4], module;
};

static void put(struct rec *r, int dev, unsigned kind, uint64_t addr, uint64_t size, uint32_t stack,
                uint32_t aux, uint8_t flags)
{
    struct mh_event e;
    memset(&e, 0, sizeof e);
    e.time_ns = 1000 + r->t++;
    e.kind = (uint8_t)kind;
    e.addr = addr;
    e.size = size;
    e.stack = stack;
    e.aux = aux;
    e.flags = flags;
    e.device = (int16_t)dev;
    e.str = kind == MH_EV_ALLOC && stack == r->stack[1] ? r->module : 0;
    cr_assert_eq(mh_writer_event(r->w, &e), 0);
}

static void rec_open(struct rec *r)
{
    struct mh_writer_opts wo = {.source = "simulated"};
    memset(r, 0, sizeof *r);
    cr_assert_eq(mh_writer_open_mem(&wo, &r->w), 0);
    for (int i = 0; i < 4; i++) {
        char func[16];
        snprintf(func, sizeof func, "site%d", i);
        uint32_t f = (uint32_t)mh_writer_intern_frame(r->w, "train.py", func, (uint32_t)(10 + i));
        r->stack[i] = (uint32_t)mh_writer_intern_stack(r->w, &f, 1);
    }
    r->module = (uint32_t)mh_writer_intern_string(r->w, "model.h.0.mlp", 13);
    for (int dev = 0; dev < 2; dev++)
        put(r, dev, MH_EV_SEGMENT_ALLOC, SEG, 512 * MB, 0, 0, 0);
}

/* Replays the recording with a growth observer; returns it (caller frees). */
static struct mh__growth *replay(struct rec *r)
{
    const void *data;
    size_t len;
    struct mh__session *s;
    struct mh__growth *g;
    cr_assert_eq(mh_writer_close(r->w), 0);
    cr_assert_eq(mh_writer_mem(r->w, &data, &len), 0);
    cr_assert_eq(mh__session_open_mem(data, len, "growth", &s), 0);
    cr_assert_eq(mh__growth_new(&g), 0);
    cr_assert_eq(mh__session_pass(s, mh__growth_observer(g)), 0);
    mh__session_close(s);
    mh_writer_free_mem(r->w);
    return g;
}

/* Set-up: parameters (stack 0). Each step: a temporary (stack 2) freed in
 * the step, optimizer state (stack 3) created in step 0 only, and `leak`
 * bytes from stack 1 (module model.h.0.mlp) never freed; `cache` bytes from
 * stack 3 in steps 1 and 2 only, kept. */
static void training(struct rec *r, int dev, int steps, uint64_t leak, uint64_t cache, int own)
{
    uint64_t at = SEG;
    put(r, dev, MH_EV_ALLOC, at, 64 * MB, r->stack[0], 0, 0);
    at += 64 * MB;
    if (!own)
        put(r, -1, MH_EV_STEP_BEGIN, 0, 0, 0, 0, 0);
    for (int s = 0; s < steps; s++) {
        put(r, dev, MH_EV_ALLOC, SEG + 400 * MB, 8 * MB, r->stack[2], 0, 0);
        put(r, dev, MH_EV_FREE_COMPLETED, SEG + 400 * MB, 8 * MB, 0, 0, 0);
        if (s == 0) {
            put(r, dev, MH_EV_ALLOC, at, 128 * MB, r->stack[3], 0, 0);
            at += 128 * MB;
        }
        if (cache && (s == 1 || s == 2)) {
            put(r, dev, MH_EV_ALLOC, at, cache, r->stack[3], 0, 0);
            at += cache;
        }
        if (leak) {
            put(r, dev, MH_EV_ALLOC, at, leak, r->stack[1], 0, 0);
            at += leak;
        }
        put(r, own ? dev : -1, MH_EV_STEP_END, 0, 0, 0, (uint32_t)s, own ? MH_EVF_DEVICE_STEP : 0);
    }
}

/* Replays the recording: a window of k steps on device 0, and no site grows. */
static void expect_no_growth(struct rec *r, uint32_t k_wanted)
{
    struct mh__growth *g = replay(r);
    struct mh__growth_entry *e;
    size_t n;
    uint32_t k;
    cr_assert_eq(mh__growth_get(g, 0, &e, &n, &k), 0);
    cr_expect_eq(k, k_wanted);
    cr_expect_eq(n, 0, "%zu site(s) grow, the first by %" PRIu64 " bytes a step", n, n ? e[0].bytes_per_step : 0);
    free(e);
    mh__growth_free(g);
}

Test(growth, a_leak_is_found_with_its_site_rate_and_first_step)
{
    struct rec r;
    rec_open(&r);
    training(&r, 0, 5, 3 * MB, 2 * MB, 0);
    struct mh__growth *g = replay(&r);
    struct mh__growth_entry *e;
    size_t n;
    uint32_t k;
    cr_assert_eq(mh__growth_get(g, 0, &e, &n, &k), 0);
    cr_expect_eq(k, 2); /* 5 steps: half of the 4 after the first */
    cr_assert_eq(n, 1, "only the leak grows (parameters, optimizer state and a filled cache do not)");
    cr_expect_eq(e[0].stack, r.stack[1]);
    cr_expect_eq(e[0].module, r.module);
    cr_expect_eq(e[0].bytes_per_step, 3 * MB);
    cr_expect_eq(e[0].live_bytes, 15 * MB);
    cr_expect_eq(e[0].first_step, 0);
    cr_expect_eq(e[0].steps_grown, 5);
    cr_expect_eq(e[0].steps, 5);
    free(e);
    mh__growth_free(g);
}

Test(growth, steady_state_is_not_growth)
{
    struct rec r;
    rec_open(&r);
    training(&r, 0, 6, 0, 2 * MB, 0);
    expect_no_growth(&r, 3);
}

Test(growth, too_few_steps_give_no_answer)
{
    struct rec r;
    rec_open(&r);
    training(&r, 0, 2, 3 * MB, 0, 0);
    struct mh__growth *g = replay(&r);
    struct mh__growth_entry *e;
    size_t n;
    uint32_t k;
    cr_assert_eq(mh__growth_get(g, 0, &e, &n, &k), 0);
    cr_expect_eq(k, 0);
    cr_expect_eq(n, 0);
    cr_expect_eq(mh__growth_window(3), 2);
    cr_expect_eq(mh__growth_window(7), 3);
    cr_expect_eq(mh__growth_window(100), 8);
    free(e);
    mh__growth_free(g);
}

/* Each device leaks its own amount and its optimizer ends its own steps;
 * allocations after device 0's last step (its tail) do not count. */
Test(growth, per_device_steps_and_the_tail)
{
    struct rec r;
    rec_open(&r);
    training(&r, 0, 4, 2 * MB, 0, 1);
    training(&r, 1, 4, 1 * MB, 0, 1);
    for (int i = 0; i < 3; i++) /* a burst in device 0's tail */
        put(&r, 0, MH_EV_ALLOC, SEG + 300 * MB + (uint64_t)i * 4 * MB, 4 * MB, r.stack[1], 0, 0);
    struct mh__growth *g = replay(&r);
    struct mh__growth_entry *e;
    size_t n;
    uint32_t k;
    cr_assert_eq(mh__growth_get(g, 0, &e, &n, &k), 0);
    cr_expect_eq(k, 2);
    cr_assert_eq(n, 1);
    cr_expect_eq(e[0].bytes_per_step, 2 * MB);
    cr_expect_eq(e[0].live_bytes, 8 * MB, "the tail's 12 MiB are not at a step end");
    cr_expect_eq(e[0].steps, 4);
    free(e);
    cr_assert_eq(mh__growth_get(g, 1, &e, &n, &k), 0);
    cr_assert_eq(n, 1);
    cr_expect_eq(e[0].bytes_per_step, 1 * MB);
    cr_expect_eq(e[0].live_bytes, 4 * MB);
    cr_expect_eq(e[0].steps, 4);
    free(e);
    mh__growth_free(g);
}

/* Each step the allocator serves the site's 1.69 MiB tensor whole from a
 * free block 184 KiB larger than the step before (a large block is split only
 * when more than 1 MiB would be left): the block grows, the tensor does not,
 * so the site is no growth. */
Test(growth, a_tensor_served_from_a_larger_block_each_step_is_no_growth)
{
    const uint64_t tensor = 1769472, slack = 188416, hole = SEG + 256 * MB;
    struct rec r;
    rec_open(&r);
    put(&r, -1, MH_EV_STEP_BEGIN, 0, 0, 0, 0, 0);
    for (int s = 0; s < 5; s++) {
        uint64_t block = tensor + (uint64_t)s * slack;
        put(&r, 0, MH_EV_ALLOC, hole, block, r.stack[2], 0, 0);
        put(&r, 0, MH_EV_ALLOC, hole + block, 512 * 1024, r.stack[3], 0, 0); /* keeps the hole apart */
        put(&r, 0, MH_EV_FREE_COMPLETED, hole, block, 0, 0, 0);
        put(&r, 0, MH_EV_ALLOC, hole, tensor, r.stack[1], 0, 0);
        put(&r, -1, MH_EV_STEP_END, 0, 0, 0, (uint32_t)s, 0);
        put(&r, 0, MH_EV_FREE_COMPLETED, hole, tensor, 0, 0, 0);
        put(&r, 0, MH_EV_FREE_COMPLETED, hole + block, 512 * 1024, 0, 0, 0);
    }
    expect_no_growth(&r, 2); /* the block grew 184 KiB a step, the tensor did not */
}
