/* trace_around.c - the moment `memhist trace --around peak|oom` centres its
 * window on: a replay of the file (one session pass, src/analysis/session.h)
 * whose model gives each device's allocated peak and the OOMs, with the
 * step each happened in (the one moment resolver, moment.h). The window itself is the CLI's choice. */
#include <string.h>

#include "memhist/error.h"
#include "memhist/model.h"
#include "moment.h"
#include "trace_writer.h"

struct first_event {
    uint64_t first_ns;
    int seen;
};

static int on_event(void *user, struct mh__session *s, const struct mh_event *ev,
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

int mh__trace_moment(struct mh__session *s, int what, int device, struct mh__trace_moment *out)
{
    memset(out, 0, sizeof *out);
    struct first_event f = {0, 0};
    const struct mh__observer o = {"trace-around", &f, NULL, on_event, NULL};
    int rc = mh__session_pass(s, &o);
    if (rc < 0)
        return rc;
    const struct mh_model *m = mh__session_model(s);
    out->first_ns = f.first_ns;
    struct mh__moment mo;
    mh__moment_in_model(m, what == MH__TRACE_AROUND_OOM ? MH__MOMENT_OOM : MH__MOMENT_PEAK, device,
                        &mo);
    out->found = mo.found;
    out->device = mo.device;
    out->time_ns = mo.time_ns;
    out->step = mo.step;
    out->value = mo.value;
    if (out->found)
        out->has_steps = mh_model_step_count(m, out->device) > 0 || out->step >= 0;
    return 0;
}
