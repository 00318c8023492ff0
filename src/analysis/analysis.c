/* analysis.c - one replay session with the observers a command wants (see
 * analysis.h). */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "diag.h"

static int observe_lifetimes(void *user, struct mh__session *s, const struct mh_event *ev,
                             const struct mh_apply_result *res)
{
    return mh__lifetimes_observe(user, mh__session_model(s), ev, res, NULL);
}

static int finish_lifetimes(void *user, struct mh__session *s)
{
    (void)s;
    return mh__lifetimes_finish(user, NULL, NULL);
}

static int add_observers(struct mh__analysis *a, const struct mh__analysis_want *want)
{
    struct mh__observer lt = {"lifetimes", a->lt, NULL, observe_lifetimes, finish_lifetimes};
    int rc = mh__session_observe(a->session, &lt);
    if (rc == 0 && want && want->whatif && (rc = mh__whatif_source_new(&a->whatif)) == 0) {
        mh__whatif_source_expect(a->whatif,
                                 want->whatif == MH__WANT_WHATIF_OOM ? mh__whatif_expect_baseline
                                                                     : mh__report_trend_expect,
                                 NULL);
        rc = mh__session_observe(a->session, mh__whatif_source_observer(a->whatif));
    }
    if (rc == 0 && want && want->peak_groups && (rc = mh__peak_groups_new(&a->peaks)) == 0)
        rc = mh__session_observe(a->session, mh__peak_groups_observer(a->peaks));
    if (rc == 0 && want && want->growth && (rc = mh__growth_new(&a->growth)) == 0)
        rc = mh__session_observe(a->session, mh__growth_observer(a->growth));
    return rc;
}

/* The first pass over the session just opened (a->session). */
static int first_pass(const char *path, const struct mh__analysis_want *want,
                      struct mh__analysis *a)
{
    int rc;
    if ((rc = mh__lifetimes_new(&a->lt)) == 0)
        mh__lifetimes_keep_peaks(a->lt);
    if (rc == 0 && (rc = add_observers(a, want)) < 0)
        mh__diag("%s: %s", path, mh_strerror(rc));
    if (rc == 0)
        rc = mh__session_run(a->session, 0);
    if (rc < 0) {
        mh__analysis_close(a);
        return rc;
    }
    mh__session_forget(a->session);
    a->model = mh__session_take_model(a->session); /* later passes make their own */
    a->rp.path = path;
    a->rp.reader = mh__session_reader(a->session);
    a->rp.model = a->model;
    a->rp.read_error = mh__session_read_error(a->session);
    mh_reader_summary(a->rp.reader, &a->rp.summary);
    a->rp.t0_ns = a->rp.summary.first_time_ns;
    return 0;
}

int mh__analysis_open(const char *path, const struct mh__analysis_want *want,
                      struct mh__analysis *a)
{
    memset(a, 0, sizeof *a);
    int rc = mh__session_open(path, &a->session);
    return rc < 0 ? rc : first_pass(path, want, a);
}

int mh__analysis_open_mem(const void *data, size_t len, const char *name,
                          const struct mh__analysis_want *want, struct mh__analysis *a)
{
    memset(a, 0, sizeof *a);
    int rc = mh__session_open_mem(data, len, name, &a->session);
    return rc < 0 ? rc : first_pass(name, want, a);
}

void mh__analysis_close(struct mh__analysis *a)
{
    mh__peak_groups_free(a->peaks);
    mh__growth_free(a->growth);
    mh__whatif_source_free(a->whatif);
    mh__lifetimes_free(a->lt);
    mh_model_free(a->model);
    mh__session_close(a->session);
    memset(a, 0, sizeof *a);
}

int mh__analysis_state_at(const struct mh__analysis *a, uint64_t n, struct mh_model **out)
{
    return mh__session_state_at(a->session, n, out);
}

