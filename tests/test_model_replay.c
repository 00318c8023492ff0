/* test_model_replay.c - hand-written caching-allocator sequences replayed by
 * the model: segments, allocations with splits and rounding waste, merges,
 * pending frees (allocated vs active), pool choice, and anomalies that are
 * counted and skipped while the state keeps tiling. */
#include "test_model_util.h"

#define BASE 0x7f0000000000ull

static struct mh_segment_view first_seg;
static int grab_first(void *user, const struct mh_segment_view *s)
{
    first_seg = *s;
    return 1;
}

static struct mh_segment_view seg_at(struct mh_model *m, int dev)
{
    memset(&first_seg, 0, sizeof first_seg);
    mh_model_foreach_segment(m, dev, grab_first, NULL);
    return first_seg;
}

static struct mh_block_view blocks[16];
static int nblocks;
static int grab_block(void *user, const struct mh_segment_view *s, const struct mh_block_view *b)
{
    if (nblocks < 16)
        blocks[nblocks] = *b;
    nblocks++;
    return 0;
}

static void load_blocks(struct mh_model *m)
{
    nblocks = 0;
    mh_model_foreach_block(m, 0, grab_block, NULL);
}

Test(replay, small_pool_split_and_merge)
{
    struct mh_model *m = tmodel(NULL);
    struct mh_mem_stats st;
    cr_assert_eq(tapply(m, MH_EV_SEGMENT_ALLOC, BASE, 2 * MH_MB), 0);
    cr_expect_eq(seg_at(m, 0).small_pool, 1);
    cr_assert_eq(tapply(m, MH_EV_ALLOC, BASE, 1000), 0);
    cr_assert_eq(tapply(m, MH_EV_ALLOC, BASE + 1024, 512), 0);
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.allocated, 1536);
    cr_expect_eq(st.requested, 1512);
    cr_expect_eq(st.active, 1536);
    cr_expect_eq(st.reserved, 2 * MH_MB);
    cr_expect_eq(st.inactive_split, 2 * MH_MB - 1536);
    load_blocks(m);
    cr_assert_eq(nblocks, 3);
    cr_expect_eq(blocks[0].size, 1024);
    cr_expect_eq(blocks[0].requested, 1000);
    cr_expect_eq(blocks[2].state, MH_BLOCK_INACTIVE);
    tcheck_device(m, 0, 1, "after allocs");
    cr_assert_eq(tapply(m, MH_EV_FREE_COMPLETED, BASE, 1000), 0);
    load_blocks(m);
    cr_expect_eq(nblocks, 3); /* the next block is still allocated: no merge */
    tcheck_device(m, 0, 1, "after first free");
    cr_assert_eq(tapply(m, MH_EV_FREE_COMPLETED, BASE + 1024, 512), 0);
    load_blocks(m);
    cr_expect_eq(nblocks, 1);
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.inactive_split, 0);
    cr_expect_eq(st.allocated, 0);
    tcheck_device(m, 0, 1, "after merge");
    cr_assert_eq(tapply(m, MH_EV_SEGMENT_FREE, BASE, 2 * MH_MB), 0);
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.reserved, 0);
    cr_expect_eq(st.segments, 0);
    cr_expect_eq(st.segment_allocs, 1);
    cr_expect_eq(st.segment_frees, 1);
    mh_model_free(m);
}

Test(replay, large_pool_rounding_waste)
{
    struct mh_model *m = tmodel(NULL);
    struct mh_mem_stats st;
    tapply(m, MH_EV_SEGMENT_ALLOC, BASE, 20 * MH_MB);
    cr_expect_eq(seg_at(m, 0).small_pool, 0);
    /* 19 MiB + 100 rounds to 19 MiB + 512; the 1 MiB - 512 left is waste */
    cr_assert_eq(tapply(m, MH_EV_ALLOC, BASE, 19 * MH_MB + 100), 0);
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.allocated, 20 * MH_MB);
    cr_expect_eq(st.requested, 19 * MH_MB + 100);
    tapply(m, MH_EV_FREE_COMPLETED, BASE, 0);
    cr_assert_eq(tapply(m, MH_EV_ALLOC, BASE, 15 * MH_MB), 0);
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.allocated, 15 * MH_MB);
    cr_expect_eq(st.inactive_split, 5 * MH_MB);
    tcheck_device(m, 0, 1, "large");
    mh_model_free(m);
}

