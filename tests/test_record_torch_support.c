/* test_record_torch_support.c - the torch-independent parts of the torch
 * bridge: tick-clock calibration, step range names, refused settings,
 * attach options, op stacks per recorder, which optimizer steps end
 * training steps. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memhist/error.h"
#include "memhist/optsteps.h"
#include "memhist/recorder.h"
#include "memhist/torch.h"
#include "torch_support.h"

Test(torch_support, fit_recovers_scale_and_offset_despite_an_outlier)
{
    uint64_t ticks[41], ns[41];
    for (int i = 0; i < 41; i++) {
        ticks[i] = 1000000 + (uint64_t)i * 3000;           /* 3 GHz counter */
        ns[i] = 1700000000000000000ull + (uint64_t)i * 1000; /* 1 us apart */
    }
    ns[7] += 250000; /* a preempted reading */
    struct mh__tick_fit f;
    cr_assert_eq(mh__tick_fit(ticks, ns, 41, &f), 0);
    cr_assert_float_eq(f.scale, 1.0 / 3.0, 1e-9);
    cr_assert_eq(mh__tick_to_ns(&f, ticks[20]), ns[20]);
    cr_assert_eq(mh__tick_to_ns(&f, 1000000 + 3000 * 100), 1700000000000000000ull + 100000);
}

Test(torch_support, fit_needs_enough_increasing_readings)
{
    uint64_t same[8] = {5, 5, 5, 5, 5, 5, 5, 5};
    struct mh__tick_fit f;
    cr_assert_eq(mh__tick_fit(same, same, 3, &f), MH_EINVAL);
    cr_assert_eq(mh__tick_fit(same, same, 8, &f), MH_EINVAL);
}

Test(torch_support, refine_bends_the_fit_without_a_jump)
{
    /* A 3 GHz counter; the old fit's slope is 1e-5 too steep, so 10 s after
     * its anchor it reads 100 us ahead of the real clock. */
    const uint64_t ns0 = 1700000000000000000ull, ten_s = 10000000000ull;
    struct mh__tick_fit old = {.scale = 1.0 / 3.0 * (1 + 1e-5), .ticks0 = 1000, .ns0 = ns0};
    uint64_t t = 1000 + 3 * ten_s, n = ns0 + ten_s;
    struct mh__tick_fit g;
    cr_assert_eq(mh__tick_fit_refine(&old, 1.0 / 3.0, t, n, ten_s, &g), 0);
    cr_assert_eq(mh__tick_to_ns(&g, t), mh__tick_to_ns(&old, t), "continuous where it takes over");
    int64_t ahead = (int64_t)(mh__tick_to_ns(&old, t) - n);
    cr_assert(ahead > 99000 && ahead < 101000, "the old fit was %lld ns ahead", (long long)ahead);
    for (uint64_t dt = 1; dt < 3000000; dt = dt * 3 + 1) /* never reads back, in the first ms */
        cr_assert_geq(mh__tick_to_ns(&g, t + dt), mh__tick_to_ns(&g, t + dt - 1));
    int64_t after = (int64_t)(mh__tick_to_ns(&g, t + 3 * ten_s) - (n + ten_s));
    cr_assert(after > -10 && after < 10, "on the real clock one horizon later: %lld ns off",
              (long long)after);
    cr_assert_eq(mh__tick_fit_refine(&old, 0.0, t, n, ten_s, &g), MH_EINVAL);
    cr_assert_eq(mh__tick_fit_refine(&old, 1.0 / 3.0, t, n + ten_s, ten_s, &g), MH_EINVAL,
                 "an offset of a whole horizon is refused");
}

Test(torch_support, range_names_that_mark_steps)
{
    int64_t step = -1;
    cr_assert_eq(mh__range_kind("ProfilerStep#12", &step), MH__RANGE_PROFILER_STEP);
    cr_assert_eq(step, 12);
    cr_assert_eq(mh__range_kind("Optimizer.step#AdamW.step", &step), MH__RANGE_OPTIMIZER_STEP);
    cr_assert_eq(mh__range_kind("Optimizer.zero_grad#AdamW.zero_grad", &step), MH__RANGE_OTHER);
    cr_assert_eq(mh__range_kind("Optimizer.step#", &step), MH__RANGE_OTHER);
    cr_assert_eq(mh__range_kind("aten::mm", &step), MH__RANGE_OTHER);
}

