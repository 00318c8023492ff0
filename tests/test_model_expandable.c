/* test_model_expandable.c - expandable segments replayed from SEGMENT_MAP /
 * SEGMENT_UNMAP: growth of a mapped range, reuse of freed space, unmap at
 * the end, front and middle (one segment per contiguous mapped range, as
 * torch's snapshot reports them), re-mapping a hole, pools and streams. */
#include "test_model_util.h"

#define BASE 0x7e0000000000ull
#define PG (20 * MH_MB)

static int nseg;
static struct mh_segment_view segs[8];
static int grab(void *user, const struct mh_segment_view *s)
{
    if (nseg < 8)
        segs[nseg] = *s;
    nseg++;
    return 0;
}

static void load(struct mh_model *m)
{
    nseg = 0;
    mh_model_foreach_segment(m, 0, grab, NULL);
}

static struct mh_mem_stats stats(struct mh_model *m)
{
    struct mh_mem_stats st;
    mh_model_stats(m, 0, &st);
    return st;
}

Test(expandable, map_grows_one_segment)
{
    struct mh_model *m = tmodel(NULL);
    cr_assert_eq(tapply(m, MH_EV_SEGMENT_MAP, BASE, PG), 0);
    cr_assert_eq(tapply(m, MH_EV_ALLOC, BASE, 15 * MH_MB), 0);
    cr_expect_eq(stats(m).allocated, 15 * MH_MB);
    cr_assert_eq(tapply(m, MH_EV_SEGMENT_MAP, BASE + PG, PG), 0);
    load(m);
    cr_assert_eq(nseg, 1);
    cr_expect_eq(segs[0].size, 2 * PG);
    cr_expect_eq(segs[0].expandable, 1);
    cr_expect_eq(segs[0].small_pool, 0);
    cr_expect_eq(segs[0].nblocks, 2); /* the new page merged with the free tail */
    cr_expect_eq(mh_model_largest_free(m, 0, UINT64_MAX, -1), 25 * MH_MB);
    cr_expect_eq(stats(m).reserved, 2 * PG);
    cr_expect_eq(stats(m).maps, 2);
    cr_expect_eq(stats(m).inactive_split, 0); /* excluded for expandable segments */
    tcheck_device(m, 0, 1, "grown");
    mh_model_free(m);
}

Test(expandable, unmap_middle_splits_and_remap_joins)
{
    struct mh_model *m = tmodel(NULL);
    tapply(m, MH_EV_SEGMENT_MAP, BASE, 3 * PG);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(tapply(m, MH_EV_ALLOC, BASE + i * PG, PG), 0);
    tapply(m, MH_EV_FREE_COMPLETED, BASE + PG, 0);
    cr_expect_eq(tapply(m, MH_EV_SEGMENT_UNMAP, BASE, PG), MH_ANOM_UNMAP_UNKNOWN); /* busy */
    cr_assert_eq(tapply(m, MH_EV_SEGMENT_UNMAP, BASE + PG, PG), 0);
    load(m);
    cr_assert_eq(nseg, 2);
    cr_expect_eq(segs[0].address, BASE);
    cr_expect_eq(segs[0].size, PG);
    cr_expect_eq(segs[1].address, BASE + 2 * PG);
    cr_expect_eq(segs[1].size, PG);
    cr_expect_eq(stats(m).reserved, 2 * PG);
    cr_expect_eq(stats(m).allocated, 2 * PG);
    tcheck_device(m, 0, 1, "cut");
    /* mapping the hole again joins the two ranges */
    cr_assert_eq(tapply(m, MH_EV_SEGMENT_MAP, BASE + PG, PG), 0);
    load(m);
    cr_assert_eq(nseg, 1);
    cr_expect_eq(segs[0].size, 3 * PG);
    cr_expect_eq(stats(m).segments, 1);
    tcheck_device(m, 0, 1, "joined");
    cr_assert_eq(tapply(m, MH_EV_ALLOC, BASE + PG, 10 * MH_MB), 0);
    cr_expect_eq(stats(m).allocated, 2 * PG + 10 * MH_MB); /* expandable: split at 512 B */
    tcheck_device(m, 0, 1, "reuse");
    mh_model_free(m);
}

