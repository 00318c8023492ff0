/* cmd_plot.c - `memhist plot`: PNG pictures of a recorded run, the memory
 * timeline (default) or the segment layout at one moment; with several
 * files (ranks), one timeline panel per file in one image. Parses options,
 * opens the files and hands over to viz/plot/plot.h, which does the drawing. */
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "job_origin.h"
#include "plot.h"

static const char usage[] =
    "usage: memhist plot FILE... -o OUT.png [options]\n"
    "\n"
    "Draws a PNG of the run's memory.\n"
    "  timeline (default): live allocations over time, stacked by module (when\n"
    "    the recording has module scopes) or allocation site (the largest at the\n"
    "    peak in colour, the rest in grey) or by\n"
    "    memory category (--color category), the allocated and reserved\n"
    "    curves, the peak, step boundaries, OOMs, and a strip with each step's\n"
    "    peaks and fragmentation.\n"
    "  several FILEs (one per rank): one timeline panel per file, top to\n"
    "    bottom, on a shared time axis when the runs overlap in time, times\n"
    "    from the job's earliest start (as `memhist report` and `trace` of the\n"
    "    same files); the rank with the highest reserved peak is marked.\n"
    "    With 8 files or more the panels give way to a heat map of peak\n"
    "    reserved per rank (rows) and step (columns), the worst cell outlined,\n"
    "    above the timeline of the worst rank (--ranks chooses).\n"
    "  segments: every segment and block of the caching allocator at one\n"
    "    moment, with rounding waste and fragmentation.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT.png  where to write the image (required; '-' = stdout)\n"
    "  --kind timeline|segments\n"
    "  --device N            device to draw (default: the first one in the file)\n"
    "  --steps A:B           only steps A to B (inclusive; A:, :B or N also work)\n"
    "  --time A:B            only seconds A to B from the first event (several\n"
    "                        files: from the job's earliest start)\n"
    "  --width W --height H  image size in pixels (default 1280x760, at least 400x300);\n"
    "                        with several files, H is per panel (default 520)\n"
    "  --top N               coloured groups in the timeline (default 8, max 16)\n"
    "  --x compressed|time|events|steps\n"
    "                        timeline x axis: time with idle stretches (no allocator\n"
    "                        activity) compressed and marked (default); plain time;\n"
    "                        the device's allocator events evenly spaced; or every\n"
    "                        step (and the setup before the first) the same width\n"
    "  --color stack|category  colour the timeline by module (recordings with module\n"
    "                        scopes) or allocation site (default), or by\n"
    "                        memory category (parameter, gradient, optimizer_state,\n"
    "                        activation, temporary, input, unknown; as memhist report)\n"
    "  --at peak|oom|SECONDS moment of the segment view (default: the allocated peak)\n"
    "  --ranks panels|heatmap  several files: a panel per file, or the heat map and\n"
    "                        the worst rank's panel (default: heatmap from 8 files)\n"
    "\n"
    "examples:\n"
    "  memhist plot run.memhist -o run.png\n"
    "  memhist plot run.memhist -o steps.png --steps 10:20 --top 5\n"
    "  memhist plot run.memhist -o oom.png --kind segments --at oom\n"
    "  memhist plot run.memhist -o cat.png --color category\n"
    "  memhist plot run.memhist -o bysteps.png --x steps\n"
    "  memhist plot rank0.memhist rank1.memhist -o ranks.png\n"
    "  memhist plot run.memhist.rank* -o job.png --ranks heatmap\n";

extern const struct mh__cli_command mh__cmd_plot;

struct plot_args {
    const char *files[MH__PLOT_MAX_RANKS];
    size_t nfiles;
    const char *file, *out, *steps, *time; /* file: the first of files */
    struct mh__plot_opts opts;
};

static int parse_dim(const char *v, const char *name, int *out)
{
    uint64_t n;
    if (!v || mh__cli_parse_uint(v, 1, 16384, &n) != 0)
        return mh__cli_usage_error(
            &mh__cmd_plot, "%s needs a number of pixels (%d..16384), not '%s'", name,
            strcmp(name, "--width") == 0 ? MH__PLOT_MIN_WIDTH : MH__PLOT_MIN_HEIGHT, v ? v : "");
    *out = (int)n;
    return 0;
}

