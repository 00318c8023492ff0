/* oom_run.c - `memhist oom` over its files: for each device the moments to
 * explain, each one gathered by src/analysis/oom_explain.c and printed as
 * text or JSON by report_oom_print.c, then the worst rank. The cases are
 * src/analysis/oom_explain.h's (mh__oom_cases); this file only prints. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "printers.h"

static int explain_device(const struct mh__analysis *a, int device, const struct mh__oom_opts *o,
                          struct mh__json *j, size_t *shown)
{
    struct mh__oom_cases cs;
    int rc = mh__oom_cases(a, device, o, &cs);
    for (size_t i = 0; i < cs.n && rc == 0; i++) {
        if (j)
            mh__oom_print_json(j, a, &cs.c[i], o);
        else
            mh__oom_print_text(a, &cs.c[i], o, i + 1, cs.n);
        (*shown)++;
    }
    mh__oom_cases_free(&cs);
    return rc;
}

static int explain_file(const struct mh__analysis *a, const struct mh__oom_opts *o, struct mh__json *j)
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

static int oom_file(void *user, const struct mh__analysis *a, void *prepared, size_t i,
                    size_t n, struct mh__json *j)
{
    (void)prepared;
    (void)i;
    (void)n;
    return explain_file(a, user, j) < 0 ? MH__EXIT_FAIL : 0;
}

int mh__oom_explain_all(char **paths, size_t n, const struct mh__oom_opts *o)
{
    const struct mh__analysis_want want = {MH__WANT_WHATIF_OOM, 0, 0};
    const struct mh__cli_multi m = {.command = "oom", .want = &want, .json_files = o->json, .each = oom_file, .user = (void *)o};
    return mh__cli_multi_run(paths, n, &m);
}
