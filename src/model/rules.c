/* rules.c - PyTorch caching-allocator sizing rules (reference
 * pytorch-allocator.md section 1.10): request rounding, pool choice, segment
 * sizes, the split decision and expandable page sizes. Pure functions of an
 * mh_alloc_conf; the model uses them to replay a trace and the simulator to
 * make the allocator's own decisions. Owns nothing. */
#include <stdint.h>

#include "memhist/allocconf.h"
#include "model_int.h"

#define MIN_BLOCK 512ull             /* kMinBlockSize */
#define SMALL_SIZE (1ull * MH_MB)    /* kSmallSize */
#define SMALL_BUFFER (2ull * MH_MB)  /* kSmallBuffer */
#define LARGE_BUFFER (20ull * MH_MB) /* kLargeBuffer (default large segment) */
#define MIN_LARGE_ALLOC (10ull * MH_MB)
#define ROUND_LARGE (2ull * MH_MB)

static unsigned floor_log2(uint64_t v)
{
    return 63u - (unsigned)__builtin_clzll(v);
}

static uint64_t round_up(uint64_t v, uint64_t unit)
{
    return (v + unit - 1) / unit * unit;
}

uint64_t mh_conf_max_split(const struct mh_alloc_conf *conf)
{
    return conf && conf->max_split_size ? conf->max_split_size : UINT64_MAX;
}

uint64_t mh_conf_max_non_split_rounding(const struct mh_alloc_conf *conf)
{
    return conf && conf->max_non_split_rounding ? conf->max_non_split_rounding : LARGE_BUFFER;
}

uint64_t mh_conf_large_segment(const struct mh_alloc_conf *conf)
{
    return conf && conf->large_segment_size ? conf->large_segment_size : LARGE_BUFFER;
}

/* Divisions configured for the size class of `size`: the table index is
 * floor(log2(size)) - 20, clamped to [0, 15]. */
unsigned mh__conf_divisions(const struct mh_alloc_conf *conf, uint64_t size)
{
    if (!conf || size == 0)
        return 0;
    unsigned lg = floor_log2(size);
    unsigned idx = lg < 20 ? 0 : lg - 20;
    if (idx > 15)
        idx = 15;
    return conf->roundup_power2_divisions[idx];
}

/* Next power-of-2 division at or above `size`: [2^k, 2^(k+1)) is cut into
 * `divisions` equal steps (divisions taken as its floor power of two).
 * 1200 with 4 divisions gives 1280; a power of two is returned unchanged. */
uint64_t mh__roundup_power2_division(uint64_t size, unsigned divisions)
{
    if (size == 0 || (size & (size - 1)) == 0 || divisions == 0)
        return size;
    uint64_t floor2 = 1ull << floor_log2(size);
    uint64_t step = floor2 >> floor_log2(divisions);
    if (step == 0)
        return floor2 << 1;
    uint64_t down = size & ~(step - 1);
    return down == size ? size : down + step;
}

/* torch's round_size: below 512 -> 512; power-2 divisions only when d > 1
 * and size > 512 * d; otherwise a multiple of 512. */
uint64_t mh_round_size(const struct mh_alloc_conf *conf, uint64_t size)
{
    if (size < MIN_BLOCK)
        return MIN_BLOCK;
    unsigned d = mh__conf_divisions(conf, size);
    if (d > 1 && size > MIN_BLOCK * d)
        return mh__roundup_power2_division(size, d);
    if (size > UINT64_MAX - MIN_BLOCK)
        return size;
    return round_up(size, MIN_BLOCK);
}

int mh_is_small_size(uint64_t rounded)
{
    return rounded <= SMALL_SIZE;
}

/* torch's get_allocation_size, with the large segment configurable. A
 * configured large segment smaller than the request falls back to 2 MiB
 * rounding so the segment always holds the request. */
uint64_t mh_allocation_size(const struct mh_alloc_conf *conf, uint64_t rounded)
{
    if (rounded <= SMALL_SIZE)
        return SMALL_BUFFER;
    uint64_t large = mh_conf_large_segment(conf);
    if (rounded < MIN_LARGE_ALLOC && large >= rounded)
        return large;
    if (rounded > UINT64_MAX - ROUND_LARGE)
        return rounded;
    return round_up(rounded, ROUND_LARGE);
}

/* torch's should_split. The small pool and expandable segments split any
 * remainder of at least 512 B; the large pool splits only requests below
 * max_split_size that leave more than 1 MiB, so smaller leftovers stay in
 * the block as rounding waste. */
int mh_should_split(const struct mh_alloc_conf *conf, int small_pool, int expandable,
                    uint64_t block_size, uint64_t rounded)
{
    if (block_size <= rounded)
        return 0;
    uint64_t remaining = block_size - rounded;
    if (small_pool || expandable)
        return remaining >= MIN_BLOCK;
    return rounded < mh_conf_max_split(conf) && remaining > SMALL_SIZE;
}

uint64_t mh_expandable_page_size(const struct mh_alloc_conf *conf, int small_pool)
{
    return small_pool ? SMALL_BUFFER : mh_conf_large_segment(conf);
}
