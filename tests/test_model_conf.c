/* test_model_conf.c - the PYTORCH_CUDA_ALLOC_CONF parser and formatter
 * (src/model/allocconf.c): accepted keys and values, errors that name the
 * bad key or value, ignored keys, backends, and format -> parse round trips. */
#include <criterion/criterion.h>
#include <string.h>

#include "memhist/allocconf.h"
#include "memhist/error.h"

static int parse(const char *text, struct mh_alloc_conf *c, char *err)
{
    return mh_alloc_conf_parse(text, c, err, 160);
}

static void expect_error(const char *text, int code, const char *needle)
{
    struct mh_alloc_conf c;
    char err[160];
    memset(&c, 0x5a, sizeof c);
    cr_expect_eq(parse(text, &c, err), code, "%s", text);
    cr_expect(strstr(err, needle) != NULL, "'%s' -> '%s' lacks '%s'", text, err, needle);
    unsigned char *p = (unsigned char *)&c;
    cr_expect_eq(p[0], 0x5a, "output changed on error");
}

Test(conf, defaults)
{
    struct mh_alloc_conf c, zero;
    char err[160];
    memset(&zero, 0, sizeof zero);
    cr_assert_eq(parse(NULL, &c, err), 0);
    cr_expect(memcmp(&c, &zero, sizeof c) == 0);
    cr_assert_eq(parse("", &c, err), 0);
    cr_expect(memcmp(&c, &zero, sizeof c) == 0);
    char buf[64];
    cr_expect_eq(mh_alloc_conf_format(&c, buf, sizeof buf), 0);
    cr_expect_str_eq(buf, "");
}

Test(conf, sizes_in_mb)
{
    struct mh_alloc_conf c;
    char err[160];
    cr_assert_eq(parse("max_split_size_mb:128,max_non_split_rounding_mb:256,"
                       "large_segment_size_mb:40",
                       &c, err),
                 0, "%s", err);
    cr_expect_eq(c.max_split_size, 128 * MH_MB);
    cr_expect_eq(c.max_non_split_rounding, 256 * MH_MB);
    cr_expect_eq(c.large_segment_size, 40 * MH_MB);
    cr_assert_eq(parse("max_split_size_mb:20", &c, err), 0);
    cr_expect_eq(c.max_split_size, 20 * MH_MB);
}

Test(conf, max_split_too_small)
{
    expect_error("max_split_size_mb:19", MH_ECONFIG, "max_split_size_mb");
    expect_error("max_split_size_mb:abc", MH_ECONFIG, "abc");
    expect_error("max_split_size_mb:-5", MH_ECONFIG, "max_split_size_mb");
    expect_error("max_non_split_rounding_mb:1", MH_ECONFIG, "max_non_split_rounding_mb");
}

Test(conf, gc_threshold)
{
    struct mh_alloc_conf c;
    char err[160];
    cr_assert_eq(parse("garbage_collection_threshold:0.6", &c, err), 0, "%s", err);
    cr_expect_float_eq(c.garbage_collection_threshold, 0.6, 1e-12);
    expect_error("garbage_collection_threshold:0", MH_ECONFIG, "garbage_collection_threshold");
    expect_error("garbage_collection_threshold:1.0", MH_ECONFIG, "garbage_collection_threshold");
    expect_error("garbage_collection_threshold:x", MH_ECONFIG, "'x'");
}

Test(conf, expandable)
{
    struct mh_alloc_conf c;
    char err[160];
    cr_assert_eq(parse("expandable_segments:True", &c, err), 0);
    cr_expect_eq(c.expandable_segments, 1);
    cr_assert_eq(parse("expandable_segments:False", &c, err), 0);
    cr_expect_eq(c.expandable_segments, 0);
    expect_error("expandable_segments:true", MH_ECONFIG, "expandable_segments");
    expect_error("expandable_segments", MH_ECONFIG, "expandable_segments");
}

