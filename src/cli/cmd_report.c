/* cmd_report.c - `memhist report FILE`: the peak, what was live at the peak
 * and from where, per-step evolution of allocated and reserved memory, OOMs.
 *
 * Replays the file once through a session (src/analysis/session.h) whose
 * observers gather lifetimes, the events for the what-if check and the live
 * groups at each device's allocated peak. Printing is in report_text.c and
 * report_json.c. */
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

const struct mh_cli_command mh__cmd_report = {
    "report", "peaks, what was live at the peak and from where, per-step table, OOMs", usage,
    run_report};

struct report_opts {
    int device; /* -1 = all */
    uint64_t top, frames;
    int json;
    struct mh_json *j; /* the output object when json */
    struct mh_report_view view;
    const char *path;
    char **paths;
    size_t npaths;
};

static int parse_opts(int argc, char **argv, struct report_opts *o)
{
    const char *steps = NULL;
    *o = (struct report_opts){.device = -1, .top = 10, .frames = 6};
    const struct mh_cli_opt opts[] = {
        {"device", 0, MH_OPT_INT, &o->device, 0, 255, NULL, NULL},
        {"top", 0, MH_OPT_UINT, &o->top, 1, 100000, NULL, NULL},
        {"frames", 0, MH_OPT_UINT, &o->frames, 1, 1000, NULL, NULL},
        {"json", 0, MH_OPT_FLAG, &o->json, 0, 0, NULL, NULL},
        {"steps", 0, MH_OPT_TEXT, &steps, 0, 0, NULL, NULL},
        {"all-steps", 0, MH_OPT_FLAG, &o->view.all_steps, 0, 0, NULL, NULL},
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

static int build_device(const struct report_opts *o, const struct mh_analysis *a,
                        const struct mh_lifetimes *at_peaks, int device, struct mh_device_report *d)
{
    const struct mh_replay *rp = &a->rp;
    memset(d, 0, sizeof *d);
    d->device = device;
    mh__device_info(rp->reader, device, &d->info);
    mh_model_peak_allocated(rp->model, device, &d->peak_allocated);
    mh_model_peak_reserved(rp->model, device, &d->peak_reserved);
    mh_model_stats(rp->model, device, &d->final);
    if (d->peak_allocated.value)
        mh__lifetimes_live_by_category(at_peaks, device, d->peak_allocated.event_index,
                                       d->category_at_peak, NULL);
    struct mh_whatif_input in;
    int rc = mh__whatif_input(a->whatif, a->session, device, &in);
    if (rc < 0)
        return rc;
    mh__report_trend(rp->model, &in, &d->trend);
    rc = mh__growth_get(a->growth, device, &d->growth, &d->ngrowth, &d->growth_window);
    if (rc < 0)
        return rc;
    if (d->peak_allocated.value == 0)
        return 0;
    return mh__peak_groups_get(a->peaks, rp->model, device, (size_t)o->top, &d->top, &d->ntop,
                               &d->live_at_peak_bytes, &d->live_at_peak_count);
}

/* One file's device reports: built on the worker thread that replayed the
 * file (prepare_file), printed in order on the main thread. */
struct report_devs {
    struct mh_device_report *devs;
    size_t n, used; /* devices in the file, reports built */
    int rc;         /* 0 or the MH_E* that stopped the building */
};

/* The records live at each device's allocated peak, for their categories
 * (mh__analysis_records_at). */
static int records_at_peaks(const struct mh_analysis *a, const struct mh_lifetimes **use,
                            struct mh_lifetimes **out)
{
    const struct mh_model *m = a->rp.model;
    size_t n = 0, ndev = mh_model_device_count(m);
    uint64_t *at = calloc(ndev ? ndev : 1, sizeof *at);
    *out = NULL;
    if (!at)
        return MH_ENOMEM;
    for (size_t i = 0; i < ndev; i++) {
        struct mh_peak p;
        if (mh_model_peak_allocated(m, mh_model_device_at(m, i), &p) == 0 && p.value)
            at[n++] = p.event_index;
    }
    int rc = mh__analysis_records_at(a, at, n, use, out);
    free(at);
    return rc;
}

static void collect(const struct report_opts *o, const struct mh_analysis *a, struct report_devs *r)
{
    const struct mh_model *m = a->rp.model;
    const struct mh_lifetimes *at_peaks = NULL;
    struct mh_lifetimes *again = NULL;
    r->n = mh_model_device_count(m);
    r->devs = calloc(r->n ? r->n : 1, sizeof *r->devs);
    r->rc = r->devs ? records_at_peaks(a, &at_peaks, &again) : MH_ENOMEM;
    for (size_t i = 0; i < r->n && r->rc == 0; i++) {
        int dev = mh_model_device_at(m, i);
        if (o->device < 0 || o->device == dev)
            r->rc = build_device(o, a, at_peaks, dev, &r->devs[r->used++]);
    }
    mh__lifetimes_free(again);
}

static void devs_free(struct report_devs *r)
{
    for (size_t i = 0; r && i < r->used; i++) {
        free(r->devs[i].top);
        free(r->devs[i].growth);
    }
    if (r)
        free(r->devs);
}

static int prepare_file(void *user, const struct mh_analysis *a, void **prepared)
{
    struct report_devs *r = calloc(1, sizeof *r);
    if (!r)
        return MH_ENOMEM;
    collect(user, a, r);
    *prepared = r;
    return 0;
}

static void discard_file(void *prepared)
{
    devs_free(prepared);
    free(prepared);
}

static int report_devices(const struct report_opts *o, const struct mh_analysis *a,
                          struct report_devs *r)
{
    const struct mh_replay *rp = &a->rp;
    struct report_devs own = {0};
    if (!r) {
        collect(o, a, &own);
        r = &own;
    }
    int rc = r->rc;
    if (rc == 0 && o->device >= 0 && r->used == 0) {
        mh__cli_missing_device(o->path, rp->model, o->device, o->npaths > 1);
        rc = MH_EINVAL;
    } else if (rc == 0 && o->json) {
        mh__report_print_json(o->j, rp, r->devs, r->used, &o->view.steps);
    } else if (rc == 0) {
        mh__report_print_text(rp, r->devs, r->used, &o->view);
    } else {
        mh__cli_error("%s: %s", o->path, mh_strerror(rc));
    }
    devs_free(&own);
    return rc == 0 ? MH_EXIT_OK : MH_EXIT_FAIL;
}

static int report_file(void *user, const struct mh_analysis *a, void *prepared, size_t i,
                       size_t n, struct mh_json *j)
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
    const struct mh_analysis_want want = {MH_WANT_WHATIF_TREND, 1, 1};
    const struct mh_cli_multi m = {.command = "report", .want = &want, .json_files = o.json,
                                   .each = report_file, .user = &o, .prepare = prepare_file,
                                   .discard = discard_file};
    return mh__cli_finish(mh__cli_multi_run(o.paths, o.npaths, &m));
}
