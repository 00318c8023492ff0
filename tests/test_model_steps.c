/* test_model_steps.c - steps, peaks, per-step statistics, retries and OOM
 * records of the replay model. */
#include "test_model_util.h"

#define BASE 0x7d0000000000ull

static void at(struct mh_model *m, uint64_t t, unsigned kind, uint64_t addr, uint64_t size,
               uint32_t aux)
{
    struct mh_event e = tev(kind, addr, size);
    e.time_ns = t;
    e.aux = aux;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
}

static struct mh_step_stats step(struct mh_model *m, size_t i)
{
    struct mh_step_stats s;
    cr_assert_eq(mh_model_step(m, 0, i, &s), 0);
    return s;
}

Test(steps, only_step_end_markers)
{
    struct mh_model *m = tmodel(NULL);
    at(m, 10, MH_EV_SEGMENT_ALLOC, BASE, 20 * MH_MB, 0);
    at(m, 20, MH_EV_ALLOC, BASE, 4 * MH_MB, 0);
    at(m, 30, MH_EV_STEP_END, 0, 0, 0);
    cr_expect_eq(mh_model_current_step(m), 1);
    at(m, 40, MH_EV_ALLOC, BASE + 4 * MH_MB, 8 * MH_MB, 0);
    at(m, 50, MH_EV_FREE_COMPLETED, BASE + 4 * MH_MB, 0, 0);
    at(m, 60, MH_EV_STEP_END, 0, 0, 1);
    at(m, 70, MH_EV_ALLOC, BASE + 4 * MH_MB, 2 * MH_MB, 0);
    mh_model_finish(m);
    cr_assert_eq(mh_model_step_count(m, 0), 2); /* what follows the last marker is the tail */
    struct mh_step_stats s0 = step(m, 0), s1 = step(m, 1), s2;
    cr_assert_eq(mh_model_tail(m, 0, &s2), 0);
    cr_expect_eq(s0.step, 0);
    cr_expect_eq(s0.begin_ns, 10);
    cr_expect_eq(s0.end_ns, 30);
    cr_expect_eq(s0.peak_allocated, 4 * MH_MB);
    cr_expect_eq(s0.peak_reserved, 20 * MH_MB);
    cr_expect_eq(s0.segment_allocs, 1);
    cr_expect_eq(s0.allocs, 1);
    cr_expect_eq(s1.step, 1);
    cr_expect_eq(s1.begin_ns, 40);
    cr_expect_eq(s1.end_ns, 60);
    cr_expect_eq(s1.peak_allocated, 12 * MH_MB);
    cr_expect_eq(s1.end_allocated, 4 * MH_MB);
    cr_expect_eq(s1.frees, 1);
    cr_expect_eq(s1.segments_at_end, 1);
    /* reserved peak moment: reserved 20 MiB with allocated at its highest */
    cr_expect_eq(s1.allocated_at_reserved_peak, 12 * MH_MB);
    cr_expect_float_eq(s1.fragmentation, 1.0 - 12.0 / 20.0, 1e-9);
    cr_expect_eq(s1.largest_free_at_reserved_peak, 8 * MH_MB);
    cr_expect_eq(s1.inactive_split_at_reserved_peak, 8 * MH_MB);
    cr_expect_eq(s2.step, 2);
    cr_expect_eq(s2.begin_ns, 70);
    cr_expect_eq(s2.end_ns, 70);
    struct mh_peak p;
    mh_model_peak_allocated(m, 0, &p);
    cr_expect_eq(p.value, 12 * MH_MB);
    cr_expect_eq(p.time_ns, 40);
    cr_expect_eq(p.step, 1);
    cr_expect_eq(p.event_index, 3);
    mh_model_peak_reserved(m, 0, &p);
    cr_expect_eq(p.value, 20 * MH_MB);
    cr_expect_eq(p.step, 0); /* set before the first marker, relabelled */
    cr_expect_eq(p.event_index, 0);
    mh_model_free(m);
}

