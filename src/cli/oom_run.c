/* oom_run.c - `memhist oom` over its files: for each device the moments to
 * explain, each one gathered by src/analysis/oom_explain.c and printed as
 * text or JSON by report_oom_print.c, then the worst rank. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "printers.h"
#include "whatif_check.h"

static int explain_device(const struct mh_analysis *a, int device, const struct mh_oom_opts *o,
                          struct mh_json *j, size_t *shown)
{
    struct mh_oom_info ooms[64];
    size_t n = mh__oom_moments(a->rp.model, device, o->at_peak, ooms, 64);
    if (n == 0)
        return 0;
    struct mh_whatif_input in;
    struct mh_layers *ly;
    int rc = mh__whatif_input(a->whatif, a->session, device, &in);
    if (rc < 0)
        return rc;
    uint64_t at[64];
    for (size_t i = 0; i < n; i++)
        at[i] = ooms[i].event_index;
    if ((rc = mh__layers_analyze(a, device, at, n, &ly)) < 0)
        return rc;
    struct mh_whatif_outcome recorded;
    uint64_t usable = mh__whatif_recorded(&in, &recorded) == 0 ? mh__whatif_capacity(&in, &recorded) : 0;
    struct mh_whatif_outcome base; /* the replay under the recorded settings, which the cases share */
    rc = mh__whatif_pick_ties(&in, usable, &base);
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct mh_oom_case c;
        memset(&c, 0, sizeof c);
        c.device = device;
        c.usable = usable;
        c.baseline = base;
        c.baseline_given = 1;
        c.oom = ooms[i];
        c.verdict = o->at_peak ? MH_OOM_VERDICT_NONE : MH_OOM_VERDICT_EXHAUSTION;
        rc = mh__oom_gather(a, &in, ly, o, &c);
        if (rc == 0 && j)
            mh__oom_print_json(j, a, &c, o);
        else if (rc == 0)
            mh__oom_print_text(a, &c, o, i + 1, n);
        mh__oom_case_free(&c);
        (*shown)++;
    }
    mh__layers_free(ly);
    return rc;
}

static int explain_file(const struct mh_analysis *a, const struct mh_oom_opts *o, struct mh_json *j)
{
    const struct mh_model *m = a->rp.model;
    size_t shown = 0;
    int rc = 0;
    if (j) {
        mh__json_begin_object(j);
        mh__json_kv_string(j, "file", a->rp.path);
        mh__json_key(j, "cases");
        mh__json_begin_array(j);
    }
    for (size_t d = 0; d < mh_model_device_count(m) && rc == 0; d++)
        rc = explain_device(a, mh_model_device_at(m, d), o, j, &shown);
    if (j) {
        mh__json_end_array(j);
        mh__json_end_object(j);
    } else if (rc == 0 && shown == 0) {
        printf("%s: no OOM in this recording (use --at peak to explain the peak instead)\n",
               a->rp.path);
    }
    if (rc < 0)
        mh__cli_error("%s: %s", a->rp.path, mh_strerror(rc));
    return rc;
}

static int oom_file(void *user, const struct mh_analysis *a, void *prepared, size_t i,
                    size_t n, struct mh_json *j)
{
    (void)prepared;
    (void)i;
    (void)n;
    return explain_file(a, user, j) < 0 ? MH_EXIT_FAIL : 0;
}

int mh__oom_explain_all(char **paths, size_t n, const struct mh_oom_opts *o)
{
    const struct mh_analysis_want want = {MH_WANT_WHATIF_OOM, 0, 0};
    const struct mh_cli_multi m = {.command = "oom", .want = &want, .json_files = o->json, .each = oom_file, .user = (void *)o};
    return mh__cli_multi_run(paths, n, &m);
}
