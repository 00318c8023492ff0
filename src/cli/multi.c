/* multi.c - the skeleton of the commands that take one file per rank
 * (report, layers, oom): each file replayed once through
 * src/analysis/analysis.h with the observers the command wants, one result
 * per file from the command's callback, then the rank table and the worst
 * rank (report_ranks.c; see cli.h). */
#include <stdlib.h>

#include "cli.h"
#include "printers.h"

/* Opens files [from, to); returns how many opened, *rc < 0 on a failure
 * (already reported). */
static size_t open_range(char **paths, size_t from, size_t to, const struct mh_cli_multi *m,
                         struct mh_analysis *a, int *rc)
{
    size_t i = from;
    for (; i < to; i++)
        if ((*rc = mh__analysis_open(paths[i], m->want, &a[i])) < 0)
            break;
    return i - from;
}

/* The results, between the JSON document's opening and closing. */
static int results(char **paths, size_t n, const struct mh_cli_multi *m, struct mh_analysis *a,
                   size_t *opened, struct mh_json *j)
{
    int rc = 0;
    if (j) {
        mh__json_key(j, "files");
        mh__json_begin_array(j);
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!m->open_all_first)
            *opened += open_range(paths, i, i + 1, m, a, &rc);
        if (rc == 0)
            rc = m->each(m->user, &a[i], i, n, j);
    }
    if (j)
        mh__json_end_array(j);
    if (rc == 0 && !m->no_worst)
        rc = mh__print_ranks(a, n, j);
    if (j)
        mh__json_end_object(j);
    return rc;
}

int mh__cli_multi_run(char **paths, size_t n, const struct mh_cli_multi *m)
{
    struct mh_analysis *a = calloc(n ? n : 1, sizeof *a);
    if (!a) {
        mh__cli_error("%s", mh_strerror(MH_ENOMEM));
        return MH_EXIT_FAIL;
    }
    int rc = 0;
    size_t opened = m->open_all_first ? open_range(paths, 0, n, m, a, &rc) : 0;
    if (rc == 0 && m->json_files) {
        struct mh_sink sink;
        struct mh_json j;
        mh__cli_json_begin(&j, &sink, m->command);
        rc = results(paths, n, m, a, &opened, &j); /* the pretty writer ends the line */
        mh__sink_finish(&sink);
    } else if (rc == 0) {
        rc = results(paths, n, m, a, &opened, NULL);
    }
    for (size_t i = 0; i < opened; i++)
        mh__analysis_close(&a[i]);
    free(a);
    return rc < 0 ? MH_EXIT_FAIL : rc;
}
