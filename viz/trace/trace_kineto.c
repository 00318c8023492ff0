/* trace_kineto.c - memhist's memory tracks added to a torch.profiler trace
 * (`memhist trace --into PROFILE.json`).
 *
 * The profile is validated with the span reader (json_read.c) and re-emitted
 * byte for byte; only traceEvents grows. Clocks: Kineto's ts are microseconds
 * relative to baseTimeNanoseconds when present, else absolute microseconds;
 * both count from the Unix epoch on CLOCK_REALTIME, as memhist does, so
 * alignment is a change of origin (events before it get negative times, never
 * clamped). By default only the profiled span is added, so the counters do
 * not stretch the timeline; a recording that does not overlap the profile is
 * refused with both spans in the message. Tracks the profile names keep
 * torch's names. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "gzip.h"
#include "json_read.h"
#include "trace_int.h"

struct kineto_info {
    struct mh__jr_value root, events;
    int has_base;
    uint64_t base_ns;
    int has_span;
    double lo_us, hi_us;
};

static void span_of_events(const struct mh__jr_doc *d, struct kineto_info *k)
{
    size_t pos = 0;
    struct mh__jr_value ev, v;
    while (mh__jr_next(d, &k->events, &pos, NULL, &ev)) {
        double ts, dur = 0;
        if (ev.type != MH__JR_OBJECT || !mh__jr_find(d, &ev, "ts", &v) ||
            mh__jr_double(d, &v, &ts) != 0)
            continue;
        if (mh__jr_find(d, &ev, "ph", &v) && mh__jr_string_eq(d, &v, "M"))
            continue;
        if (mh__jr_find(d, &ev, "dur", &v))
            mh__jr_double(d, &v, &dur);
        if (!k->has_span || ts < k->lo_us)
            k->lo_us = ts;
        if (!k->has_span || ts + dur > k->hi_us)
            k->hi_us = ts + dur;
        k->has_span = 1;
    }
}

static int read_kineto(struct mh__jr_doc *d, const char *json, size_t len, struct kineto_info *k,
                       char *err, size_t errlen)
{
    memset(k, 0, sizeof *k);
    int rc = mh__jr_parse(d, json, len, 0, 0, &k->root, err, errlen);
    if (rc != 0)
        return rc;
    if (k->root.type != MH__JR_OBJECT || !mh__jr_find(d, &k->root, "traceEvents", &k->events) ||
        k->events.type != MH__JR_ARRAY) {
        snprintf(err, errlen, "not a Chrome trace: no \"traceEvents\" array at the top level");
        return MH_EFORMAT;
    }
    struct mh__jr_value b;
    if (mh__jr_find(d, &k->root, "baseTimeNanoseconds", &b)) {
        double v;
        if (mh__jr_u64(d, &b, &k->base_ns) == 0)
            k->has_base = 1;
        else if (mh__jr_double(d, &b, &v) == 0 && v >= 0 && v < 1.8e19) {
            k->base_ns = (uint64_t)v;
            k->has_base = 1;
        }
    }
    span_of_events(d, k);
    return 0;
}

static uint64_t us_to_ns(const struct kineto_info *k, double us)
{
    double ns = us * 1000.0 + (k->has_base ? (double)k->base_ns : 0.0);
    return ns <= 0 ? 0 : ns >= 1.8e19 ? UINT64_MAX : (uint64_t)ns;
}

/* Keeps the process and thread names the profile gives (torch's). */
static int keep_profile_names(const struct mh__jr_doc *d, const struct kineto_info *k,
                              struct mh__trace *t)
{
    size_t pos = 0;
    struct mh__jr_value ev, v;
    while (mh__jr_next(d, &k->events, &pos, NULL, &ev)) {
        double pid, tid = -1;
        if (ev.type != MH__JR_OBJECT || !mh__jr_find(d, &ev, "ph", &v) ||
            !mh__jr_string_eq(d, &v, "M") || !mh__jr_find(d, &ev, "name", &v))
            continue;
        int thread = mh__jr_string_eq(d, &v, "thread_name");
        if (!thread && !mh__jr_string_eq(d, &v, "process_name"))
            continue;
        if (!mh__jr_find(d, &ev, "pid", &v) || mh__jr_double(d, &v, &pid) != 0)
            continue;
        if (thread && (!mh__jr_find(d, &ev, "tid", &v) || mh__jr_double(d, &v, &tid) != 0))
            continue;
        if (mh__trace_name_taken(t, (int64_t)pid, (int64_t)tid) < 0)
            return MH_ENOMEM;
    }
    return 0;
}

