/* oom_cases.c - every moment `memhist oom` explains on one device (see
 * oom_explain.h): its OOMs (or its allocated peak), the allocator state at
 * each read in one more pass over the file that stops after the last, the
 * layers live at each from one layers analysis, and the what-if replays
 * shared by the cases (the replay under the recorded settings once; each
 * suggested setting once per capacity). Owns the cases. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "analysis.h"
#include "oom_int.h"

/* Reads each case's state as the pass goes by its event. */
struct states {
    struct mh__oom_case *c;
    size_t n, next, top;
    int rc;
};

static int state_event(void *user, struct mh__session *s, const struct mh_event *ev,
                       const struct mh_apply_result *res)
{
    struct states *st = user;
    (void)ev;
    (void)res;
    uint64_t index = mh__session_index(s);
    for (; st->next < st->n && st->c[st->next].oom.event_index == index; st->next++)
        if ((st->rc = mh__oom_read_state(mh__session_model(s), &st->c[st->next], st->top)) < 0)
            return st->rc;
    return st->next == st->n ? 1 : 0; /* the last case's moment has passed */
}

static int read_states(const struct mh__analysis *a, struct mh__oom_case *c, size_t n, size_t top)
{
    struct states st = {c, n, 0, top, 0};
    const struct mh__observer obs = {"oom-states", &st, NULL, state_event, NULL};
    int rc = mh__session_pass(a->session, &obs);
    return rc < 0 ? rc : st.rc;
}

/* Layers, the case set-ups and their shared replay under the recorded
 * settings. */
static int prepare(const struct mh__analysis *a, int device, const struct mh__oom_opts *o,
                   struct mh__whatif_input *in, struct mh__oom_cases *cs,
                   const struct mh_oom_info *ooms)
{
    uint64_t at[MH__OOM_CASES_MAX];
    for (size_t i = 0; i < cs->n; i++)
        at[i] = ooms[i].event_index;
    int rc = mh__layers_analyze(a, device, at, cs->n, &cs->ly);
    if (rc < 0)
        return rc;
    struct mh__whatif_outcome recorded, base; /* the replay the cases share */
    uint64_t usable = mh__whatif_recorded(in, &recorded) == 0 ? mh__whatif_capacity(in, &recorded) : 0;
    rc = mh__whatif_pick_ties(in, usable, &base);
    for (size_t i = 0; i < cs->n; i++) {
        struct mh__oom_case *c = &cs->c[i];
        c->device = device;
        c->usable = usable;
        c->baseline = base;
        c->baseline_given = 1;
        c->oom = ooms[i];
        c->verdict = o->at_peak ? MH__OOM_VERDICT_NONE : MH__OOM_VERDICT_EXHAUSTION;
        mh__oom_setup(a, cs->ly, o, c);
    }
    return rc;
}

int mh__oom_cases(const struct mh__analysis *a, int device, const struct mh__oom_opts *o,
                  struct mh__oom_cases *out)
{
    struct mh_oom_info ooms[MH__OOM_CASES_MAX];
    struct mh__whatif_input in;
    memset(out, 0, sizeof *out);
    size_t n = mh__oom_moments(a->rp.model, device, o->at_peak, ooms, MH__OOM_CASES_MAX);
    if (n == 0)
        return 0;
    int rc = mh__whatif_input(a->whatif, a->session, device, &in);
    if (rc < 0)
        return rc;
    struct mh__oom_replays *rs = calloc(1, sizeof *rs);
    out->c = calloc(n, sizeof *out->c);
    if (!rs || !out->c) {
        free(rs);
        free(out->c);
        out->c = NULL;
        return MH_ENOMEM;
    }
    out->n = n;
    rc = prepare(a, device, o, &in, out, ooms);
    if (rc == 0)
        rc = read_states(a, out->c, n, (size_t)o->top);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = mh__oom_conclude(a, &in, &out->c[i], rs);
    free(rs);
    if (rc < 0)
        mh__oom_cases_free(out);
    return rc;
}

void mh__oom_cases_free(struct mh__oom_cases *cs)
{
    for (size_t i = 0; cs->c && i < cs->n; i++)
        mh__oom_case_free(&cs->c[i]);
    free(cs->c);
    mh__layers_free(cs->ly);
    memset(cs, 0, sizeof *cs);
}
