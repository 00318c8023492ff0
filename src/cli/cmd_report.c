/* cmd_report.c - `memhist report FILE`: the peak, what was live at the peak
 * and from where, per-step evolution of allocated and reserved memory, OOMs.
 *
 * The answer is src/analysis/device_report.h (built on the worker thread
 * that replayed the file); printing is in report_text.c and report_json.c. */
#include <stdlib.h>
#include <string.h>

#include "printers.h"
#include "analysis.h"
#include "json.h"
#include "sink.h"

static const char usage[] =
    "usage: memhist report [--device N] [--top N] [--frames N] [--steps A:B | --all-steps]\n"
    "                      [--json] FILE...\n\n"
    "Per device: peak allocated and peak reserved with time and step; the top N\n"
    "live allocation groups at the allocated peak, grouped by stack, and the bytes\n"
    "live at the peak by category (parameter, gradient, optimizer_state,\n"
    "activation, temporary, input, unknown: from lifetimes and phases); a per-step\n"
    "table (peak allocated, peak reserved, reserved at step end, fragmentation at\n"
    "the reserved peak = 1 - allocated/reserved, allocated and inactive split bytes\n"
    "and the largest free block at the reserved peak, segments, segment\n"
    "allocs/frees, alloc retries, OOMs) with a one-line fragmentation verdict\n"
    "with a what-if under expandable_segments:True (checked when a replay under\n"
    "the recorded settings reproduces the run, else an estimate); one line when\n"
    "memory allocated in a step stays live step after step (`memhist growth`\n"
    "lists the sites); and every OOM with the request, free device memory,\n"
    "reserved but unallocated bytes and the largest free block (`memhist oom`\n"
    "explains them). Steps are the device's own (an Optimizer.step ends a step on\n"
    "the devices of its parameters; a period in which the device did nothing is\n"
    "not its step); what follows the last step is the 'tail' row, left out of the\n"
    "trend. Several files (one per rank: FILE.rank*) are reported in turn, then a\n"
    "rank table (host, device, peaks with step and time from the job's earliest\n"
    "start, steps, OOMs, fragmentation), the spread across ranks and the worst\n"
    "rank, ties stated. Runs of more than 30 steps get a summarised table: the\n"
    "first and last steps, the peak steps and the outliers (OOMs, retries, peaks\n"
    "well above the median).\n\n"
    "'allocated' is what torch.cuda.memory_allocated() reports (rounded block\n"
    "sizes); 'reserved' is torch.cuda.memory_reserved() (segment sizes).\n\n"
    "options:\n"
    "  --device N   only device N as each file's process saw it (default: every\n"
    "               device in the file)\n"
    "  --top N      allocation groups to list at the peak (default 10)\n"
    "  --frames N   stack frames shown per group in text output (default 6)\n"
    "  --steps A:B  only steps A..B in the per-step table and JSON (A:, :B, N)\n"
    "  --all-steps  every step in the per-step table, however long the run\n"
    "  --json       print one JSON object instead of text\n"
    "  -h, --help   show this help\n";

static int run_report(int argc, char **argv);

const struct mh__cli_command mh__cmd_report = {
    "report", "peaks, what was live at the peak and from where, per-step table, OOMs", usage,
    run_report};

struct report_opts {
    int device; /* -1 = all */
    uint64_t top, frames;
    int json;
    struct mh__json *j; /* the output object when json */
    struct mh__report_view view;
    const char *path;
    char **paths;
    size_t npaths;
};

static int parse_opts(int argc, char **argv, struct report_opts *o)
{
    const char *steps = NULL;
    *o = (struct report_opts){.device = -1, .top = 10, .frames = 6};
    const struct mh__cli_opt opts[] = {
        {"device", 0, MH__OPT_INT, &o->device, 0, 255, NULL, NULL},
        {"top", 0, MH__OPT_UINT, &o->top, 1, 100000, NULL, NULL},
        {"frames", 0, MH__OPT_UINT, &o->frames, 1, 1000, NULL, NULL},
        {"json", 0, MH__OPT_FLAG, &o->json, 0, 0, NULL, NULL},
        {"steps", 0, MH__OPT_TEXT, &steps, 0, 0, NULL, NULL},
        {"all-steps", 0, MH__OPT_FLAG, &o->view.all_steps, 0, 0, NULL, NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    char err[160];
    int first, rc = mh__cli_options(&mh__cmd_report, argc, argv, opts, &first);
    if (rc)
        return rc;
    if (steps && mh__cli_parse_window(steps, NULL, &o->view.steps, err, sizeof err) != 0)
        return mh__cli_usage_error(&mh__cmd_report, "%s", err);
    if (first >= argc)
        return mh__cli_usage_error(&mh__cmd_report, "missing FILE");
    if (o->view.all_steps && o->view.steps.has_steps)
        return mh__cli_usage_error(&mh__cmd_report, "--steps and --all-steps exclude each other");
    o->view.max_frames = (size_t)o->frames;
    o->paths = argv + first;
    o->npaths = (size_t)(argc - first);
    return 0;
}

/* One file's device reports: built on the worker thread that replayed the
 * file (prepare_file), printed in order on the main thread. */
struct report_devs {
    struct mh__device_reports r;
    int rc; /* 0 or the MH_E* that stopped the building */
};

static int prepare_file(void *user, const struct mh__analysis *a, void **prepared)
{
    const struct report_opts *o = user;
    struct report_devs *r = calloc(1, sizeof *r);
    if (!r)
        return MH_ENOMEM;
    r->rc = mh__device_reports(a, o->device, (size_t)o->top, &r->r);
    *prepared = r;
    return 0;
}

static void discard_file(void *prepared)
{
    struct report_devs *r = prepared;
    mh__device_reports_free(&r->r);
    free(r);
}

static int report_devices(const struct report_opts *o, const struct mh__analysis *a,
                          const struct report_devs *r)
{
    const struct mh__replay *rp = &a->rp;
    int rc = r->rc;
    if (rc == 0 && o->device >= 0 && r->r.n == 0) {
        mh__cli_missing_device(o->path, rp->model, o->device, o->npaths > 1);
        rc = MH_EINVAL;
    } else if (rc == 0 && o->json) {
        mh__report_print_json(o->j, rp, r->r.devs, r->r.n, &o->view.steps);
    } else if (rc == 0) {
        mh__report_print_text(rp, r->r.devs, r->r.n, &o->view);
    } else {
        mh__cli_error("%s: %s", o->path, mh_strerror(rc));
    }
    return rc == 0 ? MH__EXIT_OK : MH__EXIT_FAIL;
}

static int report_file(void *user, const struct mh__analysis *a, void *prepared, size_t i,
                       size_t n, struct mh__json *j)
{
    struct report_opts *o = user;
    (void)i;
    (void)n;
    o->path = a->rp.path;
    o->j = j;
    return report_devices(o, a, prepared);
}

static int run_report(int argc, char **argv)
{
    struct report_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc;
    const struct mh__analysis_want want = {MH__WANT_WHATIF_TREND, 1, 1};
    const struct mh__cli_multi m = {.command = "report", .want = &want, .json_files = o.json,
                                   .each = report_file, .user = &o, .prepare = prepare_file,
                                   .discard = discard_file};
    return mh__cli_finish(mh__cli_multi_run(o.paths, o.npaths, &m));
}