Test(steps, begin_end_markers_and_setup)
{
    struct mh_model *m = tmodel(NULL);
    at(m, 5, MH_EV_SEGMENT_ALLOC, BASE, 2 * MH_MB, 0);
    at(m, 6, MH_EV_ALLOC, BASE, 512, 0);
    cr_expect_eq(mh_model_current_step(m), -1);
    at(m, 10, MH_EV_STEP_BEGIN, 0, 0, 7);
    at(m, 11, MH_EV_ALLOC, BASE + 512, 512, 0);
    at(m, 12, MH_EV_STEP_END, 0, 0, 7);
    at(m, 20, MH_EV_STEP_BEGIN, 0, 0, 8);
    at(m, 21, MH_EV_FREE_COMPLETED, BASE, 0, 0);
    mh_model_finish(m);
    cr_assert_eq(mh_model_step_count(m, 0), 1); /* setup (step -1) and tail are not listed */
    struct mh_step_stats s0 = step(m, 0), s1;
    cr_assert_eq(mh_model_tail(m, 0, &s1), 0);
    cr_expect_eq(s0.step, 7);
    cr_expect_eq(s0.begin_ns, 10);
    cr_expect_eq(s0.peak_allocated, 1024);
    cr_expect_eq(s0.allocs, 1);
    cr_expect_eq(s1.step, 8);
    cr_expect_eq(s1.end_ns, 21);
    cr_expect_eq(s1.end_allocated, 512);
    struct mh_peak p;
    mh_model_peak_allocated(m, 0, &p);
    cr_expect_eq(p.step, 7);
    mh_model_peak_reserved(m, 0, &p);
    cr_expect_eq(p.step, -1);
    cr_expect_eq(p.time_ns, 5);
    mh_model_free(m);
}

Test(steps, retries_after_release_burst)
{
    struct mh_model *m = tmodel(NULL);
    at(m, 1, MH_EV_STEP_BEGIN, 0, 0, 0);
    at(m, 2, MH_EV_SEGMENT_ALLOC, BASE, 20 * MH_MB, 0);
    at(m, 3, MH_EV_SEGMENT_ALLOC, BASE + 20 * MH_MB, 20 * MH_MB, 0);
    at(m, 4, MH_EV_SEGMENT_FREE, BASE, 20 * MH_MB, 0);
    at(m, 5, MH_EV_SEGMENT_FREE, BASE + 20 * MH_MB, 20 * MH_MB, 0);
    at(m, 6, MH_EV_SEGMENT_ALLOC, BASE, 40 * MH_MB, 0);
    at(m, 7, MH_EV_ALLOC, BASE, 40 * MH_MB, 0);
    at(m, 8, MH_EV_SEGMENT_ALLOC, BASE + 40 * MH_MB, 2 * MH_MB, 0); /* no burst before */
    at(m, 9, MH_EV_STEP_END, 0, 0, 0);
    struct mh_step_stats s = step(m, 0);
    cr_expect_eq(s.retries, 1);
    cr_expect_eq(s.segment_frees, 2);
    cr_expect_eq(s.segment_allocs, 4);
    mh_model_free(m);
}

Test(steps, oom_info)
{
    struct mh_model *m = tmodel(NULL);
    struct mh_event e = tev(MH_EV_SEGMENT_ALLOC, BASE, 20 * MH_MB);
    e.stream = 3;
    mh_model_apply(m, &e, NULL);
    e = tev(MH_EV_SEGMENT_ALLOC, BASE + 64 * MH_MB, 40 * MH_MB);
    e.stream = 4;
    mh_model_apply(m, &e, NULL);
    e = tev(MH_EV_SEGMENT_ALLOC, BASE + 128 * MH_MB, 2 * MH_MB);
    e.stream = 3;
    mh_model_apply(m, &e, NULL);
    tapply(m, MH_EV_ALLOC, BASE, 6 * MH_MB);
    at(m, 100, MH_EV_STEP_END, 0, 0, 4);
    e = tev(MH_EV_OOM, 123 * MH_MB, 30 * MH_MB);
    e.stream = 3;
    e.stack = 77;
    e.time_ns = 200;
    mh_model_apply(m, &e, NULL);
    cr_assert_eq(mh_model_oom_count(m), 1);
    struct mh_oom_info o;
    cr_assert_eq(mh_model_oom(m, 0, &o), 0);
    cr_expect_eq(o.request, 30 * MH_MB);
    cr_expect_eq(o.device_free, 123 * MH_MB);
    cr_expect_eq(o.allocated, 6 * MH_MB);
    cr_expect_eq(o.reserved, 62 * MH_MB);
    cr_expect_eq(o.largest_free_same_stream, 14 * MH_MB); /* large pool, stream 3 */
    cr_expect_eq(o.largest_free_any, 40 * MH_MB);
    cr_expect_eq(o.step, 5);
    cr_expect_eq(o.stack, 77);
    cr_expect_eq(o.time_ns, 200);
    cr_expect_eq(o.stream, 3);
    cr_expect_eq(o.event_index, 5);
    cr_expect_eq(mh_model_largest_free(m, 0, 3, 1), 2 * MH_MB);
    cr_expect_eq(mh_model_largest_free(m, 0, UINT64_MAX, 0), 40 * MH_MB);
    cr_expect_eq(mh_model_oom(m, 1, &o), MH_ENOTFOUND);
    mh_model_finish(m);
    struct mh_step_stats tail;
    cr_assert_eq(mh_model_step_count(m, 0), 1);
    cr_assert_eq(mh_model_tail(m, 0, &tail), 0); /* the OOM came after the last step */
    cr_expect_eq(tail.step, 5);
    cr_expect_eq(tail.ooms, 1);
    struct mh_mem_stats st;
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.ooms, 1);
    mh_model_free(m);
}

