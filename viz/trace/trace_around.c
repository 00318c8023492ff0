/* trace_around.c - the moment `memhist trace --around peak|oom` centres its
 * window on: a replay of the file (one session pass, src/analysis/session.h)
 * whose model gives each device's allocated peak and the OOMs, with the
 * step each happened in. The window itself is the CLI's choice. */
#include <string.h>

#include "memhist/error.h"
#include "memhist/model.h"
#include "trace_writer.h"

struct first_event {
    uint64_t first_ns;
    int seen;
};

static int on_event(void *user, struct mh_session *s, const struct mh_event *ev,
                    const struct mh_apply_result *res)
{
    struct first_event *f = user;
    (void)s;
    (void)res;
    if (!f->seen) { /* as the scan takes it: the first in the file */
        f->first_ns = ev->time_ns;
        f->seen = 1;
    }
    return 0;
}

static void peak_of(const struct mh_model *m, int device, struct mh_trace_moment *out)
{
    for (size_t i = 0; i < mh_model_device_count(m); i++) {
        int d = mh_model_device_at(m, i);
        struct mh_peak p;
        if ((device >= 0 && d != device) || mh_model_peak_allocated(m, d, &p) != 0)
            continue;
        if (!out->found || p.value > out->value) {
            out->found = 1;
            out->device = d;
            out->value = p.value;
            out->time_ns = p.time_ns;
            out->step = p.step;
        }
    }
}

static void oom_of(const struct mh_model *m, int device, struct mh_trace_moment *out)
{
    for (size_t i = 0; i < mh_model_oom_count(m); i++) {
        struct mh_oom_info o;
        if (mh_model_oom(m, i, &o) != 0 || (device >= 0 && o.device != device))
            continue;
        if (!out->found || o.time_ns >= out->time_ns) { /* the last one */
            out->found = 1;
            out->device = o.device;
            out->value = o.request;
            out->time_ns = o.time_ns;
            out->step = o.step;
        }
    }
}

int mh__trace_moment(struct mh_session *s, int what, int device, struct mh_trace_moment *out)
{
    memset(out, 0, sizeof *out);
    struct first_event f = {0, 0};
    const struct mh_observer o = {"trace-around", &f, NULL, on_event, NULL};
    int rc = mh__session_pass(s, &o);
    if (rc < 0)
        return rc;
    const struct mh_model *m = mh__session_model(s);
    out->first_ns = f.first_ns;
    if (what == MH_TRACE_AROUND_OOM)
        oom_of(m, device, out);
    else
        peak_of(m, device, out);
    if (out->found)
        out->has_steps = mh_model_step_count(m, out->device) > 0 || out->step >= 0;
    return 0;
}
