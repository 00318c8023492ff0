/* cmd_snapshot.c - `memhist snapshot`: a .memhist file to a PyTorch memory
 * snapshot pickle for pytorch.org/memory_viz and torch/cuda/_memory_viz.py
 * (library side: viz/snapshot/snapshot_export.h). A run whose whole
 * snapshot would be more than the viewer opens is written, unless a window
 * or --full is asked for, as the steps around its first OOM or its
 * allocated peak that fit (mh__snapshot_fit), and stderr says so. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "snapshot_export.h"

/* What the memory_viz page opens: measured in headless Chromium
 * (docs/memory-viz.md, tests/bench/bench_viewer_threshold.py). */
#define VIEWER_BYTES (400ull * 1000 * 1000)
#define VIEWER_ENTRIES 6000000ull

extern const struct mh__cli_command mh__cmd_snapshot;

struct snap_args {
    const char *in, *out, *steps, *time;
    uint64_t device, max_entries, warn_bytes, limit_bytes, limit_entries;
    int has_device, no_categories, full, warn_set;
};

static int window_cb(void *user, uint64_t t0, uint64_t t, int64_t step)
{
    return mh__window_contains(user, t0, t, step);
}

static int parse_args(int argc, char **argv, struct snap_args *a)
{
    memset(a, 0, sizeof *a);
    a->warn_bytes = a->limit_bytes = VIEWER_BYTES;
    a->limit_entries = VIEWER_ENTRIES;
    const struct mh__cli_opt opts[] = {
        {"output", 'o', MH__OPT_TEXT, &a->out, 0, 0, NULL, NULL},
        {"device", 0, MH__OPT_UINT, &a->device, 0, INT16_MAX, NULL, &a->has_device},
        {"steps", 0, MH__OPT_TEXT, &a->steps, 0, 0, NULL, NULL},
        {"time", 0, MH__OPT_TEXT, &a->time, 0, 0, NULL, NULL},
        {"max-entries", 0, MH__OPT_UINT, &a->max_entries, 1, UINT64_MAX, NULL, NULL},
        {"no-categories", 0, MH__OPT_FLAG, &a->no_categories, 0, 0, NULL, NULL},
        {"full", 0, MH__OPT_FLAG, &a->full, 0, 0, NULL, NULL},
        {"viewer-limit", 0, MH__OPT_SIZE, &a->limit_bytes, 0, 0, "a size such as 400MB", NULL},
        {"viewer-entries", 0, MH__OPT_UINT, &a->limit_entries, 1, UINT64_MAX, NULL, NULL},
        {"warn-size", 0, MH__OPT_SIZE, &a->warn_bytes, 0, 0, "a size such as 500MB", &a->warn_set},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int first, rc = mh__cli_options(&mh__cmd_snapshot, argc, argv, opts, &first);
    if (rc)
        return rc;
    if (first >= argc)
        return mh__cli_usage_error(&mh__cmd_snapshot, "missing the input .memhist file");
    if (first + 1 < argc)
        return mh__cli_usage_error(&mh__cmd_snapshot, "more than one input file");
    a->in = argv[first];
    if (!a->out)
        return mh__cli_usage_error(&mh__cmd_snapshot, "missing -o OUT.pickle");
    return 0;
}

/* A damaged file was reported by the session. */
static void report_build(const struct snap_args *a, const struct mh__snapshot_info *info)
{
    if (info->anomalies)
        mh__cli_error("warning: %s: %llu events contradict the allocator state and are left out "
                      "of the trace",
                      a->in, (unsigned long long)info->anomalies);
    if (info->estimate_bytes > a->warn_bytes || (!a->warn_set && info->entries > VIEWER_ENTRIES)) {
        char sz[32];
        mh__cli_error("warning: the snapshot will be about %s (%llu trace entries); the "
                      "memory_viz page opens about 400 MB or 6 M entries and fails near "
                      "850 MB: pick a window with --steps A:B (or --max-entries N)",
                      mh__bytes_text(info->estimate_bytes, sz),
                      (unsigned long long)info->entries);
    }
}

/* Refuses a device the file does not have and a window with nothing in it
 * (the viewer cannot open the first; the second would be an empty file). */
static int check_window(const struct snap_args *a, const struct mh__snapshot_info *info,
                        const struct mh_reader *r)
{
    if (a->has_device) {
        char list[256] = "";
        size_t used = 0;
        int found = 0;
        for (size_t i = 0; i < mh_reader_device_count(r); i++) {
            struct mh_device_info d;
            if (mh_reader_device(r, i, &d) != 0 || d.device < 0)
                continue;
            found |= (uint64_t)d.device == a->device;
            if (used < sizeof list)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%d", used ? ", " : "",
                                         d.device);
        }
        if (!found && info->entries == 0) {
            mh__cli_error("%s: no device %llu in the recording (devices: %s)", a->in,
                         (unsigned long long)a->device, used ? list : "none");
            return MH__EXIT_FAIL;
        }
    }
    if ((a->steps || a->time) && info->entries == 0) {
        mh__cli_error("%s: no allocator events in %s %s; nothing written", a->in,
                     a->steps ? "--steps" : "--time", a->steps ? a->steps : a->time);
        return MH__EXIT_FAIL;
    }
    return MH__EXIT_OK;
}