Test(steps, fragmentation_at_reserved_peak)
{
    struct mh_model *m = tmodel(NULL);
    at(m, 1, MH_EV_STEP_BEGIN, 0, 0, 0);
    at(m, 2, MH_EV_STEP_END, 0, 0, 0);
    cr_expect_eq(mh_model_step_count(m, 0), 0); /* no device seen yet */
    at(m, 3, MH_EV_SEGMENT_ALLOC, BASE, 2 * MH_MB, 0);
    at(m, 4, MH_EV_SEGMENT_FREE, BASE, 2 * MH_MB, 0);
    at(m, 5, MH_EV_STEP_END, 0, 0, 1);
    cr_assert_eq(mh_model_step_count(m, 0), 1);
    struct mh_step_stats s = step(m, 0);
    cr_expect_eq(s.step, 1);
    cr_expect_eq(s.peak_reserved, 2 * MH_MB);
    cr_expect_float_eq(s.fragmentation, 1.0, 1e-9);
    at(m, 6, MH_EV_STEP_END, 0, 0, 2); /* nothing happened on the device: not its step */
    cr_assert_eq(mh_model_step_count(m, 0), 1);
    at(m, 7, MH_EV_OOM, 0, 4 * MH_MB, 0); /* a step with nothing reserved */
    at(m, 8, MH_EV_STEP_END, 0, 0, 2);
    cr_assert_eq(mh_model_step_count(m, 0), 2);
    s = step(m, 1);
    cr_expect_eq(s.step, 2);
    cr_expect_eq(s.peak_reserved, 0);
    cr_expect_float_eq(s.fragmentation, 0.0, 1e-9);
    mh_model_finish(m);
    cr_expect_eq(mh_model_step_count(m, 0), 2);
    mh_model_free(m);
}

/* An event on device `dev`; a STEP_END with `own` set names its device. */
static void on(struct mh_model *m, int dev, uint64_t t, unsigned kind, uint64_t addr, uint64_t size,
               uint32_t aux, int own)
{
    struct mh_event e = tev(kind, addr, size);
    e.time_ns = t;
    e.aux = aux;
    e.device = (int16_t)dev;
    e.flags = own ? MH_EVF_DEVICE_STEP : 0;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
}

/* One process, a model on each of two devices, four iterations: each
 * Optimizer.step ends a step on its own device only. */
