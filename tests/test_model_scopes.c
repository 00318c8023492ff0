/* test_model_scopes.c - module scopes per thread (MH_EV_SCOPE_ENTER/EXIT)
 * in the replay model: allocations without metadata take the innermost open
 * scope of their own thread, exits close everything opened after them, and
 * the set-up before the first STEP_BEGIN is kept apart from step 0. */
#include "test_model_util.h"

#define BASE 0x7d0000000000ull

static void scope(struct mh_model *m, int enter, uint32_t name, uint32_t thread)
{
    struct mh_event e = tev(enter ? MH_EV_SCOPE_ENTER : MH_EV_SCOPE_EXIT, 0, 0);
    e.str = name;
    e.thread = thread;
    e.device = -1;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
}

static void alloc_on(struct mh_model *m, uint64_t addr, uint32_t thread, uint32_t str)
{
    struct mh_event e = tev(MH_EV_ALLOC, addr, MH_MB);
    e.thread = thread;
    e.str = str;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
}

struct find {
    uint64_t addr;
    uint32_t str;
    int found;
};

static int find_block(void *user, const struct mh_segment_view *seg, const struct mh_block_view *b)
{
    (void)seg;
    struct find *f = user;
    if (b->address == f->addr && b->state == MH_BLOCK_ALLOCATED) {
        f->str = b->str;
        f->found = 1;
    }
    return 0;
}

static uint32_t module_of(struct mh_model *m, uint64_t addr)
{
    struct find f = {addr, 0, 0};
    mh_model_foreach_block(m, 0, find_block, &f);
    cr_assert(f.found, "no block at %#llx", (unsigned long long)addr);
    return f.str;
}

Test(scopes, allocations_take_the_innermost_scope_of_their_thread)
{
    struct mh_model *m = tmodel(NULL);
    struct mh_event seg = tev(MH_EV_SEGMENT_ALLOC, BASE, 20 * MH_MB);
    cr_assert_eq(mh_model_apply(m, &seg, NULL), 0);
    scope(m, 1, 10, 100); /* main thread: GPT */
    scope(m, 1, 11, 100); /*   transformer.h.0 */
    scope(m, 1, 20, 200); /* autograd thread: lm_head backward */
    alloc_on(m, BASE, 100, 0);
    alloc_on(m, BASE + MH_MB, 200, 0);
    alloc_on(m, BASE + 2 * MH_MB, 100, 99); /* user metadata wins */
    alloc_on(m, BASE + 3 * MH_MB, 300, 0);  /* a thread with no scope */
    cr_expect_eq(module_of(m, BASE), 11);
    cr_expect_eq(module_of(m, BASE + MH_MB), 20);
    cr_expect_eq(module_of(m, BASE + 2 * MH_MB), 99);
    cr_expect_eq(module_of(m, BASE + 3 * MH_MB), 0);
    cr_expect_eq(mh_model_scope(m, 100), 11);
    scope(m, 1, 12, 100);
    scope(m, 0, 11, 100); /* closes 12 too */
    cr_expect_eq(mh_model_scope(m, 100), 10);
    scope(m, 0, 77, 100); /* exit of nothing open: ignored */
    cr_expect_eq(mh_model_scope(m, 100), 10);
    scope(m, 0, 10, 100);
    cr_expect_eq(mh_model_scope(m, 100), 0);
    cr_expect_eq(mh_model_scope(m, 200), 20);
    mh_model_free(m);
}

Test(scopes, setup_before_the_first_step_begin_is_kept_apart)
{
    struct mh_model *m = tmodel(NULL);
    struct mh_event e = tev(MH_EV_SEGMENT_ALLOC, BASE, 20 * MH_MB);
    e.time_ns = 10;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    e = tev(MH_EV_ALLOC, BASE, 6 * MH_MB); /* parameters */
    e.time_ns = 20;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    e = tev(MH_EV_STEP_BEGIN, 0, 0);
    e.time_ns = 1000;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    e = tev(MH_EV_ALLOC, BASE + 6 * MH_MB, 2 * MH_MB);
    e.time_ns = 1010;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    e = tev(MH_EV_STEP_END, 0, 0);
    e.time_ns = 1020;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    mh_model_finish(m);
    struct mh_step_stats setup, s0;
    cr_assert_eq(mh_model_setup(m, 0, &setup), 0);
    cr_expect_eq(setup.step, -1);
    cr_expect_eq(setup.end_ns, 1000);
    cr_expect_eq(setup.peak_allocated, 6 * MH_MB);
    cr_assert_eq(mh_model_step_count(m, 0), 1);
    cr_assert_eq(mh_model_step(m, 0, 0, &s0), 0);
    cr_expect_eq(s0.step, 0);
    cr_expect_eq(s0.begin_ns, 1000);
    cr_expect_eq(s0.peak_allocated, 8 * MH_MB);
    cr_expect_eq(s0.segment_allocs, 0, "the set-up's segment is not step 0's");
    mh_model_free(m);
}

Test(scopes, no_setup_when_the_first_marker_is_a_step_end)
{
    struct mh_model *m = tmodel(NULL);
    struct mh_event e = tev(MH_EV_SEGMENT_ALLOC, BASE, 20 * MH_MB);
    e.time_ns = 10;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    e = tev(MH_EV_STEP_END, 0, 0);
    e.time_ns = 20;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    mh_model_finish(m);
    struct mh_step_stats setup;
    cr_expect_eq(mh_model_setup(m, 0, &setup), MH_ENOTFOUND);
    mh_model_free(m);
}

Test(scopes, the_first_step_opened_again_makes_what_came_before_setup)
{
    struct mh_model *m = tmodel(NULL);
    struct mh_event e = tev(MH_EV_STEP_BEGIN, 0, 0); /* the recorder's start */
    e.time_ns = 5;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    e = tev(MH_EV_SEGMENT_ALLOC, BASE, 20 * MH_MB);
    e.time_ns = 10;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    e = tev(MH_EV_ALLOC, BASE, 6 * MH_MB);
    e.time_ns = 20;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    e = tev(MH_EV_STEP_BEGIN, 0, 0); /* the model's first forward */
    e.time_ns = 1000;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    e = tev(MH_EV_ALLOC, BASE + 6 * MH_MB, 512);
    e.time_ns = 1010;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    e = tev(MH_EV_STEP_END, 0, 0);
    e.time_ns = 1020;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    e = tev(MH_EV_STEP_BEGIN, 1, 0); /* a later STEP_BEGIN of a closed step number: a step */
    e.time_ns = 1030;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    mh_model_finish(m);
    struct mh_step_stats setup, s0;
    cr_assert_eq(mh_model_setup(m, 0, &setup), 0);
    cr_expect_eq(setup.begin_ns, 5);
    cr_expect_eq(setup.end_ns, 1000);
    cr_expect_eq(setup.segment_allocs, 1);
    cr_assert_eq(mh_model_step(m, 0, 0, &s0), 0);
    cr_expect_eq(s0.step, 0);
    cr_expect_eq(s0.begin_ns, 1000);
    cr_expect_eq(s0.segment_allocs, 0);
    mh_model_free(m);
}
