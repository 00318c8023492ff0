/* cmd_report.c - `memhist report FILE`: the peak, what was live at the peak
 * and from where, per-step evolution of allocated and reserved memory, OOMs.
 *
 * Replays the file once through the model for peaks, steps and OOMs, then
 * once more up to each device's allocated peak to group the live blocks by
 * stack. Printing is in report_text.c and report_json.c. */
#include <getopt.h>
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
    "checked by a what-if replay under expandable_segments:True; and every OOM\n"
    "with the request, free device memory, reserved but unallocated bytes and the\n"
    "largest free block (`memhist oom` explains them). Several files (one per\n"
    "rank: FILE.rank*) are reported in turn, then a rank table (host, device,\n"
    "peaks with step and time from the job's earliest start, steps, OOMs,\n"
    "fragmentation), the spread across ranks and the worst rank, ties stated. Runs of\n"
    "more than 30 steps get a summarised table: the first and last steps, the\n"
    "peak steps and the outliers (OOMs, retries, peaks well above the median).\n\n"
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
    static const struct option opts[] = {{"device", required_argument, NULL, 'd'},
                                         {"top", required_argument, NULL, 't'},
                                         {"frames", required_argument, NULL, 'f'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"steps", required_argument, NULL, 's'},
                                         {"all-steps", no_argument, NULL, 'a'},
                                         {0, 0, 0, 0}};
    *o = (struct report_opts){.device = -1, .top = 10, .frames = 6};
    char err[160];
    uint64_t v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'd' && mh__cli_parse_uint(optarg, 0, 255, &v) == 0)
            o->device = (int)v;
        else if (c == 't' && mh__cli_parse_uint(optarg, 1, 100000, &o->top) == 0)
            ;
        else if (c == 'f' && mh__cli_parse_uint(optarg, 1, 1000, &o->frames) == 0)
            ;
        else if (c == 'j')
            o->json = 1;
        else if (c == 'a')
            o->view.all_steps = 1;
        else if (c == 's' && mh__cli_parse_window(optarg, NULL, &o->view.steps, err, sizeof err) != 0)
            return mh__cli_usage_error(&mh__cmd_report, "%s", err);
        else if (c == 's')
            ;
        else if (c == '?')
            return mh__cli_usage_error(&mh__cmd_report, "unknown option '%s'", argv[optind - 1]);
        else
            return mh__cli_usage_error(&mh__cmd_report, "invalid value '%s' for --%s", optarg,
                                       c == 'd'   ? "device"
                                       : c == 't' ? "top"
                                                  : "frames");
    }
    if (optind >= argc)
        return mh__cli_usage_error(&mh__cmd_report, "missing FILE");
    if (o->view.all_steps && o->view.steps.has_steps)
        return mh__cli_usage_error(&mh__cmd_report, "--steps and --all-steps exclude each other");
    o->view.max_frames = (size_t)o->frames;
    o->paths = argv + optind;
    o->npaths = (size_t)(argc - optind);
    return 0;
}

/* Replays up to the allocated peak of one device and groups what was live. */
static int live_at_peak(const struct report_opts *o, struct mh_device_report *d)
{
    if (d->peak_allocated.value == 0)
        return 0;
    struct mh_replay at;
    int rc = mh__replay_open(o->path, d->peak_allocated.event_index + 1, &at);
    if (rc < 0)
        return rc;
    rc = mh__report_group_live(at.model, d->device, (size_t)o->top, &d->top, &d->ntop,
                               &d->live_at_peak_bytes, &d->live_at_peak_count);
    mh__replay_close(&at);
    return rc;
}

static int build_device(const struct report_opts *o, const struct mh_analysis *a, int device,
                        struct mh_device_report *d)
{
    const struct mh_replay *rp = &a->rp;
    memset(d, 0, sizeof *d);
    d->device = device;
    mh__device_info(rp->reader, device, &d->info);
    mh_model_peak_allocated(rp->model, device, &d->peak_allocated);
    mh_model_peak_reserved(rp->model, device, &d->peak_reserved);
    mh_model_stats(rp->model, device, &d->final);
    if (d->peak_allocated.value)
        mh__lifetimes_live_by_category(a->lt, device, d->peak_allocated.event_index,
                                       d->category_at_peak, NULL);
    mh__report_trend(rp, device, &d->trend);
    return live_at_peak(o, d);
}

static int report_devices(const struct report_opts *o, const struct mh_analysis *a)
{
    const struct mh_replay *rp = &a->rp;
    size_t n = mh_model_device_count(rp->model);
    struct mh_device_report *devs = calloc(n ? n : 1, sizeof *devs);
    if (!devs) {
        mh__cli_error("%s: %s", o->path, mh_strerror(MH_ENOMEM));
        return MH_EXIT_FAIL;
    }
    size_t used = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int dev = mh_model_device_at(rp->model, i);
        if (o->device < 0 || o->device == dev)
            rc = build_device(o, a, dev, &devs[used++]);
    }
    if (rc == 0 && o->device >= 0 && used == 0) {
        char list[128];
        mh__cli_error("%s: no events for device %d; its device%s: %s%s", o->path, o->device, n == 1 ? "" : "s",
                      mh__cli_device_list(rp->model, list, sizeof list),
                      o->npaths > 1 ? " (the index as this file's process saw it)" : "");
        rc = MH_EINVAL;
    } else if (rc == 0 && o->json) {
        mh__report_print_json(o->j, rp, devs, used, &o->view.steps);
    } else if (rc == 0) {
        mh__report_print_text(rp, devs, used, &o->view);
    }
    for (size_t i = 0; i < used; i++)
        free(devs[i].top);
    free(devs);
    return rc == 0 ? MH_EXIT_OK : MH_EXIT_FAIL;
}

static int run_report(int argc, char **argv)
{
    struct report_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc;
    struct mh_analysis *a = calloc(o.npaths, sizeof *a);
    if (!a) {
        mh__cli_error("%s", mh_strerror(MH_ENOMEM));
        return MH_EXIT_FAIL;
    }
    struct mh_sink sink;
    struct mh_json j;
    if (o.json) {
        o.j = &j;
        mh__cli_json_begin(&j, &sink, "report");
        mh__json_key(&j, "files");
        mh__json_begin_array(&j);
    }
    size_t opened = 0;
    for (size_t i = 0; i < o.npaths && rc == 0; i++) {
        o.path = o.paths[i];
        if (mh__analysis_open(o.path, &a[i]) < 0)
            rc = MH_EXIT_FAIL;
        else
            opened++;
        if (rc == 0)
            rc = report_devices(&o, &a[i]);
    }
    if (rc == 0 && o.json) {
        mh__json_end_array(&j);
        mh__print_ranks(a, o.npaths, &j);
        mh__json_end_object(&j);
    } else if (rc == 0) {
        mh__print_ranks(a, o.npaths, NULL);
    }
    if (o.json)
        mh__sink_finish(&sink);
    for (size_t i = 0; i < opened; i++)
        mh__analysis_close(&a[i]);
    free(a);
    return mh__cli_finish(rc);
}