Test(replay, max_split_size_never_splits_oversize)
{
    struct mh_model *m = tmodel("max_split_size_mb:20");
    struct mh_mem_stats st;
    tapply(m, MH_EV_SEGMENT_ALLOC, BASE, 40 * MH_MB);
    tapply(m, MH_EV_ALLOC, BASE, 25 * MH_MB);
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.allocated, 40 * MH_MB);
    tapply(m, MH_EV_FREE_COMPLETED, BASE, 0);
    tapply(m, MH_EV_ALLOC, BASE, 5 * MH_MB); /* below max_split: splits */
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.allocated, 5 * MH_MB);
    tcheck_device(m, 0, 1, "max_split");
    mh_model_free(m);
}

Test(replay, pool_from_flags)
{
    struct mh_model *m = tmodel(NULL);
    struct mh_event e = tev(MH_EV_SEGMENT_ALLOC, BASE, 2 * MH_MB);
    e.flags = MH_EVF_POOL_KNOWN;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    cr_expect_eq(seg_at(m, 0).small_pool, 0);
    struct mh_event f = tev(MH_EV_SEGMENT_ALLOC, BASE + 64 * MH_MB, 20 * MH_MB);
    f.flags = MH_EVF_POOL_KNOWN | MH_EVF_POOL_SMALL;
    f.device = 1;
    f.stream = 9;
    f.pool[0] = 3;
    cr_assert_eq(mh_model_apply(m, &f, NULL), 0);
    struct mh_segment_view s = seg_at(m, 1);
    cr_expect_eq(s.small_pool, 1);
    cr_expect_eq(s.stream, 9);
    cr_expect_eq(s.pool[0], 3);
    cr_expect_eq(mh_model_device_count(m), 2);
    cr_expect_eq(mh_model_device_at(m, 1), 1);
    mh_model_free(m);
}

Test(replay, pending_free_allocated_vs_active)
{
    struct mh_model *m = tmodel(NULL);
    struct mh_mem_stats st;
    tapply(m, MH_EV_SEGMENT_ALLOC, BASE, 2 * MH_MB);
    tapply(m, MH_EV_ALLOC, BASE, 4096);
    cr_assert_eq(tapply(m, MH_EV_FREE_REQUESTED, BASE, 4096), 0);
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.allocated, 0);
    cr_expect_eq(st.active, 4096);
    cr_expect_eq(st.requested, 4096);
    load_blocks(m);
    cr_expect_eq(blocks[0].state, MH_BLOCK_PENDING_FREE);
    tcheck_device(m, 0, 1, "pending");
    /* the block is not free yet: reusing it is an overlap */
    cr_expect_eq(tapply(m, MH_EV_ALLOC, BASE, 512), MH_ANOM_ALLOC_OVERLAP);
    cr_expect_eq(tapply(m, MH_EV_FREE_REQUESTED, BASE, 4096), MH_ANOM_FREE_UNKNOWN);
    cr_assert_eq(tapply(m, MH_EV_FREE_COMPLETED, BASE, 4096), 0);
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.active, 0);
    cr_expect_eq(st.requested, 0);
    cr_expect_eq(st.frees, 1);
    tcheck_device(m, 0, 1, "completed");
    mh_model_free(m);
}

Test(replay, apply_result_deltas)
{
    struct mh_model *m = tmodel(NULL);
    struct mh_event e = tev(MH_EV_SEGMENT_ALLOC, BASE, 2 * MH_MB);
    struct mh_apply_result r;
    mh_model_apply(m, &e, &r);
    cr_expect_eq(r.reserved_delta, 2 * MH_MB);
    e = tev(MH_EV_ALLOC, BASE, 700);
    e.stack = 42;
    mh_model_apply(m, &e, &r);
    cr_expect_eq(r.allocated_delta, 1024);
    cr_expect_eq(r.block_size, 1024);
    cr_expect_eq(r.block_stack, 42);
    e = tev(MH_EV_FREE_REQUESTED, BASE, 700);
    mh_model_apply(m, &e, &r);
    cr_expect_eq(r.allocated_delta, -1024);
    e = tev(MH_EV_FREE_COMPLETED, BASE, 700);
    mh_model_apply(m, &e, &r);
    cr_expect_eq(r.allocated_delta, 0);
    cr_expect_eq(r.block_stack, 42);
    e = tev(MH_EV_SEGMENT_FREE, BASE, 2 * MH_MB);
    mh_model_apply(m, &e, &r);
    cr_expect_eq(r.reserved_delta, -(int64_t)(2 * MH_MB));
    cr_expect_eq(mh_model_event_count(m), 5);
    mh_model_free(m);
}