Test(steps, device_markers_give_each_device_its_steps)
{
    struct mh_model *m = tmodel(NULL);
    on(m, 0, 1, MH_EV_SEGMENT_ALLOC, BASE, 20 * MH_MB, 0, 0);
    on(m, 1, 2, MH_EV_SEGMENT_ALLOC, BASE, 20 * MH_MB, 0, 0);
    on(m, -1, 5, MH_EV_STEP_BEGIN, 0, 0, 0, 0); /* the first forward */
    uint64_t t = 10;
    for (uint32_t i = 0; i < 4; i++) { /* forward and backward of both, then each optimizer */
        for (int dev = 0; dev < 2; dev++)
            on(m, dev, t++, MH_EV_ALLOC, BASE, (uint64_t)(dev + 1) * (i + 1) * MH_MB, 0, 0);
        for (int dev = 0; dev < 2; dev++)
            on(m, dev, t++, MH_EV_FREE_COMPLETED, BASE, 0, 0, 0);
        for (int dev = 0; dev < 2; dev++) {
            on(m, dev, t++, MH_EV_ALLOC, BASE, 512, 0, 0);
            on(m, dev, t++, MH_EV_FREE_COMPLETED, BASE, 0, 0, 0);
            on(m, dev, t++, MH_EV_STEP_END, 0, 0, i, 1);
        }
    }
    on(m, 0, t++, MH_EV_ALLOC, BASE, 8 * MH_MB, 0, 0); /* after the last step */
    cr_expect_eq(mh_model_device_step(m, 0), 4);
    cr_expect_eq(mh_model_device_step(m, 1), 4);
    mh_model_finish(m);
    for (int dev = 0; dev < 2; dev++) {
        cr_assert_eq(mh_model_step_count(m, dev), 4, "device %d", dev);
        for (size_t i = 0; i < 4; i++) {
            struct mh_step_stats s;
            cr_assert_eq(mh_model_step(m, dev, i, &s), 0);
            cr_expect_eq(s.step, (int64_t)i);
            cr_expect_eq(s.allocs, 2);
            cr_expect_eq(s.peak_allocated, (uint64_t)(dev + 1) * (i + 1) * MH_MB);
        }
    }
    struct mh_step_stats tail;
    cr_assert_eq(mh_model_tail(m, 0, &tail), 0);
    cr_expect_eq(tail.step, 4);
    cr_expect_eq(tail.peak_allocated, 8 * MH_MB);
    cr_expect_eq(mh_model_tail(m, 1, &tail), MH_ENOTFOUND); /* nothing after its last step */
    struct mh_peak p;
    mh_model_peak_allocated(m, 1, &p);
    cr_expect_eq(p.step, 3); /* device 1's own step, not a process-wide count */
    mh_model_peak_allocated(m, 0, &p);
    cr_expect_eq(p.step, 4); /* in the tail */
    mh_model_free(m);
}

/* Old files: markers for every device; a device that did nothing in a
 * period has no step there. */
Test(steps, idle_periods_are_not_a_devices_steps)
{
    struct mh_model *m = tmodel(NULL);
    uint64_t t = 1;
    for (uint32_t i = 0; i < 8; i++) {
        int dev = (int)(i % 2);
        on(m, dev, t++, MH_EV_SEGMENT_ALLOC, BASE + i * 32 * MH_MB, 2 * MH_MB, 0, 0);
        on(m, -1, t++, MH_EV_STEP_END, 0, 0, i, 0);
    }
    mh_model_finish(m);
    for (int dev = 0; dev < 2; dev++) {
        cr_assert_eq(mh_model_step_count(m, dev), 4, "device %d", dev);
        for (size_t i = 0; i < 4; i++) {
            struct mh_step_stats s;
            cr_assert_eq(mh_model_step(m, dev, i, &s), 0);
            cr_expect_eq(s.step, (int64_t)(2 * i + (size_t)dev));
            cr_expect_eq(s.segment_allocs, 1);
        }
    }
    mh_model_free(m);
}

/* A step marker's device field without the flag means nothing (earlier
 * writers left it 0): the step is every device's. */
Test(steps, unflagged_device_field_is_for_every_device)
{
    struct mh_model *m = tmodel(NULL);
    on(m, 0, 1, MH_EV_SEGMENT_ALLOC, BASE, 2 * MH_MB, 0, 0);
    on(m, 1, 2, MH_EV_SEGMENT_ALLOC, BASE, 2 * MH_MB, 0, 0);
    on(m, 0, 3, MH_EV_STEP_END, 0, 0, 0, 0);
    mh_model_finish(m);
    cr_expect_eq(mh_model_step_count(m, 0), 1);
    cr_expect_eq(mh_model_step_count(m, 1), 1);
    mh_model_free(m);
}

/* Steps only opened (STEP_BEGIN, no STEP_END): the last one is a step. */
Test(steps, begin_only_markers_keep_the_last_step)
{
    struct mh_model *m = tmodel(NULL);
    for (uint32_t i = 0; i < 3; i++) {
        on(m, -1, 10 * i + 1, MH_EV_STEP_BEGIN, 0, 0, i, 0);
        on(m, 0, 10 * i + 2, MH_EV_SEGMENT_ALLOC, BASE + i * 32 * MH_MB, 2 * MH_MB, 0, 0);
    }
    mh_model_finish(m);
    struct mh_step_stats tail;
    cr_expect_eq(mh_model_step_count(m, 0), 3);
    cr_expect_eq(mh_model_tail(m, 0, &tail), MH_ENOTFOUND);
    mh_model_free(m);
}