static int observe_kept(void *user, struct mh__session *s, const struct mh_event *ev,
                        const struct mh_apply_result *res)
{
    return mh__lifetimes_observe(*(struct mh__lifetimes **)user, mh__session_model(s), ev, res,
                                 NULL);
}

static int finish_kept(void *user, struct mh__session *s)
{
    (void)s;
    return mh__lifetimes_finish(*(struct mh__lifetimes **)user, NULL, NULL);
}

/* A pass handing every allocation's record to a callback. */
struct each_record {
    struct mh__lifetimes *lt;
    int (*fn)(void *user, const struct mh__alloc_rec *r);
    void *user;
};

static int observe_each(void *user, struct mh__session *s, const struct mh_event *ev,
                        const struct mh_apply_result *res)
{
    struct each_record *e = user;
    struct mh__life_change ch;
    int rc = mh__lifetimes_observe(e->lt, mh__session_model(s), ev, res, &ch);
    return rc == 0 && ch.ended ? e->fn(e->user, ch.ended) : rc;
}

static int finish_each(void *user, struct mh__session *s)
{
    struct each_record *e = user;
    (void)s;
    return mh__lifetimes_finish(e->lt, e->fn, e->user);
}

int mh__analysis_each_record(const struct mh__analysis *a,
                             int (*fn)(void *user, const struct mh__alloc_rec *r), void *user)
{
    struct each_record e = {NULL, fn, user};
    int rc = mh__lifetimes_new_after(a->lt, &e.lt);
    const struct mh__observer obs = {"records", &e, NULL, observe_each, finish_each};
    if (rc == 0)
        rc = mh__session_pass(a->session, &obs);
    mh__lifetimes_free(e.lt);
    return rc;
}

int mh__analysis_records_at(const struct mh__analysis *a, const uint64_t *index, size_t n,
                            const struct mh__lifetimes **use, struct mh__lifetimes **own)
{
    int held = 1;
    for (size_t i = 0; i < n; i++)
        held &= mh__lifetimes_holds(a->lt, index[i]);
    *own = NULL;
    *use = a->lt;
    if (held)
        return 0;
    int rc = mh__analysis_moments(a, index, n, own);
    *use = *own;
    return rc;
}

int mh__analysis_moments_observer(const struct mh__analysis *a, const uint64_t *index, size_t n,
                                  struct mh__lifetimes **out, struct mh__observer *obs)
{
    *out = NULL;
    int rc = mh__lifetimes_new_after(a->lt, out);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = mh__lifetimes_keep_at(*out, index[i]);
    if (rc < 0) {
        mh__lifetimes_free(*out);
        *out = NULL;
        return rc;
    }
    *obs = (struct mh__observer){"moments", out, NULL, observe_kept, finish_kept};
    return 0;
}

int mh__analysis_moments(const struct mh__analysis *a, const uint64_t *index, size_t n,
                         struct mh__lifetimes **out)
{
    struct mh__observer obs;
    int rc = mh__analysis_moments_observer(a, index, n, out, &obs);
    if (rc == 0 && (rc = mh__session_pass(a->session, &obs)) < 0) {
        mh__lifetimes_free(*out);
        *out = NULL;
    }
    return rc;
}

int mh__step_find(const struct mh_model *m, int device, int64_t step, struct mh_step_stats *out)
{
    size_t lo = 0, hi = mh_model_step_count(m, device);
    while (lo < hi) { /* steps come in order of their numbers ... */
        size_t mid = lo + (hi - lo) / 2;
        if (mh_model_step(m, device, mid, out) != 0)
            break;
        if (out->step == step)
            return 0;
        if (out->step < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = 0; i < mh_model_step_count(m, device); i++) /* ... but need not */
        if (mh_model_step(m, device, i, out) == 0 && out->step == step)
            return 0;
    return MH_ENOTFOUND;
}

const char *mh__step_text(int64_t step, char buf[24])
{
    if (step < 0)
        snprintf(buf, 24, "before the first step");
    else
        snprintf(buf, 24, "step %lld", (long long)(step % 1000000000000LL));
    return buf;
}
