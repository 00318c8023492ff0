/* cmd_view.c - `memhist view FILE... -o report.html`: one self-contained
 * HTML page holding the answers of report, layers, oom and growth, the
 * timeline with its zoom levels and what is live at the precomputed
 * moments, and for several files (one per rank) the rank table. Parses the
 * options, replays the files through the one-file-per-rank skeleton
 * (multi.c; each file's part is made on its worker thread by
 * viz/view/view_html.h) and writes the page through an output file that
 * is refused when it is one of the inputs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "job_origin.h"
#include "job_ranks.h"
#include "view_html.h"

static const char usage[] =
    "usage: memhist view FILE... -o report.html [--moments N] [--events N]\n\n"
    "One HTML page that opens from disk with no network and holds every answer\n"
    "of `memhist report`, `layers`, `oom` and `growth`: the timeline of\n"
    "allocated and reserved memory with steps, OOMs and the peak (zoom with the\n"
    "wheel, drag to pan, down to single events of the steps kept); click a\n"
    "moment to see what is live there as an icicle by module path or by stack;\n"
    "the per-step table and the fragmentation trend with its what-if verdict;\n"
    "the OOM cards with their checked suggestions; the layers and the\n"
    "checkpointing plan with its K-curve; the growth sites; and with several\n"
    "files (one per rank) the rank table and heat map. A search box filters by\n"
    "module, file or function. Frames show package-relative paths, the full\n"
    "path on hover.\n\n"
    "The page never holds every event: the timeline is kept as the lowest and\n"
    "highest memory per bucket at two levels (2048 and 32768 buckets; the first\n"
    "alone from 9 files), the raw events of the peak's and the OOMs' steps and\n"
    "of the first steps up to --events per device, and what is live at up to\n"
    "--moments moments per device (the peak, each OOM, step peaks, evenly spaced\n"
    "samples); from 8 files both defaults shrink with the number of files. The\n"
    "page says what it left out. A cut or damaged recording gives a page that\n"
    "says what is missing.\n\n"
    "options:\n"
    "  -o, --output OUT   the HTML file to write (required; '-' = stdout)\n"
    "  --moments N        moments with live trees per device (default 64, 4..1024)\n"
    "  --events N         raw events kept per device (default 40000, 1..5000000)\n"
    "  -h, --help         show this help\n\n"
    "examples:\n"
    "  memhist view run.memhist -o report.html\n"
    "  memhist view run.rank*.memhist -o job.html\n";

extern const struct mh__cli_command mh__cmd_view;

struct view_args {
    const char *out;
    char **paths;
    size_t npaths;
    uint64_t moments, events;
    int has_events;
    struct mh__view_opts opts;
    struct mh__view_part **parts; /* one per file, in order */
    struct mh__rank_row *rows;
};

