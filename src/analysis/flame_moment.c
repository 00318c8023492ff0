/* flame_moment.c - the moment a flame graph shows (see flame.h): the
 * device's allocated peak or last OOM, or a time from the first event, as
 * the one moment resolver finds them (moment.h). */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "flame.h"
#include "moment.h"

static int at_time(const struct mh__analysis *a, uint64_t at_ns, struct mh__flame_moment *out,
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
    struct mh__moment m;
    int rc = mh__moment_at_time(a->session, MH__MOMENT_FIRST_EVENT, at_ns, &m);
    if (rc < 0)
        return rc;
    out->index = m.index;
    out->time_ns = at_ns;
    out->step = mh__lifetimes_step_of(a->lt, out->index);
    return 0;
}

int mh__flame_moment(const struct mh__analysis *a, int device, int at, uint64_t at_ns,
                     struct mh__flame_moment *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    uint64_t t0 = a->rp.summary.first_time_ns;
    if (at == MH__MOMENT_TIME)
        return at_time(a, at_ns, out, err, errlen);
    struct mh__moment m;
    mh__moment_in_model(a->rp.model, at, device, &m);
    if (!m.found) {
        if (at == MH__MOMENT_OOM)
            snprintf(err, errlen, "--at oom: device %d has no out-of-memory event", device);
        else
            snprintf(err, errlen, "device %d has no allocated peak", device);
        return MH_EINVAL;
    }
    *out = (struct mh__flame_moment){m.index, m.time_ns - t0, m.step, m.value};
    return 0;
}