Test(replay, alloc_inside_free_block)
{
    struct mh_model *m = tmodel(NULL);
    tapply(m, MH_EV_SEGMENT_ALLOC, BASE, 2 * MH_MB);
    cr_assert_eq(tapply(m, MH_EV_ALLOC, BASE + 8192, 512), 0);
    load_blocks(m);
    cr_expect_eq(nblocks, 3);
    cr_expect_eq(blocks[0].size, 8192);
    cr_expect_eq(blocks[0].state, MH_BLOCK_INACTIVE);
    tcheck_device(m, 0, 1, "inside");
    mh_model_free(m);
}

Test(replay, anomalies_keep_state_tiling)
{
    struct mh_model *m = tmodel(NULL);
    struct mh_mem_stats st;
    tapply(m, MH_EV_SEGMENT_ALLOC, BASE, 2 * MH_MB);
    tapply(m, MH_EV_ALLOC, BASE, 1024);
    cr_expect_eq(tapply(m, MH_EV_FREE_COMPLETED, BASE + 512, 0), MH_ANOM_FREE_UNKNOWN);
    cr_expect_eq(tapply(m, MH_EV_FREE_COMPLETED, BASE + 4096, 0), MH_ANOM_FREE_UNKNOWN);
    cr_expect_eq(tapply(m, MH_EV_ALLOC, BASE + 64 * MH_MB, 512), MH_ANOM_ALLOC_OUTSIDE_SEGMENT);
    cr_expect_eq(tapply(m, MH_EV_ALLOC, BASE, 512), MH_ANOM_ALLOC_OVERLAP);
    cr_expect_eq(tapply(m, MH_EV_ALLOC, BASE + 512, 512), MH_ANOM_ALLOC_OVERLAP);
    cr_expect_eq(tapply(m, MH_EV_ALLOC, BASE + 2048, 4 * MH_MB), MH_ANOM_ALLOC_OVERLAP);
    tcheck_device(m, 0, 1, "alloc anomalies");
    cr_expect_eq(tapply(m, MH_EV_SEGMENT_ALLOC, BASE + MH_MB, 2 * MH_MB), MH_ANOM_SEGMENT_OVERLAP);
    cr_expect_eq(tapply(m, MH_EV_SEGMENT_ALLOC, BASE - MH_MB, 2 * MH_MB), MH_ANOM_SEGMENT_OVERLAP);
    cr_expect_eq(tapply(m, MH_EV_SEGMENT_ALLOC, BASE, 0), MH_ANOM_BAD_SIZE);
    cr_expect_eq(tapply(m, MH_EV_SEGMENT_ALLOC, UINT64_MAX - 100, 2 * MH_MB), MH_ANOM_BAD_SIZE);
    cr_expect_eq(tapply(m, MH_EV_SEGMENT_FREE, BASE + 4096, 0), MH_ANOM_SEGMENT_FREE_UNKNOWN);
    cr_expect_eq(tapply(m, MH_EV_SEGMENT_UNMAP, BASE + 4096, 4096), MH_ANOM_UNMAP_UNKNOWN);
    tcheck_device(m, 0, 1, "segment anomalies");
    struct mh_event e = tev(MH_EV_ALLOC, BASE, 512);
    struct mh_apply_result r;
    e.device = 300;
    mh_model_apply(m, &e, &r);
    cr_expect_eq(r.anomaly, MH_ANOM_BAD_DEVICE);
    e.device = -1;
    mh_model_apply(m, &e, &r);
    cr_expect_eq(r.anomaly, MH_ANOM_BAD_DEVICE);
    /* a segment freed while a block lives: counted, still applied */
    cr_expect_eq(tapply(m, MH_EV_SEGMENT_FREE, BASE, 2 * MH_MB), MH_ANOM_SEGMENT_FREE_BUSY);
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.allocated, 0);
    cr_expect_eq(st.reserved, 0);
    cr_expect_eq(st.active, 0);
    tcheck_device(m, 0, 1, "busy free");
    cr_expect_eq(mh_model_anomaly_count(m, MH_ANOM_FREE_UNKNOWN), 2);
    cr_expect_eq(mh_model_anomaly_count(m, MH_ANOM_ALLOC_OVERLAP), 3);
    cr_expect_eq(mh_model_anomaly_count(m, MH_ANOM_SEGMENT_OVERLAP), 2);
    cr_expect_eq(mh_model_anomaly_count(m, MH_ANOM_BAD_DEVICE), 2);
    cr_expect_eq(mh_model_anomaly_count(m, MH_ANOM_SEGMENT_FREE_BUSY), 1);
    cr_expect_eq(mh_model_anomaly_count(m, 999), 0);
    cr_expect_str_eq(mh_anomaly_name(MH_ANOM_FREE_UNKNOWN), "free of an unknown address");
    cr_expect_str_eq(mh_anomaly_name(-5), "unknown");
    mh_model_free(m);
}

