/* export_tables.c - the producers of the runs and steps tables, from the
 * first pass (the reader's header and metadata, the model's per-step
 * statistics, as `memhist report` gives them). */
#include <stdlib.h>
#include <string.h>

#include "export_int.h"

static void meta_text(struct mh__batch *b, size_t col, const struct mh_reader *r, const char *key,
                      int *rc)
{
    if (*rc == 0)
        *rc = mh__batch_text(b, col, mh_reader_meta(r, key));
}

static void meta_int(struct mh__batch *b, size_t col, const struct mh_reader *r, const char *key)
{
    const char *v = mh_reader_meta(r, key);
    char *end;
    long long n = v && *v ? strtoll(v, &end, 10) : 0;
    if (v && *v && !*end)
        mh__batch_i64(b, col, n);
}

static void peaks(struct mh__batch *b, const struct mh_model *m)
{
    uint64_t alloc = 0, reserved = 0;
    size_t n = mh_model_device_count(m);
    for (size_t i = 0; i < n; i++) {
        struct mh_peak p;
        int dev = mh_model_device_at(m, i);
        if (mh_model_peak_allocated(m, dev, &p) == 0 && p.value > alloc)
            alloc = p.value;
        if (mh_model_peak_reserved(m, dev, &p) == 0 && p.value > reserved)
            reserved = p.value;
    }
    mh__batch_i64(b, MH__R_DEVICES, (int64_t)n);
    if (n) {
        mh__batch_i64(b, MH__R_PEAK_ALLOCATED, (int64_t)alloc);
        mh__batch_i64(b, MH__R_PEAK_RESERVED, (int64_t)reserved);
    }
}

static int run_row(struct mh__batch *b, const struct mh_arrow_file *f)
{
    const struct mh_reader *r = f->a.rp.reader;
    const struct mh_file_summary *s = &f->a.rp.summary;
    int rc = mh__batch_text(b, MH__R_PATH, f->path);
    mh__row_run(b, f);
    meta_text(b, MH__R_SOURCE, r, "source", &rc);
    meta_text(b, MH__R_HOST, r, "host", &rc);
    meta_int(b, MH__R_PID, r, "pid");
    meta_int(b, MH__R_WORLD_SIZE, r, "world_size");
    meta_int(b, MH__R_LOCAL_RANK, r, "local_rank");
    meta_text(b, MH__R_RANK_PROCESS, r, "rank_process", &rc);
    meta_text(b, MH__R_TORCH_VERSION, r, "torch_version", &rc);
    meta_text(b, MH__R_LIBRARY_VERSION, r, "library_version", &rc);
    mh__batch_i64(b, MH__R_FORMAT_VERSION, s->format_version);
    meta_text(b, MH__R_ALLOC_CONF, r, "alloc_conf", &rc);
    meta_int(b, MH__R_START_NS, r, "start_ns");
    if (s->events) {
        mh__batch_i64(b, MH__R_FIRST_NS, (int64_t)s->first_time_ns);
        mh__batch_i64(b, MH__R_LAST_NS, (int64_t)s->last_time_ns);
    }
    mh__batch_i64(b, MH__R_EVENTS, (int64_t)s->events);
    mh__batch_i64(b, MH__R_DROPPED, (int64_t)s->dropped);
    mh__batch_code(b, MH__R_COMPLETE, s->has_trailer && !f->a.rp.read_error);
    mh__batch_code(b, MH__R_DAMAGED, f->a.rp.read_error != 0);
    peaks(b, f->a.model);
    mh__batch_i64(b, MH__R_SCHEMA_VERSION, MH_ARROW_SCHEMA_VERSION);
    const char *k, *v;
    for (size_t i = 0; rc == 0 && mh_reader_meta_at(r, i, &k, &v); i++)
        rc = mh__batch_map_add(b, MH__R_METADATA, k, v);
    if (rc == 0)
        rc = mh__batch_map_add(b, MH__R_METADATA, NULL, NULL);
    return rc;
}

