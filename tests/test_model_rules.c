/* test_model_rules.c - PyTorch's sizing rules as implemented in
 * src/model/rules.c, each case taken from the reference
 * (pytorch-allocator.md 1.10): round_size with and without power-2
 * divisions, pool choice, segment sizes, the split decision, expandable page
 * sizes. */
#include <criterion/criterion.h>

#include "memhist/allocconf.h"
#include "memhist/model.h"
#include "model_int.h"

static struct mh_alloc_conf conf_of(const char *text)
{
    struct mh_alloc_conf c;
    char err[128];
    cr_assert_eq(mh_alloc_conf_parse(text, &c, err, sizeof err), 0, "%s: %s", text, err);
    return c;
}

Test(rules, round_size_default_512)
{
    struct mh_alloc_conf c = {0};
    cr_expect_eq(mh_round_size(&c, 0), 512);
    cr_expect_eq(mh_round_size(&c, 1), 512);
    cr_expect_eq(mh_round_size(&c, 511), 512);
    cr_expect_eq(mh_round_size(&c, 512), 512);
    cr_expect_eq(mh_round_size(&c, 513), 1024);
    cr_expect_eq(mh_round_size(&c, 1200), 1536);
    cr_expect_eq(mh_round_size(&c, MH_MB), MH_MB);
    cr_expect_eq(mh_round_size(&c, MH_MB + 1), MH_MB + 512);
    cr_expect_eq(mh_round_size(NULL, 1000), 1024);
}

Test(rules, power2_division_function)
{
    /* The reference's example: [1024, 2048) in 4 steps -> 1200 becomes 1280. */
    cr_expect_eq(mh__roundup_power2_division(1200, 4), 1280);
    cr_expect_eq(mh__roundup_power2_division(1024, 4), 1024); /* power of two unchanged */
    cr_expect_eq(mh__roundup_power2_division(1280, 4), 1280); /* on a division */
    cr_expect_eq(mh__roundup_power2_division(1793, 4), 2048);
    cr_expect_eq(mh__roundup_power2_division(3, 8), 4);       /* step 0 -> 2 * floor2 */
}

Test(rules, round_size_power2_divisions)
{
    struct mh_alloc_conf c = conf_of("roundup_power2_divisions:4");
    /* torch applies divisions only when size > 512 * d: 1200 <= 2048 keeps
     * plain 512 rounding. */
    cr_expect_eq(mh_round_size(&c, 1200), 1536);
    cr_expect_eq(mh_round_size(&c, 2049), 2560);
    cr_expect_eq(mh_round_size(&c, 4096), 4096);
    cr_expect_eq(mh_round_size(&c, 1200 * MH_MB), 1280 * MH_MB);
    cr_expect_eq(mh_round_size(&c, 1025 * MH_MB), 1280 * MH_MB);
    cr_expect_eq(mh_round_size(&c, 100), 512);
    struct mh_alloc_conf c8 = conf_of("roundup_power2_divisions:8");
    cr_expect_eq(mh_round_size(&c8, 5000), 5120);
    struct mh_alloc_conf c1 = conf_of("roundup_power2_divisions:1");
    cr_expect_eq(mh_round_size(&c1, 1200 * MH_MB), 1200 * MH_MB);
}

Test(rules, round_size_interval_table)
{
    struct mh_alloc_conf c = conf_of("roundup_power2_divisions:[64:8,256:4,1024:4,>:1]");
    /* index = floor(log2(size)) - 20: 64 MB -> 6; the first value fills 0..5 */
    for (int i = 0; i <= 6; i++)
        cr_expect_eq(c.roundup_power2_divisions[i], 8, "index %d", i);
    cr_expect_eq(c.roundup_power2_divisions[7], 0);
    cr_expect_eq(c.roundup_power2_divisions[8], 4);
    cr_expect_eq(c.roundup_power2_divisions[9], 0);
    cr_expect_eq(c.roundup_power2_divisions[10], 4);
    for (int i = 11; i < 16; i++)
        cr_expect_eq(c.roundup_power2_divisions[i], 1, "index %d", i);
    cr_expect_eq(mh_round_size(&c, 100 * MH_MB + 1), 104 * MH_MB);   /* [64,128): 8 steps */
    cr_expect_eq(mh_round_size(&c, 150 * MH_MB + 1), 150 * MH_MB + 512); /* [128,256): none */
    cr_expect_eq(mh_round_size(&c, 300 * MH_MB), 320 * MH_MB);       /* [256,512): 4 steps */
    cr_expect_eq(mh_round_size(&c, 3 * MH_MB + 1), 3 * MH_MB + 256 * 1024); /* [2,4): 8 steps */
    cr_expect_eq(mh_round_size(&c, 5000 * MH_MB + 1), 5000 * MH_MB + 512);  /* >: 1 */
    cr_expect_eq(mh__conf_divisions(&c, 100), 8);            /* below 1 MiB uses index 0 */
    cr_expect_eq(mh__conf_divisions(&c, 64 * MH_GB), 1);     /* 32 GiB and up use index 15 */
}

