/* report_steps.c - which rows of `memhist report`'s per-step table to show
 * (see printers.h): a window chosen with --steps, or for long runs a summary
 * that keeps what a reader looks for (start, end, the peak steps and the
 * outliers) instead of thousands of rows. */
#include <stdlib.h>

#include "printers.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Above this a step's peak (reserved or allocated) is an outlier: the median
 * plus the larger of 5 % of it and three median absolute deviations. */
static uint64_t outlier_limit(const struct mh_model *m, int device, size_t n, int reserved)
{
    uint64_t *v = malloc(n * sizeof *v), med = 0, mad = 0;
    size_t k = 0;
    struct mh_step_stats s;
    for (size_t i = 0; v && i < n; i++)
        if (mh_model_step(m, device, i, &s) == 0)
            v[k++] = reserved ? s.peak_reserved : s.peak_allocated;
    if (k) {
        qsort(v, k, sizeof *v, cmp_u64);
        med = v[k / 2];
        for (size_t i = 0; i < k; i++)
            v[i] = v[i] > med ? v[i] - med : med - v[i];
        qsort(v, k, sizeof *v, cmp_u64);
        mad = v[k / 2];
    }
    free(v);
    return med + (med / 20 > 3 * mad ? med / 20 : 3 * mad);
}

/* How far step s stands out: 0 = not an outlier, larger = more. */
static double outlier_score(const struct mh_step_stats *s, uint64_t lim_r, uint64_t lim_a)
{
    double score = 0;
    if (s->ooms || s->retries)
        score = 1e9 + (double)(s->ooms + s->retries);
    if (lim_r && s->peak_reserved > lim_r)
        score += (double)s->peak_reserved / (double)lim_r;
    if (lim_a && s->peak_allocated > lim_a)
        score += (double)s->peak_allocated / (double)lim_a;
    return score;
}

static void mark_outliers(const struct mh_model *m, int device, size_t n, char *keep)
{
    uint64_t med_r = outlier_limit(m, device, n, 1), med_a = outlier_limit(m, device, n, 0);
    for (int round = 0; round < 10; round++) {
        double best = 0;
        size_t at = n;
        struct mh_step_stats s;
        for (size_t i = 0; i < n; i++) {
            double sc = !keep[i] && mh_model_step(m, device, i, &s) == 0
                            ? outlier_score(&s, med_r, med_a) : 0;
            if (sc > best) {
                best = sc;
                at = i;
            }
        }
        if (at == n)
            break;
        keep[at] = 1;
    }
}

static void mark_summary(const struct mh_model *m, int device, size_t n, char *keep)
{
    size_t peak_a = 0, peak_r = 0;
    uint64_t va = 0, vr = 0;
    struct mh_step_stats s;
    for (size_t i = 0; i < n; i++) {
        if (i < 3 || i + 3 >= n)
            keep[i] = 1;
        if (mh_model_step(m, device, i, &s) != 0)
            continue;
        if (s.peak_allocated > va) {
            va = s.peak_allocated;
            peak_a = i;
        }
        if (s.peak_reserved > vr) {
            vr = s.peak_reserved;
            peak_r = i;
        }
    }
    keep[peak_a] = keep[peak_r] = 1;
    mark_outliers(m, device, n, keep);
}

size_t mh__report_step_rows(const struct mh_model *m, int device, const struct mh__report_view *v,
                            size_t *rows, size_t cap)
{
    size_t n = mh_model_step_count(m, device), used = 0;
    char *keep = n ? calloc(n, 1) : NULL;
    if (!keep)
        return 0;
    struct mh_step_stats s;
    if (v->steps.has_steps) {
        for (size_t i = 0; i < n; i++)
            keep[i] = mh_model_step(m, device, i, &s) == 0 && s.step >= v->steps.step_lo &&
                      s.step <= v->steps.step_hi;
    } else if (v->all_steps || n <= MH__REPORT_STEP_ROWS) {
        for (size_t i = 0; i < n; i++)
            keep[i] = 1;
    } else {
        mark_summary(m, device, n, keep);
    }
    for (size_t i = 0; i < n && used < cap; i++)
        if (keep[i])
            rows[used++] = i;
    free(keep);
    return used;
}