static int parse_at(const char *v, struct mh__plot_opts *o)
{
    int at;
    if (mh__cli_parse_at(v, &at, &o->at_ns) != 0)
        return mh__cli_usage_error(
            &mh__cmd_plot, "--at takes 'peak', 'oom' or seconds from the start, not '%s'", v);
    o->at = at;
    return 0;
}

/* The value of one option that needs a plot-specific check; returns 0 or
 * the usage error's exit code. */
static int parse_value(struct plot_args *a, const char *opt, const char *v)
{
    uint64_t n;
    struct mh__plot_opts *o = &a->opts;
    if (strcmp(opt, "--width") == 0)
        return parse_dim(v, opt, &o->width);
    else if (strcmp(opt, "--height") == 0)
        return parse_dim(v, opt, &o->height);
    else if (strcmp(opt, "--at") == 0)
        return parse_at(v, o);
    else if (strcmp(opt, "--x") == 0) {
        if (strcmp(v, "time") == 0)
            o->x_axis = MH__PLOT_X_TIME;
        else if (strcmp(v, "compressed") == 0)
            o->x_axis = MH__PLOT_X_COMPRESSED;
        else if (strcmp(v, "events") == 0)
            o->x_axis = MH__PLOT_X_EVENTS;
        else if (strcmp(v, "steps") == 0)
            o->x_axis = MH__PLOT_X_STEPS;
        else
            return mh__cli_usage_error(&mh__cmd_plot,
                                       "--x is 'compressed', 'time', 'events' or 'steps', not '%s'",
                                       v);
    } else if (strcmp(opt, "--color") == 0 || strcmp(opt, "--colour") == 0) {
        if (strcmp(v, "stack") == 0)
            o->color = MH__PLOT_COLOR_STACK;
        else if (strcmp(v, "category") == 0)
            o->color = MH__PLOT_COLOR_CATEGORY;
        else
            return mh__cli_usage_error(&mh__cmd_plot, "--color is 'stack' or 'category', not '%s'",
                                       v);
    }
    else if (strcmp(opt, "--kind") == 0) {
        if (strcmp(v, "timeline") == 0)
            o->kind = MH__PLOT_TIMELINE;
        else if (strcmp(v, "segments") == 0)
            o->kind = MH__PLOT_SEGMENTS;
        else
            return mh__cli_usage_error(&mh__cmd_plot,
                                       "--kind is 'timeline' or 'segments', not '%s'", v);
    } else if (strcmp(opt, "--device") == 0) {
        if (mh__cli_parse_uint(v, 0, 32767, &n) != 0)
            return mh__cli_usage_error(&mh__cmd_plot, "--device needs a device index, not '%s'", v);
        o->has_device = 1;
        o->device = (int)n;
    } else if (strcmp(opt, "--ranks") == 0) {
        if (strcmp(v, "panels") == 0)
            o->ranks_view = MH__PLOT_RANKS_PANELS;
        else if (strcmp(v, "heatmap") == 0)
            o->ranks_view = MH__PLOT_RANKS_HEATMAP;
        else
            return mh__cli_usage_error(&mh__cmd_plot, "--ranks is 'panels' or 'heatmap', not '%s'",
                                       v);
    } else if (strcmp(opt, "--top") == 0) {
        if (mh__cli_parse_uint(v, 1, MH__PLOT_MAX_TOP, &n) != 0)
            return mh__cli_usage_error(&mh__cmd_plot, "--top needs a number in 1..%d, not '%s'",
                                       MH__PLOT_MAX_TOP, v);
        o->top = (unsigned)n;
    }
    return 0;
}

static int check_args(struct plot_args *a);