int mh__produce_runs(struct mh__stream *st)
{
    struct mh_arrow_file *f = mh__stream_file(st);
    struct mh__batch *b;
    int rc = mh__stream_batch(st, MH__T_RUNS, f->a.rp.reader, &b);
    if (rc == 0)
        rc = run_row(b, f);
    if (rc == 0)
        rc = mh__stream_row(st, b);
    if (rc == 0)
        rc = mh__stream_flush(st, b);
    mh__batch_free(b);
    return rc;
}

static int step_row(struct mh__stream *st, struct mh__batch *b, int device, int part,
                    const struct mh_step_stats *s)
{
    mh__row_run(b, mh__stream_file(st));
    mh__batch_i64(b, MH__S_DEVICE, device);
    mh__batch_code(b, MH__S_PART, part);
    mh__batch_i64(b, MH__S_STEP, s->step);
    mh__batch_i64(b, MH__S_BEGIN, (int64_t)s->begin_ns);
    mh__batch_i64(b, MH__S_END, (int64_t)s->end_ns);
    mh__batch_i64(b, MH__S_PEAK_ALLOCATED, (int64_t)s->peak_allocated);
    mh__batch_i64(b, MH__S_PEAK_RESERVED, (int64_t)s->peak_reserved);
    mh__batch_i64(b, MH__S_END_ALLOCATED, (int64_t)s->end_allocated);
    mh__batch_i64(b, MH__S_END_RESERVED, (int64_t)s->end_reserved);
    mh__batch_f64(b, MH__S_FRAGMENTATION, s->fragmentation);
    mh__batch_i64(b, MH__S_ALLOC_AT_RPEAK, (int64_t)s->allocated_at_reserved_peak);
    mh__batch_i64(b, MH__S_INACTIVE_AT_RPEAK, (int64_t)s->inactive_split_at_reserved_peak);
    mh__batch_i64(b, MH__S_LARGEST_AT_RPEAK, (int64_t)s->largest_free_at_reserved_peak);
    mh__batch_i64(b, MH__S_SEGMENTS, s->segments_at_end);
    mh__batch_i64(b, MH__S_SEGMENT_ALLOCS, (int64_t)s->segment_allocs);
    mh__batch_i64(b, MH__S_SEGMENT_FREES, (int64_t)s->segment_frees);
    mh__batch_i64(b, MH__S_ALLOCS, (int64_t)s->allocs);
    mh__batch_i64(b, MH__S_FREES, (int64_t)s->frees);
    mh__batch_i64(b, MH__S_RETRIES, (int64_t)s->retries);
    mh__batch_i64(b, MH__S_OOMS, (int64_t)s->ooms);
    return mh__stream_row(st, b);
}

/* One device's rows: the set-up (when a step marker opened it and it
 * reserved memory, as report --json lists it), the steps, the tail. */
static int device_steps(struct mh__stream *st, struct mh__batch *b, const struct mh_model *m,
                        int dev)
{
    struct mh_step_stats s;
    int rc = 0;
    if (mh_model_setup(m, dev, &s) == 0 && s.peak_reserved > 0)
        rc = step_row(st, b, dev, 0, &s);
    for (size_t i = 0; rc == 0 && i < mh_model_step_count(m, dev); i++)
        if (mh_model_step(m, dev, i, &s) == 0)
            rc = step_row(st, b, dev, 1, &s);
    if (rc == 0 && mh_model_tail(m, dev, &s) == 0)
        rc = step_row(st, b, dev, 2, &s);
    return rc;
}

int mh__produce_steps(struct mh__stream *st)
{
    struct mh_arrow_file *f = mh__stream_file(st);
    const struct mh_model *m = f->a.model;
    struct mh__batch *b;
    int rc = mh__stream_batch(st, MH__T_STEPS, f->a.rp.reader, &b);
    for (size_t i = 0; rc == 0 && i < mh_model_device_count(m); i++)
        rc = device_steps(st, b, m, mh_model_device_at(m, i));
    if (rc == 0)
        rc = mh__stream_flush(st, b);
    mh__batch_free(b);
    return rc;
}
