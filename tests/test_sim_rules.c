/* test_sim_rules.c - one test per caching-allocator rule the simulator
 * implements (reference pytorch-allocator.md 1.10): rounding, pools,
 * segment sizes, best fit per stream, split rules, oversize blocks,
 * pending frees, release and retry before OOM, garbage collection and
 * expandable segments. Events are captured in memory. */
#include <criterion/criterion.h>
#include <string.h>

#include "memhist/error.h"
#include "sim.h"

#define MB (1024ull * 1024)
#define MAXEV 4096

struct cap {
    struct mh_event ev[MAXEV];
    size_t n;
};

static int capture(void *user, const struct mh_event *e)
{
    struct cap *c = user;
    if (c->n < MAXEV)
        c->ev[c->n++] = *e;
    return 0;
}

static struct cap C;

static struct mh__sim *make(const char *conf, uint64_t capacity, double fraction)
{
    struct mh__sim_opts o;
    struct mh__sim *s = NULL;
    char err[128];
    memset(&o, 0, sizeof o);
    cr_assert_eq(mh_alloc_conf_parse(conf, &o.conf, err, sizeof err), 0, "%s", err);
    o.conf.memory_fraction = fraction;
    o.capacity = capacity;
    o.emit = capture;
    o.emit_user = &C;
    C.n = 0;
    cr_assert_eq(mh__sim_new(&o, &s), 0);
    return s;
}

static uint64_t alloc(struct mh__sim *s, uint64_t size, uint64_t stream)
{
    uint64_t a = 0;
    cr_assert_eq(mh__sim_malloc(s, size, stream, 0, 0, &a), 0, "malloc %llu",
                 (unsigned long long)size);
    return a;
}

static size_t count(int kind)
{
    size_t n = 0;
    for (size_t i = 0; i < C.n; i++)
        n += C.ev[i].kind == kind;
    return n;
}

static const struct mh_event *last(int kind)
{
    for (size_t i = C.n; i-- > 0;)
        if (C.ev[i].kind == kind)
            return &C.ev[i];
    return NULL;
}

Test(sim_rules, rounding_512_and_power2_divisions)
{
    struct mh__sim *s = make("", 0, 0);
    uint64_t a = alloc(s, 1, 0), b = alloc(s, 513, 0);
    cr_expect_eq(mh__sim_block_size(s, a), 512);
    cr_expect_eq(mh__sim_block_size(s, b), 1024);
    cr_expect_eq(last(MH_EV_ALLOC)->size, 513, "alloc events carry the requested size");
    mh__sim_free(s);
    s = make("roundup_power2_divisions:4", 0, 0);
    a = alloc(s, 1200, 0); /* not above 512 x 4: plain 512 rounding */
    cr_expect_eq(mh__sim_block_size(s, a), 1536);
    a = alloc(s, 9000, 0); /* [8 KiB, 16 KiB) in 4 steps of 2 KiB */
    cr_expect_eq(mh__sim_block_size(s, a), 10240);
    a = alloc(s, 5 * MB + 1, 0); /* [4 MiB, 8 MiB) in 4 steps of 1 MiB */
    cr_expect_eq(mh__sim_block_size(s, a), 6 * MB);
    mh__sim_free(s);
}

Test(sim_rules, pool_choice_and_segment_sizes)
{
    struct mh__sim *s = make("", 0, 0);
    alloc(s, MB, 0); /* 1 MiB exactly: small pool, 2 MiB segment */
    const struct mh_event *seg = last(MH_EV_SEGMENT_ALLOC);
    cr_expect_eq(seg->size, 2 * MB);
    cr_expect(seg->flags & MH_EVF_POOL_KNOWN);
    cr_expect(seg->flags & MH_EVF_POOL_SMALL);
    alloc(s, MB + 1, 0); /* large pool, 20 MiB segment */
    seg = last(MH_EV_SEGMENT_ALLOC);
    cr_expect_eq(seg->size, 20 * MB);
    cr_expect_not(seg->flags & MH_EVF_POOL_SMALL);
    alloc(s, 22 * MB + 3, 0); /* >= 10 MiB: rounded to 2 MiB */
    cr_expect_eq(last(MH_EV_SEGMENT_ALLOC)->size, 24 * MB);
    cr_expect_eq(count(MH_EV_SEGMENT_ALLOC), 3);
    mh__sim_free(s);
}

