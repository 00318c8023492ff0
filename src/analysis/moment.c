/* moment.c - the moments commands show or centre on (see moment.h): the
 * peak and the OOMs read from a replayed model, a time found by a pass that
 * counts the events up to it. */
#include <string.h>

#include "moment.h"

void mh__moment_in_model(const struct mh_model *m, int kind, int device, struct mh__moment *out)
{
    memset(out, 0, sizeof *out);
    if (kind == MH__MOMENT_OOM) {
        for (size_t i = 0; i < mh_model_oom_count(m); i++) {
            struct mh_oom_info o;
            if (mh_model_oom(m, i, &o) != 0 || (device >= 0 && o.device != device))
                continue;
            if (!out->found || o.time_ns >= out->time_ns) /* the last one */
                *out = (struct mh__moment){1, o.device, o.event_index, o.time_ns, o.step, o.request};
        }
        return;
    }
    for (size_t i = 0; i < mh_model_device_count(m); i++) {
        int d = mh_model_device_at(m, i);
        struct mh_peak p;
        if ((device >= 0 && d != device) || mh_model_peak_allocated(m, d, &p) != 0)
            continue;
        if (!out->found || p.value > out->value)
            *out = (struct mh__moment){1, d, p.event_index, p.time_ns, p.step, p.value};
    }
}

/* Counts the events up to a time, ending the pass at the first one after. */
struct upto {
    uint64_t t0, at_ns, n, last_ns;
    int64_t step;
};

static int count_upto(void *user, struct mh__session *s, const struct mh_event *ev,
                      const struct mh_apply_result *res)
{
    struct upto *u = user;
    (void)res;
    if (u->t0 == MH__MOMENT_FIRST_EVENT)
        u->t0 = ev->time_ns;
    if (ev->time_ns > u->t0 && ev->time_ns - u->t0 > u->at_ns)
        return 1;
    u->n++;
    u->last_ns = ev->time_ns;
    u->step = mh_model_current_step(mh__session_model(s));
    return 0;
}

int mh__moment_at_time(struct mh__session *s, uint64_t t0, uint64_t at_ns, struct mh__moment *out)
{
    struct upto u = {t0, at_ns, 0, 0, -1};
    const struct mh__observer obs = {"moment", &u, NULL, count_upto, NULL};
    memset(out, 0, sizeof *out);
    int rc = mh__session_pass(s, &obs);
    if (rc < 0)
        return rc;
    *out = (struct mh__moment){u.n > 0, -1, u.n ? u.n - 1 : 0, u.t0 + at_ns, u.step, 0};
    return 0;
}
