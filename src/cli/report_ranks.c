/* report_ranks.c - the rank table for several recordings of one job
 * (`report FILE.rank*`, `layers`, `oom`): per rank its host, device, peak
 * allocated and reserved with step and time (from the job's earliest
 * start), steps, OOMs and fragmentation at the reserved peak; then the
 * spread across ranks and the worst rank, ties stated. Processes a rank
 * started (header rank_process=helper) are listed with a "+" after the rank
 * and left out of the spread. Text or JSON; the
 * analyses come from src/analysis (already replayed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "printers.h"
#include "analysis.h"
#include "json.h"

static void json_peak(struct mh__json *j, const char *key, const struct mh_peak *p, uint64_t origin)
{
    mh__json_key(j, key);
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "bytes", p->value);
    mh__json_kv_int(j, "step", p->step);
    mh__json_kv_uint(j, "time_ns", p->time_ns);
    mh__json_kv_uint(j, "since_job_start_ns", p->time_ns > origin ? p->time_ns - origin : 0);
    mh__json_end_object(j);
}

static void json_rank(struct mh__json *j, int64_t rank)
{
    mh__json_key(j, "rank"); /* null when neither header nor name says */
    if (rank < 0)
        mh__json_null(j);
    else
        mh__json_int(j, rank);
}

static void json_ranks(struct mh__json *j, const struct mh__rank_row *r, size_t n, const struct mh__job_spread *s,
                       uint64_t origin)
{
    mh__json_key(j, "ranks");
    mh__json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        mh__json_begin_object(j);
        mh__json_kv_string(j, "file", r[i].path);
        json_rank(j, r[i].rank);
        mh__json_kv_bool(j, "helper", r[i].helper);
        mh__json_kv_string(j, "host", r[i].host[0] ? r[i].host : NULL);
        mh__json_kv_int(j, "device", r[i].device);
        json_peak(j, "peak_allocated", &r[i].alloc, origin);
        json_peak(j, "peak_reserved", &r[i].reserved, origin);
        mh__json_kv_uint(j, "steps", r[i].steps);
        mh__json_kv_uint(j, "ooms", r[i].ooms);
        mh__json_key(j, "fragmentation_at_reserved_peak");
        if (r[i].frag < 0)
            mh__json_null(j);
        else
            mh__json_double(j, r[i].frag, 4);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
    mh__json_key(j, "spread");
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "max_reserved", r[s->max].reserved.value);
    mh__json_kv_uint(j, "min_reserved", r[s->min].reserved.value);
    mh__json_kv_uint(j, "median_reserved", s->median);
    mh__json_key(j, "farthest_from_median"); /* null when several ranks are as far */
    if (s->far_tied == 1)
        mh__json_string(j, r[s->far].path);
    else
        mh__json_null(j);
    mh__json_kv_uint(j, "job_start_time_ns", origin);
    mh__json_end_object(j);
}

static void json_worst(struct mh__json *j, const struct mh__rank_row *r, size_t n, const struct mh__job_spread *s)
{
    mh__json_key(j, "worst_rank");
    mh__json_begin_object(j);
    mh__json_kv_string(j, "file", r[s->max].path);
    mh__json_kv_uint(j, "index", s->max);
    json_rank(j, r[s->max].rank);
    mh__json_kv_uint(j, "peak_reserved", r[s->max].reserved.value);
    mh__json_key(j, "tied_with");
    mh__json_begin_array(j);
    for (size_t i = 0; i < n; i++)
        if (i != s->max && r[i].reserved.value == r[s->max].reserved.value && r[i].helper == r[s->max].helper)
            mh__json_string(j, r[i].path);
    mh__json_end_array(j);
    mh__json_end_object(j);
}

static const char *rank_text(const struct mh__rank_row *r, char buf[24])
{
    if (r->rank < 0)
        snprintf(buf, 24, "-");
    else
        snprintf(buf, 24, "%lld%s", (long long)r->rank, r->helper ? "+" : "");
    return buf;
}

static const char *peak_text(const struct mh_peak *p, uint64_t origin, char buf[64])
{
    char b[32], st[24], t[32];
    snprintf(buf, 64, "%s %s %s", mh__bytes_text(p->value, b), mh__step_text(p->step, st),
             mh__cli_duration(p->time_ns > origin ? p->time_ns - origin : 0, t));
    return buf;
}

/* The width of the widest peak text in one column (at least the heading's). */
static int peak_width(const struct mh__rank_row *r, size_t n, int reserved, uint64_t origin)
{
    char b[64];
    int w = 14;
    for (size_t i = 0; i < n; i++) {
        int l = (int)strlen(peak_text(reserved ? &r[i].reserved : &r[i].alloc, origin, b));
        w = l > w ? l : w;
    }
    return w;
}