Test(sim_rules, best_fit_by_size_then_address_per_stream)
{
    struct mh__sim *s = make("", 0, 0);
    uint64_t a = alloc(s, 12 * MB, 0), b = alloc(s, 14 * MB, 0), c = alloc(s, 12 * MB, 0);
    cr_assert_eq(mh__sim_free_block(s, c, 0, 0, 0), 0);
    cr_assert_eq(mh__sim_free_block(s, b, 0, 0, 0), 0);
    cr_assert_eq(mh__sim_free_block(s, a, 0, 0, 0), 0);
    /* smallest block that fits, the older segment among equal sizes */
    cr_expect_eq(alloc(s, 12 * MB, 0), a);
    cr_expect_eq(alloc(s, 13 * MB, 0), b);
    /* blocks cached on stream 0 are not used by stream 7 */
    size_t segs = count(MH_EV_SEGMENT_ALLOC);
    uint64_t d = alloc(s, 12 * MB, 7);
    cr_expect_eq(count(MH_EV_SEGMENT_ALLOC), segs + 1);
    cr_expect_eq(last(MH_EV_SEGMENT_ALLOC)->stream, 7);
    cr_expect_neq(d, a < c ? c : a);
    mh__sim_free(s);
}

Test(sim_rules, equal_sizes_prefer_the_older_segment_over_the_lower_address)
{
    /* torch 2.15 orders free blocks by (stream, size, segment age, address) */
    struct mh__sim *s = make("", 0, 0);
    uint64_t x = alloc(s, 24 * MB, 0), y = alloc(s, 24 * MB, 0);
    cr_assert_eq(mh__sim_free_block(s, x, 0, 0, 0), 0);
    cr_assert_eq(mh__sim_empty_cache(s), 0);
    uint64_t z = alloc(s, 24 * MB, 0); /* a new segment where x was */
    cr_assert_lt(z, y, "the newer segment lies below the older one");
    cr_assert_eq(mh__sim_free_block(s, y, 0, 0, 0), 0);
    cr_assert_eq(mh__sim_free_block(s, z, 0, 0, 0), 0);
    cr_expect_eq(alloc(s, 6 * MB, 0), y);
    /* the rest of y (18 MiB) is now the best fit */
    cr_expect_eq(alloc(s, 6 * MB, 0), y + 6 * MB);
    mh__sim_free(s);
}

Test(sim_rules, small_pool_splits_any_remainder_of_512)
{
    struct mh__sim *s = make("", 0, 0);
    uint64_t a = alloc(s, 1000, 0), b = alloc(s, 1000, 0);
    cr_expect_eq(b, a + 1024, "the remainder of the 2 MiB segment is split and reused");
    cr_expect_eq(count(MH_EV_SEGMENT_ALLOC), 1);
    mh__sim_free(s);
}

Test(sim_rules, large_pool_splits_only_remainders_over_1mib)
{
    struct mh__sim *s = make("", 0, 0);
    uint64_t a = alloc(s, 19 * MB + 512, 0); /* 20 MiB segment, 0.5 MiB left: not split */
    cr_expect_eq(mh__sim_block_size(s, a), 20 * MB);
    uint64_t b = alloc(s, 18 * MB, 0); /* new segment; 2 MiB left: split */
    cr_expect_eq(mh__sim_block_size(s, b), 18 * MB);
    cr_expect_eq(count(MH_EV_SEGMENT_ALLOC), 2);
    uint64_t c = alloc(s, 1536 * 1024, 0);
    cr_expect_eq(c, b + 18 * MB, "the 2 MiB remainder serves the next request");
    mh__sim_free(s);
}