Test(rules, pool_by_size)
{
    cr_expect(mh_is_small_size(512));
    cr_expect(mh_is_small_size(MH_MB));
    cr_expect(!mh_is_small_size(MH_MB + 512));
}

Test(rules, allocation_size)
{
    struct mh_alloc_conf c = {0};
    cr_expect_eq(mh_allocation_size(&c, 512), 2 * MH_MB);
    cr_expect_eq(mh_allocation_size(&c, MH_MB), 2 * MH_MB);
    cr_expect_eq(mh_allocation_size(&c, MH_MB + 512), 20 * MH_MB);
    cr_expect_eq(mh_allocation_size(&c, 10 * MH_MB - 512), 20 * MH_MB);
    cr_expect_eq(mh_allocation_size(&c, 10 * MH_MB), 10 * MH_MB);
    cr_expect_eq(mh_allocation_size(&c, 11 * MH_MB + 512), 12 * MH_MB);
    cr_expect_eq(mh_allocation_size(&c, 100 * MH_MB), 100 * MH_MB);
    struct mh_alloc_conf big = conf_of("large_segment_size_mb:40");
    cr_expect_eq(mh_allocation_size(&big, 2 * MH_MB), 40 * MH_MB);
    cr_expect_eq(mh_allocation_size(&big, 512), 2 * MH_MB);
    cr_expect_eq(mh_conf_large_segment(&big), 40 * MH_MB);
    cr_expect_eq(mh_conf_large_segment(&c), 20 * MH_MB);
}

Test(rules, split_small_pool)
{
    struct mh_alloc_conf c = {0};
    cr_expect(mh_should_split(&c, 1, 0, 2 * MH_MB, 2 * MH_MB - 512)); /* remaining 512 */
    cr_expect(!mh_should_split(&c, 1, 0, 2 * MH_MB, 2 * MH_MB));
    cr_expect(mh_should_split(&c, 1, 0, 2 * MH_MB, 512));
}

Test(rules, split_large_pool_keeps_small_leftovers)
{
    struct mh_alloc_conf c = {0};
    /* remaining exactly 1 MiB: not split, it is rounding waste */
    cr_expect(!mh_should_split(&c, 0, 0, 20 * MH_MB, 19 * MH_MB));
    cr_expect(mh_should_split(&c, 0, 0, 20 * MH_MB, 19 * MH_MB - 512));
    cr_expect(!mh_should_split(&c, 0, 0, 20 * MH_MB, 20 * MH_MB - 512));
}

Test(rules, split_max_split_size)
{
    struct mh_alloc_conf c = conf_of("max_split_size_mb:64");
    cr_expect_eq(mh_conf_max_split(&c), 64 * MH_MB);
    cr_expect(!mh_should_split(&c, 0, 0, 200 * MH_MB, 64 * MH_MB));
    cr_expect(mh_should_split(&c, 0, 0, 200 * MH_MB, 63 * MH_MB));
    struct mh_alloc_conf d = {0};
    cr_expect_eq(mh_conf_max_split(&d), UINT64_MAX);
    cr_expect(mh_should_split(&d, 0, 0, 200 * MH_MB, 64 * MH_MB));
}

Test(rules, split_expandable)
{
    struct mh_alloc_conf c = {0};
    cr_expect(mh_should_split(&c, 0, 1, 20 * MH_MB, 20 * MH_MB - 512));
    cr_expect(!mh_should_split(&c, 0, 1, 20 * MH_MB, 20 * MH_MB));
}

Test(rules, expandable_page_size)
{
    struct mh_alloc_conf c = {0};
    cr_expect_eq(mh_expandable_page_size(&c, 1), 2 * MH_MB);
    cr_expect_eq(mh_expandable_page_size(&c, 0), 20 * MH_MB);
    struct mh_alloc_conf big = conf_of("large_segment_size_mb:64");
    cr_expect_eq(mh_expandable_page_size(&big, 0), 64 * MH_MB);
}

Test(rules, non_split_rounding_default)
{
    struct mh_alloc_conf c = {0};
    cr_expect_eq(mh_conf_max_non_split_rounding(&c), 20 * MH_MB);
    struct mh_alloc_conf d = conf_of("max_non_split_rounding_mb:64");
    cr_expect_eq(mh_conf_max_non_split_rounding(&d), 64 * MH_MB);
}