Test(torch_support, refuses_settings_without_a_trace_hook)
{
    char why[256];
    unsetenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
    setenv("PYTORCH_ALLOC_CONF", "expandable_segments:True", 1);
    setenv("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync", 1);
    cr_assert_eq(mh__torch_env_check(why, sizeof why), MH_EUNSUPPORTED);
    cr_assert(strstr(why, "PYTORCH_CUDA_ALLOC_CONF selects backend:cudaMallocAsync"));
    cr_assert_str_eq(mh__torch_alloc_conf_env(), "expandable_segments:True");
    unsetenv("PYTORCH_CUDA_ALLOC_CONF");
    cr_assert_eq(mh__torch_env_check(why, sizeof why), 0);
    setenv("PYTORCH_NO_CUDA_MEMORY_CACHING", "1", 1);
    cr_assert_eq(mh__torch_env_check(why, sizeof why), MH_EUNSUPPORTED);
    cr_assert(strstr(why, "PYTORCH_NO_CUDA_MEMORY_CACHING"));
}

Test(torch_support, attach_options_bound_stacks_and_frames)
{
    char why[256] = "";
    struct mh_torch_opts o = {0};
    cr_assert_eq(mh__torch_opts_check(NULL, why, sizeof why), 0);
    cr_assert_eq(mh__torch_opts_check(&o, why, sizeof why), 0, "all zero: the defaults");
    o.max_frames = MH_TORCH_FRAMES_MAX;
    cr_assert_eq(mh__torch_opts_check(&o, why, sizeof why), 0);
    o.max_frames = 1;
    cr_assert_eq(mh__torch_opts_check(&o, why, sizeof why), 0);
    o.max_frames = MH_TORCH_FRAMES_MAX + 1;
    cr_assert_eq(mh__torch_opts_check(&o, why, sizeof why), MH_EINVAL);
    cr_assert(strstr(why, "frames"), "%s", why);
    o.max_frames = -1;
    cr_assert_eq(mh__torch_opts_check(&o, why, sizeof why), MH_EINVAL);
    o.max_frames = 0;
    o.stacks = MH_TORCH_STACKS_ALL + 1;
    cr_assert_eq(mh__torch_opts_check(&o, why, sizeof why), MH_EINVAL);
    cr_assert(strstr(why, "stacks"), "%s", why);
}

Test(torch_support, op_names_are_the_names_torch_shows)
{
    char buf[64];
    cr_expect_str_eq(mh__torch_op_short("torch::autograd::generated::MmBackward0", buf, sizeof buf),
                     "MmBackward0");
    cr_expect_str_eq(mh__torch_op_short("torch::autograd::AccumulateGrad", buf, sizeof buf),
                     "AccumulateGrad");
    cr_expect_str_eq(mh__torch_op_short("torch::autograd::CppNode<Foo::Bar>", buf, sizeof buf),
                     "CppNode");
    cr_expect_str_eq(mh__torch_op_short("PyNode", buf, sizeof buf), "PyNode");
    cr_expect_str_eq(mh__torch_op_short("", buf, sizeof buf), "unknown op");
    char tiny[5];
    cr_expect_str_eq(mh__torch_op_short("a::LongBackward0", tiny, sizeof tiny), "Long");
}

static int ops_named;
static void name_mm(uint64_t token, char *buf, size_t cap)
{
    (void)token;
    ops_named++;
    snprintf(buf, cap, "torch::autograd::generated::MmBackward0");
}

