/* flame_moment.c - the moment a flame graph shows (see flame.h): a device's
 * allocated peak or last OOM from the model after the full pass, or a time
 * from the first event, found by a pass that stops just after it. */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "flame.h"

/* Counts the events at or before a time from the first event. */
struct upto {
    uint64_t t0, at_ns, n;
};

static int count_upto(void *user, struct mh_session *s, const struct mh_event *ev,
                      const struct mh_apply_result *res)
{
    struct upto *u = user;
    (void)s;
    (void)res;
    if (u->n == 0)
        u->t0 = ev->time_ns;
    if (ev->time_ns > u->t0 && ev->time_ns - u->t0 > u->at_ns)
        return 1;
    u->n++;
    return 0;
}

static int at_time(const struct mh_analysis *a, uint64_t at_ns, struct mh_flame_moment *out,
                   char *err, size_t errlen)
{
    const struct mh_file_summary *sum = &a->rp.summary;
    uint64_t span =
        sum->last_time_ns > sum->first_time_ns ? sum->last_time_ns - sum->first_time_ns : 0;
    if (sum->events == 0 || at_ns > span) {
        snprintf(err, errlen, "--at %.6g s is after the end of the run (%.6f s)", at_ns / 1e9,
                 span / 1e9);
        return MH_EINVAL;
    }
    struct upto u = {0, at_ns, 0};
    const struct mh_observer obs = {"flame-moment", &u, NULL, count_upto, NULL};
    int rc = mh__session_pass(a->session, &obs);
    if (rc < 0)
        return rc;
    out->index = u.n ? u.n - 1 : 0;
    out->time_ns = at_ns;
    out->step = mh__lifetimes_step_of(a->lt, out->index);
    return 0;
}

int mh__flame_moment(const struct mh_analysis *a, int device, int at, uint64_t at_ns,
                     struct mh_flame_moment *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    uint64_t t0 = a->rp.summary.first_time_ns;
    if (at == MH_FLAME_AT_TIME)
        return at_time(a, at_ns, out, err, errlen);
    if (at == MH_FLAME_AT_OOM) {
        int found = 0;
        for (size_t i = 0; i < mh_model_oom_count(a->rp.model); i++) {
            struct mh_oom_info oom;
            if (mh_model_oom(a->rp.model, i, &oom) == 0 && oom.device == device) {
                *out = (struct mh_flame_moment){oom.event_index, oom.time_ns - t0, oom.step,
                                                oom.request};
                found = 1;
            }
        }
        if (!found)
            snprintf(err, errlen, "--at oom: device %d has no out-of-memory event", device);
        return found ? 0 : MH_EINVAL;
    }
    struct mh_peak p;
    if (mh_model_peak_allocated(a->rp.model, device, &p) != 0) {
        snprintf(err, errlen, "device %d has no allocated peak", device);
        return MH_EINVAL;
    }
    *out = (struct mh_flame_moment){p.event_index, p.time_ns - t0, p.step, p.value};
    return 0;
}