static int write_out(const char *path, const char *in, struct mh__snapshot *s)
{
    struct mh__outfile of;
    if (mh__cli_output_open(&of, path, &in, 1) < 0)
        return MH__EXIT_FAIL;
    struct mh__sink sink;
    mh__sink_init_file(&sink, of.fp);
    int rc = mh__snapshot_write(s, &sink);
    if (!rc)
        rc = mh__sink_finish(&sink);
    if (rc && !sink.errnum)
        mh__cli_error("%s: %s", path, mh_strerror(rc));
    return mh__cli_output_close(&of, path, rc, sink.errnum) < 0 ? MH__EXIT_FAIL : MH__EXIT_OK;
}

/* --device N that the file never used: one line naming its devices. */
static int no_such_device(const struct snap_args *a, const struct mh_reader *r)
{
    char list[128] = "none";
    size_t used = 0, n = mh_reader_device_count(r);
    for (size_t i = 0; i < n && used + 8 < sizeof list; i++) {
        struct mh_device_info d;
        if (mh_reader_device(r, i, &d) == 0)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%d", used ? ", " : "", d.device);
    }
    mh__cli_error("%s: no events for device %llu (the index as this file's process saw it; it saw "
                  "device%s %s)", a->in, (unsigned long long)a->device, n == 1 ? "" : "s", list);
    return MH__EXIT_FAIL;
}

/* Standard input from a pipe is copied to a temporary file first (the
 * snapshot reads its input more than once); a redirected file is used as it is. */
