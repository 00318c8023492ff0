/* job_ranks.c - the files of one job (see job_ranks.h): each file's rank
 * row from its analysis, the one rule for the worst rank, and the spread of
 * peak reserved across the ranks' own processes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "job_ranks.h"

/* meta "rank", else the R of ".rank<R>" in the name, else -1. */
static int64_t rank_of(const struct mh__replay *rp)
{
    const char *m = mh_reader_meta(rp->reader, "rank");
    const char *p = strstr(rp->path, ".rank");
    if (m && *m)
        return strtoll(m, NULL, 10);
    return p && p[5] >= '0' && p[5] <= '9' ? strtoll(p + 5, NULL, 10) : -1;
}

static double frag_at_peak(const struct mh_model *m, int dev, const struct mh_peak *reserved)
{
    struct mh_step_stats s;
    for (size_t i = 0; i < mh_model_step_count(m, dev); i++)
        if (mh_model_step(m, dev, i, &s) == 0 && s.peak_reserved == reserved->value && s.peak_reserved)
            return 1.0 - (double)s.allocated_at_reserved_peak / (double)s.peak_reserved;
    return -1.0;
}

void mh__rank_row_fill(const struct mh__analysis *a, struct mh__rank_row *r)
{
    const struct mh_model *m = a->rp.model;
    memset(r, 0, sizeof *r);
    r->path = a->rp.path;
    const char *host = mh_reader_meta(a->rp.reader, "host");
    snprintf(r->host, sizeof r->host, "%s", host ? host : "");
    r->rank = rank_of(&a->rp);
    r->helper = mh__rank_is_helper(a->rp.reader);
    r->device = -1;
    r->frag = -1.0;
    for (size_t d = 0; d < mh_model_device_count(m); d++) {
        int dev = mh_model_device_at(m, d);
        struct mh_peak p;
        if (mh_model_peak_reserved(m, dev, &p) == 0 && (r->device < 0 || p.value > r->reserved.value)) {
            r->device = dev;
            r->reserved = p;
        }
    }
    if (r->device < 0)
        return;
    mh_model_peak_allocated(m, r->device, &r->alloc);
    r->steps = mh_model_step_count(m, r->device);
    r->frag = frag_at_peak(m, r->device, &r->reserved);
    for (size_t i = 0; i < mh_model_oom_count(m); i++) {
        struct mh_oom_info o;
        if (mh_model_oom(m, i, &o) == 0 && o.device == r->device)
            r->ooms++;
    }
}

static int by_reserved(const void *x, const void *y)
{
    uint64_t a = ((const struct mh__rank_row *)x)->reserved.value, b = ((const struct mh__rank_row *)y)->reserved.value;
    return a < b ? -1 : a > b;
}

int mh__rank_is_helper(const struct mh_reader *r)
{
    const char *role = mh_reader_meta(r, "rank_process");
    return role && strcmp(role, "helper") == 0;
}

size_t mh__job_worst(const uint64_t *reserved, const uint8_t *helper, size_t n)
{
    size_t worst = n;
    for (int pass = 0; pass < 2 && worst == n; pass++) /* the ranks' own, else every file */
        for (size_t i = 0; i < n; i++)
            if ((pass || !helper || !helper[i]) && (worst == n || reserved[i] > reserved[worst]))
                worst = i;
    return worst;
}

/* The worst of the rows by the one rule. */
static size_t worst_row(const struct mh__rank_row *all, size_t n)
{
    uint64_t *reserved = malloc((n ? n : 1) * sizeof *reserved);
    uint8_t *helper = malloc(n ? n : 1);
    size_t worst = 0;
    if (reserved && helper) {
        for (size_t i = 0; i < n; i++) {
            reserved[i] = all[i].reserved.value;
            helper[i] = (uint8_t)all[i].helper;
        }
        worst = mh__job_worst(reserved, helper, n);
    }
    free(reserved);
    free(helper);
    return worst < n ? worst : 0;
}

void mh__job_spread(const struct mh__rank_row *all, size_t n, struct mh__job_spread *s)
{
    struct mh__rank_row *r = malloc((n ? n : 1) * sizeof *r);
    size_t *idx = malloc((n ? n : 1) * sizeof *idx), m = 0;
    memset(s, 0, sizeof *s);
    if (!r || !idx || n == 0) {
        free(r);
        free(idx);
        return;
    }
    for (int pass = 0; pass < 2 && m == 0; pass++)
        for (size_t i = 0; i < n; i++)
            if (pass || !all[i].helper) {
                idx[m] = i;
                r[m++] = all[i];
            }
    qsort(r, m, sizeof *r, by_reserved);
    s->median = m % 2 ? r[m / 2].reserved.value
                      : r[m / 2 - 1].reserved.value / 2 + r[m / 2].reserved.value / 2;
    s->max = worst_row(all, n);
    uint64_t fard = 0, top = all[s->max].reserved.value;
    size_t mn = idx[0], far = idx[0];
    for (size_t k = 0; k < m; k++) {
        const struct mh__rank_row *row = &all[idx[k]];
        uint64_t v = row->reserved.value, d = v > s->median ? v - s->median : s->median - v;
        mn = v < all[mn].reserved.value ? idx[k] : mn;
        if (d > fard) {
            fard = d;
            far = idx[k];
        }
    }
    for (size_t k = 0; k < m; k++) {
        uint64_t v = all[idx[k]].reserved.value;
        s->tied += v == top;
        s->far_tied += (v > s->median ? v - s->median : s->median - v) == fard;
    }
    s->min = mn;
    s->far = far;
    free(r);
    free(idx);
}