Test(conf, roundup_single_and_list)
{
    struct mh_alloc_conf c;
    char err[160];
    cr_assert_eq(parse("roundup_power2_divisions:4", &c, err), 0);
    for (int i = 0; i < 16; i++)
        cr_expect_eq(c.roundup_power2_divisions[i], 4);
    cr_assert_eq(parse("roundup_power2_divisions:[256:4,>:2]", &c, err), 0, "%s", err);
    for (int i = 0; i <= 8; i++)
        cr_expect_eq(c.roundup_power2_divisions[i], 4);
    for (int i = 9; i < 16; i++)
        cr_expect_eq(c.roundup_power2_divisions[i], 2);
    cr_assert_eq(parse("roundup_power2_divisions:[1:2,65536:8]", &c, err), 0, "%s", err);
    cr_expect_eq(c.roundup_power2_divisions[0], 2);
    cr_expect_eq(c.roundup_power2_divisions[15], 8); /* keys past 32 GB clamp */
    cr_expect_eq(c.roundup_power2_divisions[14], 0);
}

Test(conf, roundup_errors)
{
    expect_error("roundup_power2_divisions:3", MH_ECONFIG, "roundup_power2_divisions");
    expect_error("roundup_power2_divisions:[100:4]", MH_ECONFIG, "'100'");
    expect_error("roundup_power2_divisions:[64:3]", MH_ECONFIG, "'3'");
    expect_error("roundup_power2_divisions:[64:4", MH_ECONFIG, "roundup_power2_divisions");
    expect_error("roundup_power2_divisions:[64:4;128:2]", MH_ECONFIG, "roundup_power2_divisions");
}

Test(conf, ignored_keys_and_spaces)
{
    struct mh_alloc_conf c;
    char err[160];
    cr_assert_eq(parse(" expandable_segments : True , pinned_use_background_threads:True,"
                       "release_lock_on_cudamalloc:False,pinned_use_cuda_host_register:True,"
                       "pinned_num_register_threads:8,graph_capture_record_stream_reuse:True,"
                       "backend:native",
                       &c, err),
                 0, "%s", err);
    cr_expect_eq(c.expandable_segments, 1);
    expect_error("pinned_num_register_threads:many", MH_ECONFIG, "pinned_num_register_threads");
    expect_error("release_lock_on_cudamalloc:1", MH_ECONFIG, "release_lock_on_cudamalloc");
}

Test(conf, backends_and_unknown_keys)
{
    expect_error("backend:cudaMallocAsync", MH_EUNSUPPORTED, "cudaMallocAsync");
    expect_error("backend:other", MH_ECONFIG, "other");
    expect_error("max_split_size_mb:64,bogus_key:1", MH_ECONFIG, "bogus_key");
    expect_error("max_split_size_mb:64 max", MH_ECONFIG, "max_split_size_mb");
    struct mh_alloc_conf c;
    cr_expect_eq(mh_alloc_conf_parse("bogus:1", &c, NULL, 0), MH_ECONFIG);
    cr_expect_eq(mh_alloc_conf_parse("", NULL, NULL, 0), MH_EINVAL);
}

Test(conf, format_canonical)
{
    struct mh_alloc_conf c;
    char err[160], buf[256];
    cr_assert_eq(parse("max_split_size_mb:128,expandable_segments:True", &c, err), 0);
    int n = mh_alloc_conf_format(&c, buf, sizeof buf);
    cr_expect_str_eq(buf, "expandable_segments:True,max_split_size_mb:128");
    cr_expect_eq(n, (int)strlen(buf));
    char small[10];
    cr_expect_eq(mh_alloc_conf_format(&c, small, sizeof small), n);
    cr_expect_eq(strlen(small), sizeof small - 1);
    cr_expect_eq(mh_alloc_conf_format(&c, NULL, 0), n);
}

Test(conf, format_round_trip)
{
    static const char *cases[] = {
        "roundup_power2_divisions:4",
        "roundup_power2_divisions:[64:8,256:4,1024:4,>:1]",
        "roundup_power2_divisions:[256:4,>:2]",
        "roundup_power2_divisions:[1:2,65536:8]",
        "roundup_power2_divisions:[2:0,8:4]",
        "garbage_collection_threshold:0.25,large_segment_size_mb:64,max_non_split_rounding_mb:32",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct mh_alloc_conf a, b;
        char err[160], buf[512];
        cr_assert_eq(parse(cases[i], &a, err), 0, "%s: %s", cases[i], err);
        mh_alloc_conf_format(&a, buf, sizeof buf);
        cr_assert_eq(parse(buf, &b, err), 0, "%s -> %s: %s", cases[i], buf, err);
        cr_expect(memcmp(&a, &b, sizeof a) == 0, "%s -> %s differs", cases[i], buf);
    }
}