static int spool_stdin(void)
{
    struct stat st;
    if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode))
        return 0;
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/memhist-stdin-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        mh__cli_error("standard input: cannot make a temporary copy in %s: %s", path,
                      strerror(errno));
        return -1;
    }
    unlink(path);
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(STDIN_FILENO, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0 && write(fd, buf, (size_t)n) != n)
            n = -1;
    if (n < 0 || dup2(fd, STDIN_FILENO) < 0 || lseek(STDIN_FILENO, 0, SEEK_SET) != 0) {
        mh__cli_error("standard input: cannot copy it to a temporary file: %s", strerror(errno));
        close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* "steps 12 to 40" / "seconds 1.5 to 2.25" and the option that gives it. */
static void fit_text(const struct mh__snapshot_fit *f, char *what, size_t wn, char *opt, size_t on)
{
    if (f->kind == MH__SNAPSHOT_FIT_STEPS && f->step_lo == INT64_MIN) {
        snprintf(what, wn, "the start to step %lld", (long long)f->step_hi);
        snprintf(opt, on, "--steps :%lld", (long long)f->step_hi);
    } else if (f->kind == MH__SNAPSHOT_FIT_STEPS) {
        snprintf(what, wn, "steps %lld to %lld", (long long)f->step_lo, (long long)f->step_hi);
        snprintf(opt, on, "--steps %lld:%lld", (long long)f->step_lo, (long long)f->step_hi);
    } else {
        double lo = (double)f->t_lo_ns / 1e9, hi = (double)f->t_hi_ns / 1e9;
        if (f->t_hi_ns == UINT64_MAX) {
            snprintf(what, wn, "seconds %.9f to the end", lo);
            snprintf(opt, on, "--time %.9f:", lo);
        } else {
            snprintf(what, wn, "seconds %.9f to %.9f", lo, hi);
            snprintf(opt, on, "--time %.9f:%.9f", lo, hi);
        }
    }
}

/* The two lines that say what the default window wrote and how to get the rest. */
static void say_fit(const struct snap_args *a, const struct mh__snapshot_info *whole,
                    const struct mh__snapshot_fit *f)
{
    char size[32], value[32], what[96], opt[96], step[48] = "";
    fit_text(f, what, sizeof what, opt, sizeof opt);
    if (f->focus_step >= 0)
        snprintf(step, sizeof step, "step %lld, ", (long long)f->focus_step);
    mh__cli_error("note: %s: the whole run would be a snapshot of about %s (%llu trace entries), "
                  "more than the memory_viz page opens; writing %s, around %s on device %d "
                  "(%s%s%s)",
                  a->in, mh__bytes_text(whole->estimate_bytes, size),
                  (unsigned long long)whole->entries, what,
                  f->at_oom ? "the first OOM" : "the allocated peak", f->device, step,
                  f->at_oom ? "a request of " : "", mh__bytes_text(f->focus_value, value));
    mh__cli_error("note: this window is %s; other steps: --steps A:B; the last N entries: "
                  "--max-entries N; the whole run: --full", opt);
}

/* The first pass; without a window or --full, one more to the end of the
 * default window when the whole run would not open in the viewer. */
static int build(const struct snap_args *a, struct mh__session *ses,
                 const struct mh__snapshot_opts *opts, struct mh__window *win,
                 struct mh__snapshot **s)
{
    int rc = mh__snapshot_build(ses, opts, s);
    if (rc < 0 || opts->in_window || opts->max_entries || a->full)
        return rc;
    struct mh__snapshot_info whole;
    struct mh__snapshot_fit fit;
    mh__snapshot_info(*s, &whole);
    if (mh__snapshot_fit(*s, a->limit_bytes, a->limit_entries, &fit) < 0 ||
        fit.kind == MH__SNAPSHOT_FIT_ALL)
        return 0;
    memset(win, 0, sizeof *win);
    win->has_steps = fit.kind == MH__SNAPSHOT_FIT_STEPS;
    win->has_time = fit.kind == MH__SNAPSHOT_FIT_TIME;
    win->step_lo = fit.step_lo;
    win->step_hi = fit.step_hi;
    win->t_lo_ns = fit.t_lo_ns;
    win->t_hi_ns = fit.t_hi_ns;
    say_fit(a, &whole, &fit);
    return mh__snapshot_narrow(*s, &fit, window_cb, win);
}

static int run(int argc, char **argv)
{
    struct snap_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    struct mh__window win;
    char err[160];
    if (mh__cli_parse_window(a.steps, a.time, &win, err, sizeof err))
        return mh__cli_usage_error(&mh__cmd_snapshot, "%s", err);
    if (a.full && (a.steps || a.time || a.max_entries))
        return mh__cli_usage_error(&mh__cmd_snapshot,
                                   "--full writes the whole run: no --steps, --time or "
                                   "--max-entries with it");
    struct mh__snapshot_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.only_device = a.has_device;
    opts.device = (int)a.device;
    opts.max_entries = a.max_entries;
    opts.no_categories = a.no_categories;
    if (a.steps || a.time) {
        opts.in_window = window_cb;
        opts.window_user = &win;
    }
    if (strcmp(a.in, "-") == 0 && spool_stdin() < 0)
        return MH__EXIT_FAIL;
    struct mh__session *ses;
    if (mh__session_open(a.in, &ses) < 0)
        return MH__EXIT_FAIL;
    struct mh__snapshot *s = NULL;
    struct mh__window fit_win;
    rc = build(&a, ses, &opts, &fit_win, &s);
    if (rc < 0) {
        mh__session_close(ses);
        return MH__EXIT_FAIL;
    }
    struct mh__snapshot_info info;
    mh__snapshot_info(s, &info);
    report_build(&a, &info);
    int code = check_window(&a, &info, mh__session_reader(ses));
    if (code == MH__EXIT_OK && a.has_device && info.entries == 0 && info.segments == 0 && !a.steps && !a.time)
        code = no_such_device(&a, mh__session_reader(ses)); /* a device the process saw but never used */
    if (code == MH__EXIT_OK)
        code = write_out(a.out, a.in, s);
    if (code == MH__EXIT_OK && strcmp(a.out, "-") != 0) {
        mh__snapshot_info(s, &info);
        mh__cli_status_wrote(a.out, NULL, "%llu trace entries on %d device%s, %llu segments, %llu blocks%s%s",
               (unsigned long long)info.entries, info.devices, info.devices == 1 ? "" : "s",
               (unsigned long long)info.segments, (unsigned long long)info.blocks,
               info.categorized ? ", coloured by memory category" : "",
               info.overflowed ? " (trace incomplete: trace_alloc_overflowed set)" : "");
    }
    mh__snapshot_free(s);
    mh__session_close(ses);
    return mh__cli_finish(code);
}

const struct mh__cli_command mh__cmd_snapshot = {
    .name = "snapshot",
    .summary = "write a PyTorch memory snapshot pickle (pytorch.org/memory_viz)",
    .usage = "usage: memhist snapshot FILE.memhist -o OUT.pickle [options]\n"
             "\n"
             "Writes the dict torch.cuda.memory._snapshot() returns: the allocator's\n"
             "segments and blocks at the end of the window, the trace of allocator\n"
             "events per device (hover text shows 'step N phase'), allocator settings\n"
             "and step annotations. In a recording with step markers, allocations and\n"
             "frees carry the memory category of the allocation (parameter, gradient,\n"
             "optimizer_state, activation, temporary, input, unknown; as in `memhist\n"
             "report`), which the viewer's timeline is coloured by. An imported torch\n"
             "snapshot is written back as torch wrote it (its own settings, annotations\n"
             "and colouring by allocation). Open it at https://pytorch.org/memory_viz or\n"
             "with python torch/cuda/_memory_viz.py.\n"
             "\n"
             "options:\n"
             "  -o, --output PATH    output pickle ('-' = stdout)\n"
             "  --device N           only device N\n"
             "  --steps A:B          only steps A to B (segments as at the end of step B)\n"
             "  --time A:B           only seconds A to B from the first event\n"
             "  --max-entries N      keep the last N trace entries per device (as torch's\n"
             "                       ring buffer); sets trace_alloc_overflowed when cut\n"
             "  --full               the whole run, however large\n"
             "  --viewer-limit SIZE  the most a default window holds (default 400MB)\n"
             "  --viewer-entries N   the most trace entries it holds (default 6000000)\n"
             "  --no-categories      leave out the \"category\" keys (colour by allocation)\n"
             "  --warn-size SIZE     warn above this estimated size (default 400MB)\n"
             "\n"
             "The memory_viz page opens snapshots of about 400 MB or 6 M trace entries\n"
             "(slowly; it fails near 850 MB). Without --steps, --time, --max-entries or\n"
             "--full, a run whose whole snapshot would be larger is written as the steps\n"
             "around its first OOM or, without one, the highest allocated peak of a\n"
             "device, as many as fit; stderr names them.\n",
    .run = run,
};
