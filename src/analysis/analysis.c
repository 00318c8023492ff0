/* analysis.c - one replay session with the observers a command wants (see
 * analysis.h). */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "diag.h"

static int observe_lifetimes(void *user, struct mh_session *s, const struct mh_event *ev,
                             const struct mh_apply_result *res)
{
    return mh__lifetimes_observe(user, mh__session_model(s), ev, res);
}

static int finish_lifetimes(void *user, struct mh_session *s)
{
    (void)s;
    mh__lifetimes_finish(user);
    return 0;
}

static int add_observers(struct mh_analysis *a, const struct mh_analysis_want *want)
{
    struct mh_observer lt = {"lifetimes", a->lt, NULL, observe_lifetimes, finish_lifetimes};
    int rc = mh__session_observe(a->session, &lt);
    if (rc == 0 && want && want->whatif && (rc = mh__whatif_source_new(&a->whatif)) == 0) {
        mh__whatif_source_expect(a->whatif, want->whatif == MH_WANT_WHATIF_OOM
                                                ? mh__whatif_expect_baseline
                                                : mh__report_trend_expect, NULL);
        rc = mh__session_observe(a->session, mh__whatif_source_observer(a->whatif));
    }
    if (rc == 0 && want && want->peak_groups && (rc = mh__peak_groups_new(&a->peaks)) == 0)
        rc = mh__session_observe(a->session, mh__peak_groups_observer(a->peaks));
    if (rc == 0 && want && want->growth && (rc = mh__growth_new(&a->growth)) == 0)
        rc = mh__session_observe(a->session, mh__growth_observer(a->growth));
    return rc;
}

int mh__analysis_open(const char *path, const struct mh_analysis_want *want, struct mh_analysis *a)
{
    memset(a, 0, sizeof *a);
    int rc = mh__session_open(path, &a->session);
    if (rc < 0)
        return rc;
    if ((rc = mh__lifetimes_new(&a->lt)) == 0 && (rc = add_observers(a, want)) < 0)
        mh__diag("%s: %s", path, mh_strerror(rc));
    if (rc == 0)
        rc = mh__session_run(a->session, 0);
    if (rc < 0) {
        mh__analysis_close(a);
        return rc;
    }
    mh__session_forget(a->session);
    a->rp.path = path;
    a->rp.reader = mh__session_reader(a->session);
    a->rp.model = mh__session_model(a->session);
    a->rp.read_error = mh__session_read_error(a->session);
    mh_reader_summary(a->rp.reader, &a->rp.summary);
    a->rp.t0_ns = a->rp.summary.first_time_ns;
    return 0;
}

void mh__analysis_close(struct mh_analysis *a)
{
    mh__peak_groups_free(a->peaks);
    mh__growth_free(a->growth);
    mh__whatif_source_free(a->whatif);
    mh__lifetimes_free(a->lt);
    mh__session_close(a->session);
    memset(a, 0, sizeof *a);
}

int mh__analysis_state_at(const struct mh_analysis *a, uint64_t n, struct mh_model **out)
{
    return mh__session_state_at(a->session, n, out);
}

size_t mh__analysis_worst(const struct mh_analysis *a, size_t n, uint64_t *peak_reserved)
{
    size_t worst = 0;
    uint64_t best = 0;
    for (size_t i = 0; i < n; i++) {
        const struct mh_model *m = a[i].rp.model;
        for (size_t d = 0; d < mh_model_device_count(m); d++) {
            struct mh_peak p;
            if (mh_model_peak_reserved(m, mh_model_device_at(m, d), &p) == 0 && p.value > best) {
                best = p.value;
                worst = i;
            }
        }
    }
    if (peak_reserved)
        *peak_reserved = best;
    return worst;
}

const char *mh__step_text(int64_t step, char buf[24])
{
    if (step < 0)
        snprintf(buf, 24, "before the first step");
    else
        snprintf(buf, 24, "step %lld", (long long)(step % 1000000000000LL));
    return buf;
}