static struct mh_recorder *open_recorder(char *path)
{
    strcpy(path, "/tmp/mh_test_ops_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    struct mh_recorder *rec;
    struct mh_recorder_opts o = {.source = "recorded"};
    cr_assert_eq(mh_recorder_open(path, &o, &rec), 0);
    return rec;
}

/* A recorder opened after another was closed may get its address: the op
 * stacks interned for the first must not be handed to the second. Opens
 * recorders until one reuses an earlier one's address. */
Test(torch_support, op_stacks_belong_to_their_recorder)
{
    enum { TRIES = 64 };
    const void *seen[TRIES];
    uint64_t last_serial = 0;
    int reused = 0;
    const uint64_t token = 2 | 8; /* an op token */
    for (int i = 0; i < TRIES && !reused; i++) {
        char path[64];
        struct mh_recorder *rec = open_recorder(path);
        for (int j = 0; j < i; j++)
            reused |= seen[j] == (const void *)rec;
        seen[i] = rec;
        cr_expect_gt(mh_recorder_serial(rec), last_serial);
        last_serial = mh_recorder_serial(rec);
        ops_named = 0;
        cr_assert_gt(mh__torch_op_stack(rec, token, name_mm), 0);
        cr_assert_gt(mh__torch_op_stack(rec, token, name_mm), 0);
        cr_expect_eq(ops_named, 1, "recorder %d: the op was named %d times", i, ops_named);
        cr_assert_eq(mh_recorder_close(rec), 0);
        unlink(path);
    }
    if (!reused) /* ASan's quarantine, for one, never hands an address back this soon */
        cr_skip_test("no recorder reused an address in %d openings", TRIES);
}

/* Which optimizer steps end a training step (memhist/optsteps.h). */
Test(torch_support, only_the_first_optimizer_ends_steps_on_its_devices)
{
    struct mh_opt_steps st;
    mh_opt_steps_reset(&st);
    for (int iteration = 0; iteration < 3; iteration++) {
        uint64_t a = 1, b = 1;
        cr_assert_eq(mh_opt_steps_end(&st, 0xA, &a), 1, "iteration %d", iteration);
        cr_assert_eq(a, 1);
        cr_assert_eq(mh_opt_steps_end(&st, 0xB, &b), 0, "iteration %d", iteration);
        cr_assert_eq(b, 0);
    }
    uint64_t both = 3; /* A on devices 0 and 1: key on 0 already, first on 1 */
    cr_assert_eq(mh_opt_steps_end(&st, 0xA, &both), 1);
    cr_assert_eq(both, 3);
    uint64_t other = 2;
    cr_assert_eq(mh_opt_steps_end(&st, 0xB, &other), 0);
}

Test(torch_support, an_optimizer_stepping_twice_between_key_steps_becomes_the_key)
{
    struct mh_opt_steps st;
    mh_opt_steps_reset(&st);
    uint64_t d = 0; /* devices unknown */
    cr_assert_eq(mh_opt_steps_end(&st, 0xA, &d), 1);
    cr_assert_eq(mh_opt_steps_end(&st, 0xB, &d), 0);
    cr_assert_eq(mh_opt_steps_end(&st, 0xB, &d), 1, "A stopped stepping: B's second step ends the step");
    cr_assert_eq(mh_opt_steps_end(&st, 0xB, &d), 1, "and B is the key now");
    cr_assert_eq(mh_opt_steps_end(&st, 0xA, &d), 0);
    cr_assert_eq(d, 0);
}

Test(torch_support, a_new_optimizer_ends_steps_once_the_key_is_gone)
{
    struct mh_opt_steps st;
    mh_opt_steps_reset(&st);
    for (uint64_t o = 1; o <= 4; o++) { /* a new optimizer each iteration */
        uint64_t d = 1;
        cr_assert_eq(mh_opt_steps_end(&st, o, &d), 1, "optimizer %llu", (unsigned long long)o);
        mh_opt_steps_forget(&st, o);
    }
    uint64_t d = 1;
    cr_assert_eq(mh_opt_steps_end(&st, 9, &d), 1);
    mh_opt_steps_forget(&st, 7); /* another one gone: the key stays */
    cr_assert_eq(mh_opt_steps_end(&st, 8, &d), 0);
}

Test(torch_support, unidentified_optimizers_end_every_step)
{
    struct mh_opt_steps st;
    mh_opt_steps_reset(&st);
    uint64_t d = 1;
    cr_assert_eq(mh_opt_steps_end(&st, 0xA, &d), 1);
    for (int i = 0; i < 3; i++) {
        d = 1;
        cr_assert_eq(mh_opt_steps_end(&st, 0, &d), 1);
        cr_assert_eq(d, 1);
    }
}

Test(torch_support, many_optimizers_per_iteration_still_end_steps)
{
    struct mh_opt_steps st;
    mh_opt_steps_reset(&st);
    uint64_t d = 4;
    cr_assert_eq(mh_opt_steps_end(&st, 1, &d), 1);
    int ended = 0;
    for (uint64_t o = 2; o < 2 + 2 * MH_OPT_SEEN; o++) {
        d = 4;
        ended += mh_opt_steps_end(&st, o, &d);
    }
    cr_assert_geq(ended, 1, "more optimizers than the slot keeps: a step ends");
}
