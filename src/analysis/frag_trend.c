/* frag_trend.c - the fragmentation trend of `memhist report`: how reserved
 * and allocated memory evolve over the steps, a verdict, and the what-if
 * replay under expandable_segments:True that quantifies the fix, checked
 * where the run fragments by the replay under its own settings. */
#include <string.h>

#include "device_report.h"
#include "whatif_check.h"

/* Reserved grows by more than 5 % of its first-step peak and by more than
 * twice what allocated grows: the cache is fragmenting, not the program
 * needing more. */
static int fragmenting(const struct mh__frag_trend *t, uint64_t first_reserved)
{
    return t->reserved_growth > 0 && (double)t->reserved_growth > 0.05 * (double)first_reserved &&
           t->reserved_growth > 2 * (t->allocated_growth > 0 ? t->allocated_growth : 0);
}

void mh__report_trend_expect(void *user, const struct mh__whatif_input *in,
                             const struct mh__whatif_outcome *recorded,
                             struct mh__sim_replay_opts *ro, int *baseline)
{
    (void)user;
    (void)recorded;
    memset(ro, 0, sizeof *ro);
    ro->conf = in->conf;
    ro->conf.expandable_segments = 1;
    ro->capacity = in->total_bytes;
    *baseline = 0;
}

void mh__report_trend(const struct mh_model *m, struct mh__whatif_input *in,
                      struct mh__frag_trend *t)
{
    int device = in->device;
    struct mh_step_stats first, last;
    size_t n = mh_model_step_count(m, device);
    memset(t, 0, sizeof *t);
    if (n < 2 || mh_model_step(m, device, 0, &first) != 0 ||
        mh_model_step(m, device, n - 1, &last) != 0)
        return;
    t->steps = n;
    t->first_step = first.step;
    t->last_step = last.step;
    t->reserved_growth = (int64_t)last.peak_reserved - (int64_t)first.peak_reserved;
    t->allocated_growth = (int64_t)last.peak_allocated - (int64_t)first.peak_allocated;
    for (size_t i = 1; i < n; i++) { /* growth to the highest step, not only the last */
        struct mh_step_stats s;
        if (mh_model_step(m, device, i, &s) == 0 &&
            (int64_t)s.peak_reserved - (int64_t)first.peak_reserved > t->reserved_growth) {
            t->reserved_growth = (int64_t)s.peak_reserved - (int64_t)first.peak_reserved;
            t->allocated_growth = (int64_t)s.peak_allocated - (int64_t)first.peak_allocated;
        }
    }
    t->fragmenting = fragmenting(t, first.peak_reserved);
    /* a fragmenting run's what-if is checked by the replay under its own
     * settings, which also tells how the recording's torch broke ties; the
     * two replays run at once */
    struct mh__whatif_outcome base, out;
    struct mh__sim_replay_opts ro;
    int base_rc = -1, rc;
    mh__report_trend_expect(NULL, in, NULL, &ro, &rc);
    if (t->fragmenting)
        rc = mh__whatif_run_with_baseline(in, in->total_bytes, &ro, &base, &base_rc, &out, NULL);
    else
        rc = mh__whatif_run(in, &ro, &out, NULL);
    if (rc == 0) {
        t->whatif_ok = 1;
        t->whatif_peak_reserved = out.peak_reserved;
    }
    if (t->whatif_ok && base_rc == 0) {
        t->whatif_checked = mh__whatif_checked(&base);
        t->baseline_match = base.match;
    }
}