Test(sim_rules, max_split_size_oversize_blocks)
{
    struct mh__sim *s = make("max_split_size_mb:40", 0, 0);
    uint64_t big = alloc(s, 60 * MB, 0);
    cr_assert_eq(mh__sim_free_block(s, big, 0, 0, 0), 0);
    /* a request below max_split never takes an oversize block */
    uint64_t small = alloc(s, 30 * MB, 0);
    cr_expect_neq(small, big);
    cr_expect_eq(count(MH_EV_SEGMENT_ALLOC), 2);
    /* an oversize request takes it (within max_non_split_rounding, 20 MiB) and does not split */
    uint64_t again = alloc(s, 50 * MB, 0);
    cr_expect_eq(again, big);
    cr_expect_eq(mh__sim_block_size(s, again), 60 * MB);
    cr_assert_eq(mh__sim_free_block(s, again, 0, 0, 0), 0);
    /* but not when the block exceeds the request by 20 MiB or more */
    uint64_t other = alloc(s, 40 * MB, 0);
    cr_expect_neq(other, big);
    mh__sim_free(s);
}

Test(sim_rules, max_non_split_rounding_widens_reuse)
{
    struct mh__sim *s = make("max_split_size_mb:40,max_non_split_rounding_mb:32", 0, 0);
    uint64_t big = alloc(s, 70 * MB, 0);
    cr_assert_eq(mh__sim_free_block(s, big, 0, 0, 0), 0);
    cr_expect_eq(alloc(s, 45 * MB, 0), big, "70 < 45 + 32: reused");
    mh__sim_free(s);
}

Test(sim_rules, pending_free_on_another_stream)
{
    struct mh__sim *s = make("", 0, 0);
    uint64_t a = alloc(s, 4 * MB, 0);
    uint64_t t = mh__sim_time(s);
    cr_assert_eq(mh__sim_free_block(s, a, 0, 1, t + 1000), 0);
    cr_expect_eq(last(MH_EV_FREE_REQUESTED)->addr, a);
    cr_expect_null(last(MH_EV_FREE_COMPLETED), "completion waits for the event");
    uint64_t b = alloc(s, 4 * MB, 0);
    cr_expect_neq(b, a, "a pending block is not reused");
    mh__sim_advance(s, 2000);
    alloc(s, 512, 0); /* the next malloc reaps the completed event first */
    const struct mh_event *fc = last(MH_EV_FREE_COMPLETED);
    cr_assert_not_null(fc);
    cr_expect_eq(fc->addr, a);
    cr_expect_eq(fc->size, 4 * MB);
    cr_expect_eq(alloc(s, 4 * MB, 0), a);
    mh__sim_free(s);
}

Test(sim_rules, release_and_retry_before_oom)
{
    struct mh__sim *s = make("", 64 * MB, 0);
    uint64_t a = alloc(s, 20 * MB, 0), b = alloc(s, 20 * MB, 0);
    cr_assert_eq(mh__sim_free_block(s, a, 0, 0, 0), 0);
    cr_assert_eq(mh__sim_free_block(s, b, 0, 0, 0), 0);
    /* 40 MiB cached, 24 MiB left: a 30 MiB request frees the cache and retries */
    uint64_t c = alloc(s, 30 * MB, 0);
    cr_expect_neq(c, 0);
    cr_expect_eq(count(MH_EV_SEGMENT_FREE), 2);
    struct mh__sim_stats st;
    mh__sim_stats(s, &st);
    cr_expect_eq(st.alloc_retries, 1);
    cr_expect_eq(st.reserved, 30 * MB);
    /* now nothing can be released: OOM with the rounded size and device free bytes */
    uint64_t d = 0;
    cr_expect_eq(mh__sim_malloc(s, 40 * MB - 100, 0, 0, 0, &d), MH_EOOM_SIM);
    const struct mh_event *oom = last(MH_EV_OOM);
    cr_assert_not_null(oom);
    cr_expect_eq(oom->size, 40 * MB - 0, "rounded request");
    cr_expect_eq(oom->addr, 34 * MB, "device free");
    mh__sim_free(s);
}

