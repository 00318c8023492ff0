/* cmd_plot.c - `memhist plot`: PNG pictures of a recorded run, the memory
 * timeline (default) or the segment layout at one moment. Parses options,
 * opens the file and hands over to viz/plot.h, which does the drawing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "viz/plot.h"

static const char usage[] =
    "usage: memhist plot FILE -o OUT.png [options]\n"
    "\n"
    "Draws a PNG of the run's memory.\n"
    "  timeline (default): live allocations over time, stacked by allocation\n"
    "    site (the largest at the peak in colour, the rest in grey), the\n"
    "    allocated and reserved curves, the peak, step boundaries, OOMs, and a\n"
    "    strip with each step's peaks and fragmentation.\n"
    "  segments: every segment and block of the caching allocator at one\n"
    "    moment, with rounding waste and fragmentation.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT.png  where to write the image (required; '-' = stdout)\n"
    "  --kind timeline|segments\n"
    "  --device N            device to draw (default: the first one in the file)\n"
    "  --steps A:B           only steps A to B (inclusive; A:, :B or N also work)\n"
    "  --time A:B            only seconds A to B from the first event\n"
    "  --width W --height H  image size in pixels (default 1280x760, at least 400x300)\n"
    "  --top N               coloured allocation sites in the timeline (default 8, max 16)\n"
    "  --at peak|oom|SECONDS moment of the segment view (default: the allocated peak)\n"
    "\n"
    "examples:\n"
    "  memhist plot run.memhist -o run.png\n"
    "  memhist plot run.memhist -o steps.png --steps 10:20 --top 5\n"
    "  memhist plot run.memhist -o oom.png --kind segments --at oom\n";

extern const struct mh_cli_command mh_cmd_plot;

struct plot_args {
    const char *file, *out, *steps, *time;
    struct mh_plot_opts opts;
};

static int parse_dim(const char *v, const char *name, int *out)
{
    uint64_t n;
    if (!v || mh_cli_parse_uint(v, 1, 16384, &n) != 0)
        return mh_cli_usage_error(&mh_cmd_plot, "%s needs a number of pixels (%d..16384), not '%s'",
                                  name, strcmp(name, "--width") == 0 ? MH_PLOT_MIN_WIDTH
                                                                     : MH_PLOT_MIN_HEIGHT,
                                  v ? v : "");
    *out = (int)n;
    return 0;
}

static int parse_at(const char *v, struct mh_plot_opts *o)
{
    if (strcmp(v, "peak") == 0) {
        o->at = MH_PLOT_AT_PEAK;
        return 0;
    }
    if (strcmp(v, "oom") == 0) {
        o->at = MH_PLOT_AT_OOM;
        return 0;
    }
    char *end;
    double sec = strtod(v, &end);
    if (end == v || (*end && strcmp(end, "s") != 0) || !(sec >= 0) || sec > 1e9)
        return mh_cli_usage_error(&mh_cmd_plot,
                                  "--at takes 'peak', 'oom' or seconds from the start, not '%s'", v);
    o->at = MH_PLOT_AT_TIME;
    o->at_ns = (uint64_t)(sec * 1e9 + 0.5);
    return 0;
}

static int parse_value(struct plot_args *a, const char *opt, const char *v)
{
    uint64_t n;
    struct mh_plot_opts *o = &a->opts;
    if (strcmp(opt, "-o") == 0 || strcmp(opt, "--output") == 0)
        a->out = v;
    else if (strcmp(opt, "--steps") == 0)
        a->steps = v;
    else if (strcmp(opt, "--time") == 0)
        a->time = v;
    else if (strcmp(opt, "--width") == 0)
        return parse_dim(v, opt, &o->width);
    else if (strcmp(opt, "--height") == 0)
        return parse_dim(v, opt, &o->height);
    else if (strcmp(opt, "--at") == 0)
        return parse_at(v, o);
    else if (strcmp(opt, "--kind") == 0) {
        if (strcmp(v, "timeline") == 0)
            o->kind = MH_PLOT_TIMELINE;
        else if (strcmp(v, "segments") == 0)
            o->kind = MH_PLOT_SEGMENTS;
        else
            return mh_cli_usage_error(&mh_cmd_plot, "--kind is 'timeline' or 'segments', not '%s'",
                                      v);
    } else if (strcmp(opt, "--device") == 0) {
        if (mh_cli_parse_uint(v, 0, 32767, &n) != 0)
            return mh_cli_usage_error(&mh_cmd_plot, "--device needs a device index, not '%s'", v);
        o->has_device = 1;
        o->device = (int)n;
    } else if (strcmp(opt, "--top") == 0) {
        if (mh_cli_parse_uint(v, 1, MH_PLOT_MAX_TOP, &n) != 0)
            return mh_cli_usage_error(&mh_cmd_plot, "--top needs a number in 1..%d, not '%s'",
                                      MH_PLOT_MAX_TOP, v);
        o->top = (unsigned)n;
    } else
        return -1;
    return 0;
}

static int parse_args(int argc, char **argv, struct plot_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (arg[0] == '-' && arg[1] != '\0') {
            if (i + 1 >= argc)
                return mh_cli_usage_error(&mh_cmd_plot, "%s needs a value", arg);
            int rc = parse_value(a, arg, argv[++i]);
            if (rc < 0)
                return mh_cli_usage_error(&mh_cmd_plot, "unknown option '%s'", arg);
            if (rc > 0)
                return rc;
        } else if (!a->file)
            a->file = arg;
        else
            return mh_cli_usage_error(&mh_cmd_plot, "one input file only ('%s' is extra)", arg);
    }
    if (!a->file)
        return mh_cli_usage_error(&mh_cmd_plot, "missing the input FILE");
    if (!a->out)
        return mh_cli_usage_error(&mh_cmd_plot, "missing -o OUT.png");
    if (strcmp(a->file, "-") == 0)
        return mh_cli_usage_error(&mh_cmd_plot,
                                  "plot reads its input twice; give a file, not standard input");
    if (a->opts.at != MH_PLOT_AT_PEAK && a->opts.kind != MH_PLOT_SEGMENTS)
        return mh_cli_usage_error(&mh_cmd_plot, "--at applies to --kind segments");
    if ((a->opts.width && a->opts.width < MH_PLOT_MIN_WIDTH) ||
        (a->opts.height && a->opts.height < MH_PLOT_MIN_HEIGHT))
        return mh_cli_usage_error(&mh_cmd_plot, "the image must be at least %dx%d pixels",
                                  MH_PLOT_MIN_WIDTH, MH_PLOT_MIN_HEIGHT);
    char err[160];
    struct mh_window w;
    if (mh_cli_parse_window(a->steps, a->time, &w, err, sizeof err) != 0)
        return mh_cli_usage_error(&mh_cmd_plot, "%s", err);
    a->opts.has_steps = w.has_steps;
    a->opts.has_time = w.has_time;
    a->opts.step_lo = w.step_lo;
    a->opts.step_hi = w.step_hi;
    a->opts.t_lo_ns = w.t_lo_ns;
    a->opts.t_hi_ns = w.t_hi_ns;
    return 0;
}

/* Renders into memory first, so a failed plot never leaves a broken file. */
static int render(struct plot_args *a, struct mh_reader *r)
{
    struct mh_sink sink;
    struct mh_plot_result res;
    char err[256];
    mh_sink_init_mem(&sink);
    a->opts.name = a->file;
    mh_cli_file_conf(r, &a->opts.model.conf);
    int rc = mh_plot_render(r, &a->opts, &sink, &res, err, sizeof err);
    if (rc == MH_EINVAL && err[0]) {
        mh_cli_error("%s: %s", a->file, err);
    } else if (rc < 0) {
        mh_cli_error("%s: %s", a->file, mh_strerror(rc));
    } else {
        if (res.read_error)
            mh_cli_error("warning: %s: %s; plotted the events before that point", a->file,
                         mh_reader_errmsg(r));
        int to_stdout = strcmp(a->out, "-") == 0;
        FILE *fp = to_stdout ? stdout : fopen(a->out, "wb");
        if (!fp || fwrite(sink.buf, 1, sink.len, fp) != sink.len ||
            (!to_stdout && fclose(fp) != 0)) {
            mh_cli_error("%s: cannot write the image: %s", a->out, strerror(errno));
            rc = MH_EIO;
        } else if (!to_stdout)
            fprintf(stderr, "memhist: wrote %s (%zu bytes)%s\n", a->out, sink.len,
                    res.empty ? "; nothing to plot, the image says why" : "");
    }
    mh_sink_free(&sink);
    return rc;
}

static int run(int argc, char **argv)
{
    struct plot_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    struct mh_reader *r;
    if (mh_cli_open_reader(a.file, &r) < 0)
        return MH_EXIT_FAIL;
    rc = render(&a, r);
    mh_reader_close(r);
    return mh_cli_finish(rc < 0 ? MH_EXIT_FAIL : MH_EXIT_OK);
}

const struct mh_cli_command mh_cmd_plot = {
    .name = "plot",
    .summary = "draw a PNG: memory timeline or segment layout",
    .usage = usage,
    .run = run,
};