Test(replay, driver_allocations_outside)
{
    struct mh_model *m = tmodel(NULL);
    struct mh_mem_stats st;
    struct mh_event e = tev(MH_EV_DRIVER_ALLOC, BASE, 20 * MH_MB);
    e.aux = MH_MEM_DEVICE;
    mh_model_apply(m, &e, NULL); /* cudaMalloc seen before torch's segment_alloc */
    e = tev(MH_EV_DRIVER_ALLOC, BASE + 512 * MH_MB, 64 * MH_MB);
    e.aux = MH_MEM_DEVICE; /* NCCL buffer */
    mh_model_apply(m, &e, NULL);
    e = tev(MH_EV_DRIVER_ALLOC, 0x1000, 4096);
    e.aux = MH_MEM_PINNED; /* host memory: not tracked */
    mh_model_apply(m, &e, NULL);
    e = tev(MH_EV_DRIVER_ALLOC, 0x2000, 4096);
    e.aux = MH_MEM_PINNED;
    e.device = -1; /* as the CUPTI source writes host memory: no device's, no anomaly */
    mh_model_apply(m, &e, NULL);
    e.kind = MH_EV_DRIVER_FREE;
    mh_model_apply(m, &e, NULL);
    cr_expect_eq(mh_model_anomaly_count(m, MH_ANOM_BAD_DEVICE), 0);
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.driver_outside, 84 * MH_MB);
    tapply(m, MH_EV_SEGMENT_ALLOC, BASE, 20 * MH_MB);
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.driver_outside, 64 * MH_MB);
    e = tev(MH_EV_DRIVER_ALLOC, BASE + 2 * MH_MB, MH_MB); /* inside a live segment */
    e.aux = MH_MEM_VMM;
    mh_model_apply(m, &e, NULL);
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.driver_outside, 64 * MH_MB);
    e = tev(MH_EV_DRIVER_FREE, BASE + 512 * MH_MB, 0);
    e.aux = MH_MEM_DEVICE;
    mh_model_apply(m, &e, NULL);
    e = tev(MH_EV_DRIVER_FREE, BASE, 0);
    e.aux = MH_MEM_DEVICE;
    mh_model_apply(m, &e, NULL);
    mh_model_stats(m, 0, &st);
    cr_expect_eq(st.driver_outside, 0);
    mh_model_free(m);
}

Test(replay, block_metadata)
{
    struct mh_model *m = tmodel(NULL);
    tapply(m, MH_EV_SEGMENT_ALLOC, BASE, 2 * MH_MB);
    struct mh_event e = tev(MH_EV_PHASE, 0, 0);
    e.aux = MH_PHASE_BACKWARD;
    mh_model_apply(m, &e, NULL);
    e = tev(MH_EV_ALLOC, BASE, 512);
    e.stack = 7;
    e.str = 9;
    e.time_ns = 1234;
    e.stream = 5;
    e.flags = MH_EVF_PREEXISTING;
    mh_model_apply(m, &e, NULL);
    load_blocks(m);
    cr_expect_eq(blocks[0].stack, 7);
    cr_expect_eq(blocks[0].str, 9);
    cr_expect_eq(blocks[0].alloc_time_ns, 1234);
    cr_expect_eq(blocks[0].alloc_phase, MH_PHASE_BACKWARD);
    cr_expect_eq(blocks[0].alloc_step, -1);
    cr_expect_eq(blocks[0].stream, 5);
    cr_expect_eq(mh_model_current_phase(m), MH_PHASE_BACKWARD);
    mh_model_free(m);
}

Test(replay, null_and_unknown_queries)
{
    struct mh_mem_stats st;
    struct mh_peak p;
    cr_expect_eq(mh_model_new(NULL, NULL), MH_EINVAL);
    mh_model_free(NULL);
    struct mh_model *m = tmodel(NULL);
    cr_expect_eq(mh_model_stats(m, 3, &st), MH_ENOTFOUND);
    cr_expect_eq(mh_model_peak_allocated(m, 3, &p), MH_ENOTFOUND);
    cr_expect_eq(mh_model_step_count(m, 3), 0);
    cr_expect_eq(mh_model_largest_free(m, 3, UINT64_MAX, -1), 0);
    cr_expect_eq(mh_model_apply(m, NULL, NULL), MH_EINVAL);
    struct mh_event e = tev(MH_EV_KERNEL, 0, 0);
    cr_expect_eq(mh_model_apply(m, &e, NULL), 0);
    e.kind = 200;
    cr_expect_eq(mh_model_apply(m, &e, NULL), 0);
    cr_expect_eq(mh_model_device_count(m), 0);
    mh_model_free(m);
}