Test(sim_rules, release_available_frees_oversize_first)
{
    struct mh__sim *s = make("max_split_size_mb:20", 120 * MB, 0);
    uint64_t a = alloc(s, 80 * MB, 0), b = alloc(s, 2 * MB, 0);
    cr_assert_eq(mh__sim_free_block(s, a, 0, 0, 0), 0);
    /* the cached 80 MiB block is too big for 40 MiB (>= 40 + 20), and a new
     * segment does not fit: the oversize block is released, no full retry */
    alloc(s, 40 * MB, 0);
    struct mh__sim_stats st;
    mh__sim_stats(s, &st);
    cr_expect_eq(st.segment_frees, 1);
    cr_expect_eq(st.alloc_retries, 0);
    cr_expect_eq(last(MH_EV_SEGMENT_FREE)->addr, a, "the oversize block went, not b's segment");
    cr_expect_eq(mh__sim_block_size(s, b), 2 * MB);
    mh__sim_free(s);
}

Test(sim_rules, gc_threshold_needs_memory_fraction)
{
    /* without a fraction the threshold does nothing */
    struct mh__sim *s = make("garbage_collection_threshold:0.5", 100 * MB, 0);
    uint64_t a = alloc(s, 40 * MB, 0);
    cr_assert_eq(mh__sim_free_block(s, a, 0, 0, 0), 0);
    alloc(s, 30 * MB, 0);
    cr_expect_eq(count(MH_EV_SEGMENT_FREE), 0);
    mh__sim_free(s);
    /* with one, cached unsplit segments go once reserved passes 50 % */
    s = make("garbage_collection_threshold:0.5", 100 * MB, 1.0);
    a = alloc(s, 40 * MB, 0);
    uint64_t b = alloc(s, 20 * MB, 0);
    cr_assert_eq(mh__sim_free_block(s, a, 0, 0, 0), 0);
    alloc(s, 42 * MB, 0); /* reserved 60 MiB > 50 MiB: the old 40 MiB segment is collected */
    cr_expect_eq(count(MH_EV_SEGMENT_FREE), 1);
    cr_expect_eq(last(MH_EV_SEGMENT_FREE)->addr, a);
    (void)b;
    mh__sim_free(s);
}

Test(sim_rules, expandable_segments_map_unmap_reuse)
{
    struct mh__sim *s = make("expandable_segments:True", 1024 * MB, 0);
    uint64_t a = alloc(s, 30 * MB, 0);
    const struct mh_event *m = last(MH_EV_SEGMENT_MAP);
    cr_assert_not_null(m);
    cr_expect_eq(m->size, 40 * MB, "whole 20 MiB pages");
    cr_expect_eq(m->addr, a);
    cr_expect(m->flags & MH_EVF_EXPANDABLE);
    cr_expect_eq(count(MH_EV_SEGMENT_ALLOC), 0, "no segment_alloc for expandable segments");
    uint64_t b = alloc(s, 30 * MB, 0);
    cr_expect_eq(b, a + 30 * MB, "grows in place at the lowest address");
    cr_expect_eq(last(MH_EV_SEGMENT_MAP)->size, 20 * MB);
    cr_assert_eq(mh__sim_free_block(s, b, 0, 0, 0), 0);
    cr_expect_eq(alloc(s, 25 * MB, 0), b, "freed space is reused");
    cr_assert_eq(mh__sim_free_block(s, a, 0, 0, 0), 0);
    cr_assert_eq(mh__sim_empty_cache(s), 0);
    const struct mh_event *u = last(MH_EV_SEGMENT_UNMAP);
    cr_assert_not_null(u);
    cr_expect_eq(u->addr, a);
    cr_expect_eq(u->size, 20 * MB, "only whole free pages are unmapped");
    struct mh__sim_stats st;
    mh__sim_stats(s, &st);
    cr_expect_eq(st.reserved, 40 * MB);
    mh__sim_free(s);
}

Test(sim_rules, size_zero_and_unknown_free)
{
    struct mh__sim *s = make("", 0, 0);
    uint64_t a;
    cr_expect_eq(mh__sim_malloc(s, 0, 0, 0, 0, &a), MH_EINVAL);
    cr_expect_eq(C.n, 0, "size 0 emits nothing");
    cr_expect_eq(mh__sim_free_block(s, 12345, 0, 0, 0), MH_ENOTFOUND);
    mh__sim_free(s);
}