Test(expandable, unmap_front_end_and_all)
{
    struct mh_model *m = tmodel(NULL);
    tapply(m, MH_EV_SEGMENT_MAP, BASE, 4 * PG);
    tapply(m, MH_EV_ALLOC, BASE + PG, 2 * PG);
    tapply(m, MH_EV_ALLOC, BASE + 3 * PG, PG);
    tapply(m, MH_EV_FREE_COMPLETED, BASE + 3 * PG, 0);
    cr_assert_eq(tapply(m, MH_EV_SEGMENT_UNMAP, BASE + 3 * PG, PG), 0); /* end */
    cr_assert_eq(tapply(m, MH_EV_SEGMENT_UNMAP, BASE, PG), 0);          /* front */
    load(m);
    cr_assert_eq(nseg, 1);
    cr_expect_eq(segs[0].address, BASE + PG);
    cr_expect_eq(segs[0].size, 2 * PG);
    cr_expect_eq(stats(m).unmaps, 2);
    tcheck_device(m, 0, 1, "trimmed");
    tapply(m, MH_EV_FREE_REQUESTED, BASE + PG, 0);
    cr_expect_eq(tapply(m, MH_EV_SEGMENT_UNMAP, BASE + PG, 2 * PG), MH_ANOM_UNMAP_UNKNOWN);
    tapply(m, MH_EV_FREE_COMPLETED, BASE + PG, 0);
    cr_assert_eq(tapply(m, MH_EV_SEGMENT_UNMAP, BASE + PG, 2 * PG), 0);
    load(m);
    cr_expect_eq(nseg, 0);
    cr_expect_eq(stats(m).reserved, 0);
    cr_expect_eq(stats(m).segments, 0);
    tcheck_device(m, 0, 1, "empty");
    mh_model_free(m);
}

Test(expandable, partial_page_unmap_inside_free_block)
{
    struct mh_model *m = tmodel(NULL);
    tapply(m, MH_EV_SEGMENT_MAP, BASE, 3 * PG);
    tapply(m, MH_EV_ALLOC, BASE, MH_MB * 2);
    /* free block [2 MiB, 60 MiB): unmap the last two pages only */
    cr_assert_eq(tapply(m, MH_EV_SEGMENT_UNMAP, BASE + PG, 2 * PG), 0);
    load(m);
    cr_assert_eq(nseg, 1);
    cr_expect_eq(segs[0].size, PG);
    cr_expect_eq(segs[0].nblocks, 2);
    tcheck_device(m, 0, 1, "partial");
    mh_model_free(m);
}

Test(expandable, pools_and_streams_stay_apart)
{
    struct mh_model *m = tmodel(NULL);
    struct mh_event e = tev(MH_EV_SEGMENT_MAP, BASE, 2 * MH_MB);
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    e.addr = BASE + 2 * MH_MB;
    e.stream = 7; /* adjacent but another stream: its own segment */
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0);
    load(m);
    cr_assert_eq(nseg, 2);
    cr_expect_eq(segs[0].small_pool, 1); /* 2 MiB is not a whole large page */
    cr_expect_eq(segs[1].stream, 7);
    e.addr = BASE + 4 * MH_MB;
    cr_assert_eq(mh_model_apply(m, &e, NULL), 0); /* same stream 7: extends */
    load(m);
    cr_expect_eq(nseg, 2);
    cr_expect_eq(segs[1].size, 4 * MH_MB);
    e = tev(MH_EV_SEGMENT_MAP, BASE + MH_MB, 2 * MH_MB);
    cr_expect_eq(mh_model_apply(m, &e, NULL), 0);
    cr_expect_eq(mh_model_anomaly_count(m, MH_ANOM_SEGMENT_OVERLAP), 1);
    tcheck_device(m, 0, 1, "streams");
    mh_model_free(m);
}

Test(expandable, alloc_split_small_remainder)
{
    /* once expandable segments are seen, large-pool blocks split at 512 B */
    struct mh_model *m = tmodel(NULL);
    struct mh_event e = tev(MH_EV_SEGMENT_MAP, BASE, PG);
    e.flags = MH_EVF_EXPANDABLE;
    mh_model_apply(m, &e, NULL);
    tapply(m, MH_EV_ALLOC, BASE, PG - 4096);
    cr_expect_eq(stats(m).allocated, PG - 4096);
    tcheck_device(m, 0, 1, "split");
    mh_model_free(m);
}
