/* frag_trend.c - the fragmentation trend of `memhist report`: how reserved
 * and allocated memory evolve over the steps, a verdict, and the what-if
 * replay under expandable_segments:True that quantifies the fix. */
#include <string.h>

#include "device_report.h"
#include "whatif_check.h"

/* Reserved grows by more than 5 % of its first-step peak and by more than
 * twice what allocated grows: the cache is fragmenting, not the program
 * needing more. */
static int fragmenting(const struct mh_frag_trend *t, uint64_t first_reserved)
{
    return t->reserved_growth > 0 && (double)t->reserved_growth > 0.05 * (double)first_reserved &&
           t->reserved_growth > 2 * (t->allocated_growth > 0 ? t->allocated_growth : 0);
}

void mh__report_trend(const struct mh_replay *rp, int device, struct mh_frag_trend *t)
{
    struct mh_step_stats first, last;
    size_t n = mh_model_step_count(rp->model, device);
    memset(t, 0, sizeof *t);
    if (n < 2 || mh_model_step(rp->model, device, 0, &first) != 0 ||
        mh_model_step(rp->model, device, n - 1, &last) != 0)
        return;
    t->steps = n;
    t->first_step = first.step;
    t->last_step = last.step;
    t->reserved_growth = (int64_t)last.peak_reserved - (int64_t)first.peak_reserved;
    t->allocated_growth = (int64_t)last.peak_allocated - (int64_t)first.peak_allocated;
    for (size_t i = 1; i < n; i++) { /* growth to the highest step, not only the last */
        struct mh_step_stats s;
        if (mh_model_step(rp->model, device, i, &s) == 0 &&
            (int64_t)s.peak_reserved - (int64_t)first.peak_reserved > t->reserved_growth) {
            t->reserved_growth = (int64_t)s.peak_reserved - (int64_t)first.peak_reserved;
            t->allocated_growth = (int64_t)s.peak_allocated - (int64_t)first.peak_allocated;
        }
    }
    t->fragmenting = fragmenting(t, first.peak_reserved);
    struct mh_whatif_input in;
    struct mh_alloc_conf conf;
    struct mh_whatif_outcome out;
    if (mh__whatif_load(rp->path, device, &in) < 0)
        return;
    if (mh__whatif_conf(&in.conf, "expandable_segments:True", &conf) == 0 &&
        mh__whatif_run(&in, &conf, in.total_bytes, &out) == 0) {
        t->whatif_ok = 1;
        t->whatif_peak_reserved = out.peak_reserved;
    }
    mh__whatif_input_free(&in);
}
