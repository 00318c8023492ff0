/* analysis.c - replaying a file with lifetimes (see analysis.h). */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "diag.h"

static int replay_all(struct mh_analysis *a)
{
    struct mh_replay *rp = &a->rp;
    struct mh_event ev;
    struct mh_apply_result res;
    int rc;
    while ((rc = mh_reader_next(rp->reader, &ev)) == 1) {
        memset(&res, 0, sizeof res);
        if ((rc = mh_model_apply(rp->model, &ev, &res)) < 0)
            break;
        if ((rc = mh__lifetimes_observe(a->lt, rp->model, &ev, &res)) < 0)
            break;
    }
    if (rc < 0 && rc != MH_ENOMEM) {
        rp->read_error = rc;
        mh__diag("warning: %s: %s; using the events before that point", rp->path,
                     mh_reader_errmsg(rp->reader));
        rc = 0;
    }
    return rc;
}

int mh__analysis_open(const char *path, struct mh_analysis *a)
{
    memset(a, 0, sizeof *a);
    a->rp.path = path;
    int rc = mh__open_reader(path, &a->rp.reader);
    if (rc < 0)
        return rc;
    struct mh_model_opts opts;
    memset(&opts, 0, sizeof opts);
    mh__file_conf(a->rp.reader, &opts.conf);
    rc = mh_model_new(&opts, &a->rp.model);
    if (rc == 0)
        rc = mh__lifetimes_new(&a->lt);
    if (rc == 0)
        rc = replay_all(a);
    if (rc < 0) {
        mh__diag("%s: %s", path, mh_strerror(rc));
        mh__analysis_close(a);
        return rc;
    }
    mh_model_finish(a->rp.model);
    mh__lifetimes_finish(a->lt);
    mh_reader_summary(a->rp.reader, &a->rp.summary);
    return 0;
}

void mh__analysis_close(struct mh_analysis *a)
{
    mh__lifetimes_free(a->lt);
    a->lt = NULL;
    mh__replay_close(&a->rp);
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
        snprintf(buf, 24, "before step 1");
    else
        snprintf(buf, 24, "step %lld", (long long)(step % 1000000000000LL));
    return buf;
}
