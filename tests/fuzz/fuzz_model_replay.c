/* fuzz_model_replay.c - libFuzzer target for the allocator model: replays
 * every event a fuzzed .memhist file yields (under the allocator settings
 * the file names, as the CLI does) and queries everything the model offers
 * at the end: stats, peaks, steps, OOMs, segments and blocks, anomalies.
 * seeds: format */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memhist/allocconf.h"
#include "memhist/model.h"
#include "memhist/reader.h"

static volatile uint64_t sink;

static int on_segment(void *user, const struct mh_segment_view *s)
{
    sink += s->address ^ s->size ^ s->allocated;
    return 0;
}

static int on_block(void *user, const struct mh_segment_view *s, const struct mh_block_view *b)
{
    sink += b->address ^ b->size ^ (uint64_t)b->state;
    return 0;
}

static void query(const struct mh_model *m)
{
    for (size_t i = 0; i < mh_model_device_count(m); i++) {
        int dev = mh_model_device_at(m, i);
        struct mh_mem_stats st;
        struct mh_peak pk;
        if (mh_model_stats(m, dev, &st) == 0)
            sink += st.allocated ^ st.reserved;
        if (mh_model_peak_allocated(m, dev, &pk) == 0)
            sink += pk.value;
        if (mh_model_peak_reserved(m, dev, &pk) == 0)
            sink += pk.value;
        for (size_t k = 0; k < mh_model_step_count(m, dev); k++) {
            struct mh_step_stats ss;
            if (mh_model_step(m, dev, k, &ss) == 0)
                sink += (uint64_t)ss.step;
        }
        sink += mh_model_largest_free(m, dev, UINT64_MAX, -1);
        mh_model_foreach_segment(m, dev, on_segment, NULL);
        mh_model_foreach_block(m, dev, on_block, NULL);
    }
    for (size_t i = 0; i < mh_model_oom_count(m); i++) {
        struct mh_oom_info o;
        if (mh_model_oom(m, i, &o) == 0)
            sink += o.event_index;
    }
    for (int a = 0; a < MH_ANOM_COUNT; a++)
        sink += mh_model_anomaly_count(m, a);
    sink += mh_model_event_count(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mh_reader *r;
    if (mh_reader_open_mem(data, size, &r) != 0)
        return 0;
    struct mh_event ev;
    int rc = mh_reader_next(r, &ev);
    struct mh_model_opts opts;
    memset(&opts, 0, sizeof opts);
    const char *conf = mh_reader_meta(r, "alloc_conf");
    char err[128];
    if (conf && mh_alloc_conf_parse(conf, &opts.conf, err, sizeof err) != 0)
        memset(&opts.conf, 0, sizeof opts.conf);
    struct mh_model *m;
    if (mh_model_new(&opts, &m) == 0) {
        struct mh_apply_result res;
        for (; rc == 1; rc = mh_reader_next(r, &ev))
            if (mh_model_apply(m, &ev, &res) < 0)
                break;
        mh_model_finish(m);
        query(m);
        mh_model_free(m);
    }
    mh_reader_close(r);
    return 0;
}