static int parse_args(int argc, char **argv, struct view_args *a)
{
    const struct mh__cli_opt opts[] = {
        {"output", 'o', MH__OPT_TEXT, &a->out, 0, 0, NULL, NULL},
        {"moments", 0, MH__OPT_UINT, &a->moments, 4, 1024, NULL, NULL},
        {"events", 0, MH__OPT_UINT, &a->events, 1, 5000000, NULL, &a->has_events},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int first, rc = mh__cli_options(&mh__cmd_view, argc, argv, opts, &first);
    if (rc)
        return rc;
    if (first >= argc)
        return mh__cli_usage_error(&mh__cmd_view, "missing the input FILE");
    if (!a->out)
        return mh__cli_usage_error(&mh__cmd_view, "missing -o report.html ('-' for stdout)");
    a->paths = argv + first;
    a->npaths = (size_t)(argc - first);
    /* one page for many ranks: each file's share of the detail shrinks */
    size_t share = a->npaths > 4 ? a->npaths / 4 : 1;
    a->opts.max_moments = a->moments ? (size_t)a->moments : (64 / share > 8 ? 64 / share : 8);
    a->opts.max_events = a->has_events ? (size_t)a->events : 40000 / share;
    a->opts.coarse_only = a->npaths > 8;
    return 0;
}

static int prepare(void *user, const struct mh__analysis *an, void **prepared)
{
    const struct view_args *a = user;
    struct mh__view_part *p;
    int rc = mh__view_part_make(an, &a->opts, &p);
    *prepared = rc == 0 ? p : NULL;
    return rc;
}

/* Keeps the file's part (freed once the page is written) and rank row. */
static int each(void *user, const struct mh__analysis *an, void *prepared, size_t i, size_t n,
                struct mh__json *j)
{
    struct view_args *a = user;
    (void)n;
    (void)j;
    a->parts[i] = prepared;
    mh__rank_row_fill(an, &a->rows[i]);
    return 0;
}

static void title_of(const struct view_args *a, char *buf, size_t len)
{
    if (a->npaths == 1)
        snprintf(buf, len, "memhist view: %s", a->paths[0]);
    else
        snprintf(buf, len, "memhist view: %zu files (%s, ...)", a->npaths, a->paths[0]);
}

static int write_page(struct view_args *a, struct mh__outfile *of)
{
    char title[512];
    struct mh__sink sink;
    title_of(a, title, sizeof title);
    mh__sink_init_file(&sink, of->fp);
    uint64_t t0 = 0; /* the job's start: rank times count from it */
    if (a->npaths > 1 && mh__job_origin((const char *const *)a->paths, a->npaths, &t0) < 0)
        t0 = 0;
    int rc = mh__view_write(&sink, title, a->parts, a->npaths > 1 ? a->rows : NULL, a->npaths, t0);
    rc = rc ? rc : mh__sink_finish(&sink);
    int errnum = rc ? (sink.errnum ? sink.errnum : EIO) : 0;
    if (rc && !sink.errnum)
        mh__cli_error("%s: %s", a->out, mh_strerror(rc));
    return mh__cli_output_close(of, a->out, rc, errnum) < 0 ? MH__EXIT_FAIL : MH__EXIT_OK;
}

static int view_files(struct view_args *a)
{
    struct mh__outfile of;
    if (mh__cli_output_open(&of, a->out, (const char *const *)a->paths, a->npaths) < 0)
        return MH__EXIT_FAIL;
    const struct mh__analysis_want want = {MH__WANT_WHATIF_TREND, 1, 1};
    const struct mh__cli_multi m = {.command = "view",
                                    .want = &want,
                                    .no_worst = 1,
                                    .each = each,
                                    .prepare = prepare,
                                    .user = a};
    a->parts = calloc(a->npaths, sizeof *a->parts);
    a->rows = calloc(a->npaths, sizeof *a->rows);
    int rc = a->parts && a->rows ? mh__cli_multi_run(a->paths, a->npaths, &m) : MH__EXIT_FAIL;
    for (size_t i = 0; rc == 0 && i < a->npaths; i++)
        rc = a->parts[i] ? 0 : MH__EXIT_FAIL;
    if (rc == 0)
        rc = write_page(a, &of);
    else
        mh__outfile_abort(&of);
    size_t bytes = 0;
    for (size_t i = 0; a->parts && i < a->npaths; i++)
        if (a->parts[i]) {
            bytes += mh__view_part_size(a->parts[i]);
            mh__view_part_free(a->parts[i]);
        }
    if (rc == 0 && strcmp(a->out, "-") != 0)
        mh__cli_status_wrote(a->out, NULL, "%zu file%s, %zu KiB of data", a->npaths,
                             a->npaths == 1 ? "" : "s", bytes / 1024);
    free(a->parts);
    free(a->rows);
    return rc;
}

static int run(int argc, char **argv)
{
    struct view_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    return mh__cli_finish(view_files(&a));
}

const struct mh__cli_command mh__cmd_view = {
    .name = "view",
    .summary = "one self-contained interactive HTML report of every answer",
    .usage = usage,
    .run = run,
};