static int parse_args(int argc, char **argv, struct plot_args *a)
{
    static const char *const valued[] = {"--width", "--height", "--at", "--color", "--colour",
                                         "--kind", "--device", "--top", "--ranks", "--x"};
    const char *v[sizeof valued / sizeof valued[0]] = {NULL};
    memset(a, 0, sizeof *a);
    const struct mh__cli_opt opts[] = {
        {"output", 'o', MH__OPT_TEXT, &a->out, 0, 0, NULL, NULL},
        {"steps", 0, MH__OPT_TEXT, &a->steps, 0, 0, NULL, NULL},
        {"time", 0, MH__OPT_TEXT, &a->time, 0, 0, NULL, NULL},
        {"width", 0, MH__OPT_TEXT, &v[0], 0, 0, NULL, NULL},
        {"height", 0, MH__OPT_TEXT, &v[1], 0, 0, NULL, NULL},
        {"at", 0, MH__OPT_TEXT, &v[2], 0, 0, NULL, NULL},
        {"color", 0, MH__OPT_TEXT, &v[3], 0, 0, NULL, NULL},
        {"colour", 0, MH__OPT_TEXT, &v[4], 0, 0, NULL, NULL},
        {"kind", 0, MH__OPT_TEXT, &v[5], 0, 0, NULL, NULL},
        {"device", 0, MH__OPT_TEXT, &v[6], 0, 0, NULL, NULL},
        {"top", 0, MH__OPT_TEXT, &v[7], 0, 0, NULL, NULL},
        {"ranks", 0, MH__OPT_TEXT, &v[8], 0, 0, NULL, NULL},
        {"x", 0, MH__OPT_TEXT, &v[9], 0, 0, NULL, NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int first, rc = mh__cli_options(&mh__cmd_plot, argc, argv, opts, &first);
    if (rc)
        return rc;
    /* the values with a plot-specific check, in the order of the table */
    for (size_t i = 0; i < sizeof valued / sizeof valued[0] && rc == 0; i++)
        if (v[i])
            rc = parse_value(a, valued[i], v[i]);
    if (rc)
        return rc;
    for (int i = first; i < argc; i++) {
        if (a->nfiles == MH__PLOT_MAX_RANKS)
            return mh__cli_usage_error(&mh__cmd_plot, "at most %d input files ('%s' is extra)",
                                       MH__PLOT_MAX_RANKS, argv[i]);
        a->files[a->nfiles++] = argv[i];
    }
    a->file = a->files[0];
    if (!a->file)
        return mh__cli_usage_error(&mh__cmd_plot, "missing the input FILE");
    return check_args(a);
}

/* Combinations of options and inputs that cannot work. */
static int check_args(struct plot_args *a)
{
    if (!a->out)
        return mh__cli_usage_error(&mh__cmd_plot, "missing -o OUT.png");
    for (size_t i = 0; i < a->nfiles; i++)
        if (strcmp(a->files[i], "-") == 0)
            return mh__cli_usage_error(
                &mh__cmd_plot, "plot reads its input twice; give a file, not standard input");
    if (a->nfiles > 1 && a->opts.kind == MH__PLOT_SEGMENTS)
        return mh__cli_usage_error(&mh__cmd_plot,
                                   "--kind segments draws one file; %zu were given "
                                   "(several files make a timeline per rank)",
                                   a->nfiles);
    if (a->opts.color != MH__PLOT_COLOR_STACK && a->opts.kind == MH__PLOT_SEGMENTS)
        return mh__cli_usage_error(&mh__cmd_plot, "--color applies to the timeline, not to "
                                                  "--kind segments");
    if (a->opts.ranks_view != MH__PLOT_RANKS_AUTO && a->nfiles < 2)
        return mh__cli_usage_error(&mh__cmd_plot, "--ranks applies to several files");
    if (a->opts.at != MH__MOMENT_PEAK && a->opts.kind != MH__PLOT_SEGMENTS)
        return mh__cli_usage_error(&mh__cmd_plot, "--at applies to --kind segments");
    if ((a->opts.width && a->opts.width < MH__PLOT_MIN_WIDTH) ||
        (a->opts.height && a->opts.height < MH__PLOT_MIN_HEIGHT))
        return mh__cli_usage_error(&mh__cmd_plot, "the image must be at least %dx%d pixels",
                                   MH__PLOT_MIN_WIDTH, MH__PLOT_MIN_HEIGHT);
    char err[160];
    struct mh__window w;
    if (mh__cli_parse_window(a->steps, a->time, &w, err, sizeof err) != 0)
        return mh__cli_usage_error(&mh__cmd_plot, "%s", err);
    a->opts.has_steps = w.has_steps;
    a->opts.has_time = w.has_time;
    a->opts.step_lo = w.step_lo;
    a->opts.step_hi = w.step_hi;
    a->opts.t_lo_ns = w.t_lo_ns;
    a->opts.t_hi_ns = w.t_hi_ns;
    return 0;
}

/* Writes the rendered image (the whole of it or nothing). */
static int write_image(const struct plot_args *a, const struct mh__sink *sink, int empty)
{
    struct mh__outfile of;
    if (mh__cli_output_open(&of, a->out, a->files, a->nfiles) < 0)
        return MH_EIO;
    int rc = 0, errnum = 0;
    if (fwrite(sink->buf, 1, sink->len, of.fp) != sink->len) {
        errnum = errno ? errno : EIO;
        rc = MH_EIO;
    }
    if (mh__cli_output_close(&of, a->out, rc, errnum) < 0)
        return MH_EIO;
    if (strcmp(a->out, "-") != 0)
        mh__cli_status_wrote(a->out, empty ? "; nothing to plot, the image says why" : NULL, "%s",
                             "");
    return 0;
}

/* Renders into memory first, so a failed plot never leaves a broken file. */
static int render(struct plot_args *a, struct mh__session *ses)
{
    struct mh__sink sink;
    struct mh__plot_result res;
    char err[256];
    mh__sink_init_mem(&sink);
    a->opts.name = a->file;
    int rc = mh__plot_render(ses, &a->opts, &sink, &res, err, sizeof err);
    if (rc == MH_EINVAL && err[0]) {
        mh__cli_error("%s: %s", a->file, err);
    } else if (rc < 0) {
        mh__cli_error("%s: %s", a->file, mh_strerror(rc));
    } else { /* a damaged file was reported by the session */
        rc = write_image(a, &sink, res.empty);
    }
    mh__sink_free(&sink);
    return rc;
}

/* "2026-11-24 13:16:16.907 UTC". */
static const char *utc_text(uint64_t ns, char buf[40])
{
    time_t sec = (time_t)(ns / 1000000000ull);
    struct tm tm;
    if (!gmtime_r(&sec, &tm) || !strftime(buf, 40, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, 40, "?");
    else
        snprintf(buf + strlen(buf), 40 - strlen(buf), ".%03u UTC",
                 (unsigned)(ns / 1000000ull % 1000));
    return buf;
}

/* The time origin and the worst rank's marked peak, as the image shows them. */
static void say_worst(const struct plot_args *a, const struct mh__plot_result *res)
{
    char b[32], t[32], u[40];
    mh__cli_status("times from the job's earliest start, %s", utc_text(a->opts.origin_ns, u));
    for (size_t i = 0; i < a->nfiles; i++)
        if (res[i].worst && res[i].has_peak)
            mh__cli_status("worst rank by peak reserved: %s; its allocated peak %s at %s",
                           a->files[i], mh__bytes_text(res[i].peak_allocated, b),
                           mh__cli_duration(res[i].peak_since_ns, t));
}

/* Several files: one panel per rank. */
static int render_ranks(struct plot_args *a, struct mh__session **ses)
{
    struct mh__sink sink;
    struct mh__plot_result res[MH__PLOT_MAX_RANKS];
    char err[320];
    mh__sink_init_mem(&sink);
    int rc = mh__plot_render_ranks(ses, a->files, a->nfiles, &a->opts, &sink, res, err,
                                   sizeof err);
    if (rc == MH_EINVAL && err[0]) {
        mh__cli_error("%s", err);
    } else if (rc < 0) {
        mh__cli_error("%s: %s", a->out, mh_strerror(rc));
    } else {
        int all_empty = 1;
        for (size_t i = 0; i < a->nfiles; i++)
            all_empty &= res[i].empty;
        rc = write_image(a, &sink, all_empty);
        if (rc == 0)
            say_worst(a, res);
    }
    mh__sink_free(&sink);
    return rc;
}

static int run(int argc, char **argv)
{
    struct plot_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    struct mh__session *s[MH__PLOT_MAX_RANKS] = {NULL};
    for (size_t i = 0; i < a.nfiles && rc == 0; i++)
        if (mh__session_open(a.files[i], &s[i]) < 0)
            rc = MH__EXIT_FAIL;
    if (rc == 0 && a.nfiles > 1 && mh__job_origin(a.files, a.nfiles, &a.opts.origin_ns) < 0)
        rc = MH__EXIT_FAIL;
    if (rc == 0)
        rc = a.nfiles == 1 ? render(&a, s[0]) : render_ranks(&a, s);
    for (size_t i = 0; i < a.nfiles; i++)
        mh__session_close(s[i]);
    if (rc == MH__EXIT_FAIL)
        return rc;
    return mh__cli_finish(rc < 0 ? MH__EXIT_FAIL : MH__EXIT_OK);
}

const struct mh__cli_command mh__cmd_plot = {
    .name = "plot",
    .summary = "draw a PNG: memory timeline or segment layout",
    .usage = usage,
    .run = run,
};