/* Why nothing of the recording falls in the profile's span. */
static void no_overlap(const struct mh__trace *t, char *err, size_t errlen)
{
    const struct mh__trace_plan *p = mh__trace_get_plan(t);
    if (p->file_first_ns == 0) {
        snprintf(err, errlen, "the recording has no events to add");
        return;
    }
    uint64_t lo = t->clip_lo_ns, hi = t->clip_hi_ns;
    int after = p->file_first_ns > hi;
    double gap = after ? (double)(p->file_first_ns - hi) / 1e9 : (double)(lo - p->file_last_ns) / 1e9;
    snprintf(err, errlen,
             "the profile and the recording do not overlap in time (the profile %s %.3f s %s the "
             "recording); nothing to add: profile and record the same run",
             after ? "ends" : "starts", gap, after ? "before" : "after");
}

/* The profile's members but traceEvents, then traceEvents' own elements. */
static size_t copy_profile(const struct mh__jr_doc *d, const struct kineto_info *k,
                           struct mh__sink *s)
{
    size_t pos = 0, n = 0;
    struct mh__jr_value key, v;
    mh__sink_puts(s, "{");
    while (mh__jr_next(d, &k->root, &pos, &key, &v)) {
        if (mh__jr_string_eq(d, &key, "traceEvents") || mh__jr_string_eq(d, &key, "memhist"))
            continue;
        mh__sink_write(s, d->buf + key.off, key.len);
        mh__sink_puts(s, ":");
        mh__sink_write(s, d->buf + v.off, v.len);
        mh__sink_puts(s, ",");
    }
    mh__sink_puts(s, "\"traceEvents\":[");
    pos = 0;
    while (mh__jr_next(d, &k->events, &pos, NULL, &v)) {
        if (n++)
            mh__sink_puts(s, ",");
        mh__sink_write(s, d->buf + v.off, v.len);
    }
    return n;
}

static int merge(struct mh__trace *t, struct mh__session *ses, const char *kineto, size_t len,
                 struct mh__sink *s, char *err, size_t errlen)
{
    struct mh__jr_doc d;
    struct kineto_info k;
    int rc = read_kineto(&d, kineto, len, &k, err, errlen);
    if (rc != 0)
        return rc;
    t->base_fixed = 1;
    t->base_ns = k.has_base ? k.base_ns : 0;
    t->o.memory_only = 1;
    if ((rc = keep_profile_names(&d, &k, t)) < 0)
        return rc;
    if (k.has_span && !t->o.has_steps && !t->o.has_time) {
        t->clip_lo_ns = us_to_ns(&k, k.lo_us);
        t->clip_hi_ns = us_to_ns(&k, k.hi_us);
        if (t->clip_hi_ns <= t->clip_lo_ns)
            t->clip_hi_ns = t->clip_lo_ns + 1;
    }
    if ((rc = mh__trace_scan(t, ses)) < 0)
        return rc;
    t->plan.profile_first_ns = t->clip_lo_ns;
    t->plan.profile_last_ns = t->clip_hi_ns;
    if (mh__trace_get_plan(t)->events == 0 && t->clip_hi_ns) {
        no_overlap(t, err, errlen);
        return MH_ENOTFOUND;
    }
    size_t copied = copy_profile(&d, &k, s);
    /* continue the open array and object with the JSON writer */
    struct mh__json j;
    mh__json_init(&j, s, 0);
    j.depth = 2;
    j.count[1] = 1;
    j.count[2] = (int)(copied > 0);
    rc = mh__trace_events_pass(t, ses, &j);
    mh__json_end_array(&j);
    mh__trace_write_meta(&j, mh__session_reader(ses));
    mh__json_end_object(&j);
    return rc < 0 ? rc : s->error;
}

int mh__trace_merge_kineto(struct mh__trace *t, struct mh__session *ses, const char *kineto,
                           size_t len, struct mh__sink *s, char *err, size_t errlen)
{
    if (!mh__gzip_is(kineto, len))
        return merge(t, ses, kineto, len, s, err, errlen);
    char *plain; /* PROFILE.json.gz: the parsed document points into the text */
    size_t n;
    int rc = mh__gzip_inflate(kineto, len, (size_t)1 << 34, &plain, &n, err, errlen);
    if (rc == 0) {
        rc = merge(t, ses, plain, n, s, err, errlen);
        free(plain);
    }
    return rc;
}