static void text_ranks(const struct mh__rank_row *r, size_t n, const struct mh__job_spread *s, uint64_t origin)
{
    char b1[64], b2[64], b3[32], b4[32], b5[32];
    int helpers = 0, wa = peak_width(r, n, 0, origin), wr = peak_width(r, n, 1, origin);
    for (size_t i = 0; i < n; i++)
        helpers |= r[i].helper;
    printf("\nranks (times from the job's earliest start%s):\n",
           helpers ? "; R+ = a process rank R started, left out of the spread" : "");
    printf("  %-5s %-16s %-6s %-*s %-*s %6s %5s %5s  %s\n", "rank", "host", "device", wa,
           "peak allocated", wr, "peak reserved", "steps", "OOMs", "frag", "file");
    for (size_t i = 0; i < n; i++) {
        char fr[16] = "-", rk[24], dv[16] = "-";
        if (r[i].frag >= 0)
            snprintf(fr, sizeof fr, "%.0f%%", 100.0 * r[i].frag);
        if (r[i].device >= 0)
            snprintf(dv, sizeof dv, "%d", r[i].device);
        printf("  %-5s %-16.16s %-6s %-*s %-*s %6zu %5zu %5s  %s\n", rank_text(&r[i], rk),
               r[i].host[0] ? r[i].host : "-", dv, wa, peak_text(&r[i].alloc, origin, b1), wr,
               peak_text(&r[i].reserved, origin, b2), r[i].steps, r[i].ooms, fr, r[i].path);
    }
    uint64_t mx = r[s->max].reserved.value, mn = r[s->min].reserved.value;
    char ratio[32] = "-";
    if (mn)
        snprintf(ratio, sizeof ratio, "%.2f", (double)mx / (double)mn);
    if (mx == mn) {
        printf("spread of peak reserved: none (every rank %s)\n", mh__bytes_text(mx, b3));
    } else {
        printf("spread of peak reserved: max %s (%s), min %s (%s), max/min %s; median %s, ",
               mh__bytes_text(mx, b3), r[s->max].path, mh__bytes_text(mn, b4), r[s->min].path,
               ratio, mh__bytes_text(s->median, b5));
        if (s->far_tied == 1)
            printf("farthest from it: %s\n", r[s->far].path);
        else
            printf("%zu files equally far from it\n", s->far_tied);
    }
    printf("worst rank by peak reserved: %s (%s", r[s->max].path, mh__bytes_text(mx, b3));
    if (r[s->max].rank >= 0)
        printf(", rank %lld", (long long)r[s->max].rank);
    printf(")");
    if (s->tied > 1) {
        printf("; tied with");
        for (size_t i = 0; i < n; i++)
            if (i != s->max && r[i].reserved.value == mx && r[i].helper == r[s->max].helper)
                printf(" %s", r[i].path);
    }
    printf("\n");
}

int mh__print_ranks(const struct mh__rank_row *r, size_t n, uint64_t origin, struct mh__json *j)
{
    struct mh__job_spread s;
    mh__job_spread(r, n, &s);
    if (j) {
        json_ranks(j, r, n, &s, origin);
        json_worst(j, r, n, &s);
    } else if (n > 1) {
        text_ranks(r, n, &s, origin);
    }
    return 0;
}

void mh__cli_missing_device(const char *path, const struct mh_model *m, int device, int ranks)
{
    char list[128];
    size_t used = 0, n = mh_model_device_count(m);
    list[0] = '\0';
    for (size_t i = 0; i < n && used + 1 < sizeof list; i++) {
        int w = snprintf(list + used, sizeof list - used, "%s%d", i ? ", " : "",
                         mh_model_device_at(m, i));
        used += w > 0 ? (size_t)w : 0;
    }
    mh__cli_error("%s: no events for device %d; its device%s: %s%s", path, device, n == 1 ? "" : "s",
                  n ? list : "none", ranks ? " (the index as this file's process saw it)" : "");
}

int mh__cli_each_device(const struct mh__analysis *a, int device, struct mh__json *j,
                        int (*one)(void *user, const struct mh__analysis *a, int dev,
                                   struct mh__json *j),
                        void *user)
{
    const struct mh_model *m = a->rp.model;
    size_t shown = 0;
    if (j) {
        mh__json_begin_object(j);
        mh__json_kv_string(j, "file", a->rp.path);
        mh__json_key(j, "devices");
        mh__json_begin_array(j);
    }
    for (size_t d = 0; d < mh_model_device_count(m); d++) {
        int dev = mh_model_device_at(m, d);
        if (device >= 0 && dev != device)
            continue;
        if (one(user, a, dev, j) != 0)
            return MH__EXIT_FAIL;
        shown++;
    }
    if (j) {
        mh__json_end_array(j);
        mh__json_end_object(j);
    }
    if (!shown && device >= 0) {
        mh__cli_missing_device(a->rp.path, m, device, 0);
        return MH__EXIT_FAIL;
    }
    if (!shown && !j)
        printf("\n%s: no allocations\n", a->rp.path);
    return 0;
}
