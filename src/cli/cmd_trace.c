/* cmd_trace.c - `memhist trace FILE -o OUT.json`: a Chrome trace event file
 * for ui.perfetto.dev and chrome://tracing (writer: viz/trace/trace_writer.c), or
 * memhist's memory tracks merged into a torch.profiler trace (--into).
 *
 * Scans the file first to estimate the output size and warns with a
 * suggested window above a few hundred MB. The output goes through
 * cli_output.c, so a failed run never leaves a half-written trace. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gzip.h"
#include "job_origin.h"
#include "trace_writer.h"

static const char usage[] =
    "usage: memhist trace FILE... -o OUT.json [--steps A:B | --time A:B] [--device N]\n"
    "                        [--into PROFILE.json] [--pretty] [--warn-size SIZE]\n\n"
    "Writes a Chrome trace event file (open it in https://ui.perfetto.dev or\n"
    "chrome://tracing): op ranges per thread, kernels, copies and memsets per GPU\n"
    "and stream, arrows from each launch to its kernel, memory counters per GPU\n"
    "(allocated, reserved, outside the allocator, total), steps, segment and\n"
    "driver allocations, and OOMs with their explanation.\n"
    "Several FILEs (one per rank of a job) make one trace: each file's processes\n"
    "are named after its rank, and times count from the job's earliest start\n"
    "(an instant at 0 marks it), as in `memhist report` and `plot` of the same files.\n\n"
    "options:\n"
    "  -o, --output OUT   output file ('-' for standard output; OUT.gz is written\n"
    "                     gzip-compressed, as TensorBoard and Perfetto read it)\n"
    "  --steps A:B        only steps A..B (inclusive; A:, :B or N also work)\n"
    "  --time A:B         only seconds A..B from the start of the recording (of\n"
    "                     the job with several files)\n"
    "  --device N         only GPU N's tracks\n"
    "  --into PROFILE     add the memory tracks to a torch.profiler trace JSON (or\n"
    "                     .json.gz, as tensorboard_trace_handler writes it) and\n"
    "                     write the combined trace (clocks are aligned, torch's track\n"
    "                     names kept; only the profiled span is added unless a\n"
    "                     window is given; a recording outside it is refused)\n"
    "  --pretty           indent the JSON\n"
    "  --warn-size SIZE   warn above this estimated size (default 300MiB)\n"
    "  -h, --help         show this help\n";

static int run_trace(int argc, char **argv);

const struct mh_cli_command mh__cmd_trace = {
    "trace", "write a Chrome/Perfetto trace (ops, kernels, memory counters)", usage, run_trace};

#define TRACE_MAX_FILES 64

struct trace_args {
    const char *file, *out, *into, *steps, *time; /* file: the first of files */
    const char *files[TRACE_MAX_FILES];
    size_t nfiles;
    struct mh_trace_opts o;
};

static int parse_args(int argc, char **argv, struct trace_args *a)
{
    memset(a, 0, sizeof *a);
    a->o.device = -1;
    const struct mh_cli_opt opts[] = {
        {"output", 'o', MH_OPT_TEXT, &a->out, 0, 0, NULL, NULL},
        {"steps", 0, MH_OPT_TEXT, &a->steps, 0, 0, NULL, NULL},
        {"time", 0, MH_OPT_TEXT, &a->time, 0, 0, NULL, NULL},
        {"device", 0, MH_OPT_INT, &a->o.device, 0, 32767, NULL, NULL},
        {"into", 0, MH_OPT_TEXT, &a->into, 0, 0, NULL, NULL},
        {"pretty", 0, MH_OPT_FLAG, &a->o.pretty, 0, 0, NULL, NULL},
        {"warn-size", 0, MH_OPT_SIZE, &a->o.warn_bytes, 0, 0, "a size such as 300MB", NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int first, rc = mh__cli_options(&mh__cmd_trace, argc, argv, opts, &first);
    if (rc)
        return rc;
    if (first >= argc)
        return mh__cli_usage_error(&mh__cmd_trace, "missing the input FILE");
    if (argc - first > TRACE_MAX_FILES)
        return mh__cli_usage_error(&mh__cmd_trace, "at most %d input files", TRACE_MAX_FILES);
    for (int i = first; i < argc; i++)
        a->files[a->nfiles++] = argv[i];
    a->file = argv[first];
    if (a->nfiles > 1 && a->into)
        return mh__cli_usage_error(&mh__cmd_trace, "--into takes one FILE (the process that "
                                                   "was profiled); %zu were given", a->nfiles);
    if (!a->out)
        return mh__cli_usage_error(&mh__cmd_trace, "missing -o OUT.json");
    struct mh_window w;
    char err[160];
    if (mh__cli_parse_window(a->steps, a->time, &w, err, sizeof err) != 0)
        return mh__cli_usage_error(&mh__cmd_trace, "%s", err);
    a->o.has_steps = w.has_steps;
    a->o.step_lo = w.step_lo;
    a->o.step_hi = w.step_hi;
    a->o.has_time = w.has_time;
    a->o.t_lo_ns = w.t_lo_ns;
    a->o.t_hi_ns = w.t_hi_ns;
    return 0;
}

/* Reads a whole file (the --into profile). */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        mh__cli_error("%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *nb = cap < ((size_t)4 << 30) ? realloc(buf, cap * 2) : NULL;
        if (!nb) {
            free(buf);
            buf = NULL;
            mh__cli_error("%s: too large to read", path);
            break;
        }
        buf = nb;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        mh__cli_error("%s: %s", path, strerror(errno));
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

static void warn_size(const struct mh_trace_plan *p, const char *file)
{
    char b[32];
    mh__cli_error("warning: the trace will be about %s; Perfetto handles up to a few hundred MB."
                  " Try a window, e.g. 'memhist trace %s %s -o OUT.json'",
                  mh__bytes_text(p->est_bytes, b), file, p->suggestion);
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* Writes the trace to an open stream (gzip-compressed for OUT.gz); returns 0
 * or says why. */
static int write_output(struct trace_args *a, struct mh_session **ses, struct mh_trace **t,
                        const char *kineto, size_t klen, FILE *fp)
{
    FILE *gz = NULL;
    if (ends_with(a->out, ".gz") && !(fp = gz = mh__gzip_open_write(fp))) {
        mh__cli_error("%s: %s", a->out, mh_strerror(MH_ENOMEM));
        return MH_ENOMEM;
    }
    struct mh_sink sink;
    mh__sink_init_file(&sink, fp);
    char err[200] = "";
    int rc = kineto        ? mh__trace_merge_kineto(t[0], ses[0], kineto, klen, &sink, err, sizeof err)
             : a->nfiles > 1 ? mh__trace_write_files(t, ses, a->nfiles, &sink)
                             : mh__trace_write(t[0], ses[0], &sink);
    if (rc == 0)
        rc = mh__sink_finish(&sink);
    if (rc != 0 && err[0])
        mh__cli_error("%s: %s", a->into, err);
    else if (rc != 0 && sink.errnum)
        mh__cli_error("%s: cannot write: %s", a->out, strerror(sink.errnum));
    else if (rc != 0 && sink.error)
        mh__cli_error("%s: %s", a->out, mh_strerror(rc));
    /* errors while reading were reported by the session */
    if (gz && fclose(gz) != 0 && rc == 0) {
        mh__cli_error("%s: cannot write: %s", a->out, strerror(errno));
        rc = MH_EIO;
    }
    return rc;
}

static int produce(struct trace_args *a, struct mh_session **ses, struct mh_trace **t,
                   const char *kineto, size_t klen)
{
    const char *inputs[TRACE_MAX_FILES + 1];
    for (size_t i = 0; i < a->nfiles; i++)
        inputs[i] = a->files[i];
    inputs[a->nfiles] = a->into;
    struct mh_outfile of;
    if (mh__cli_output_open(&of, a->out, inputs, a->nfiles + (a->into != NULL)) != 0)
        return MH_EIO;
    int rc = write_output(a, ses, t, kineto, klen, of.fp);
    return mh__cli_output_close(&of, a->out, rc, 0);
}

/* How the recording and the profile it was merged into line up in time. */
static void note_overlap(const struct mh_trace_plan *p)
{
    uint64_t lo = p->file_first_ns > p->profile_first_ns ? p->file_first_ns : p->profile_first_ns;
    uint64_t hi = p->file_last_ns < p->profile_last_ns ? p->file_last_ns : p->profile_last_ns;
    int64_t start = (int64_t)(p->file_first_ns - p->profile_first_ns);
    mh__cli_error("note: on the profile's clock the recording starts %.3f s %s the profile; "
                  "%.3f s of the profile's %.3f s are covered",
                  (double)(start < 0 ? -start : start) / 1e9, start < 0 ? "before" : "after",
                  hi > lo ? (double)(hi - lo) / 1e9 : 0.0,
                  (double)(p->profile_last_ns - p->profile_first_ns) / 1e9);
}

/* The options of file i: with several files, the job's origin, a GPU pid
 * range of its own and a label for its process names (named_after_rank). */
static void file_opts(const struct trace_args *a, size_t i, uint64_t origin, char label[48],
                      struct mh_trace_opts *o)
{
    *o = a->o;
    if (a->nfiles < 2)
        return;
    snprintf(label, 48, "file %zu", i + 1);
    o->origin_ns = origin;
    o->gpu_pid_base = (int64_t)(i + 1) * 1000;
    o->process_label = label;
}

/* The label of a scanned file's processes: its rank (read with the
 * metadata during the scan), "R+" for a process the rank started. */
static void named_after_rank(struct mh_session *ses, char label[48])
{
    const struct mh_reader *r = mh__session_reader(ses);
    const char *rank = mh_reader_meta(r, "rank"), *role = mh_reader_meta(r, "rank_process");
    if (rank && *rank)
        snprintf(label, 48, "rank %.24s%s", rank, role && !strcmp(role, "helper") ? "+" : "");
}

/* Opens and scans every file; returns 0 or an exit code (reported). */
static int prepare(struct trace_args *a, int kineto, struct mh_session **ses, struct mh_trace **t,
                   char (*labels)[48])
{
    uint64_t origin = 0, events = 0;
    if (a->nfiles > 1 && mh__job_origin(a->files, a->nfiles, &origin) < 0)
        return MH_EXIT_FAIL;
    for (size_t i = 0; i < a->nfiles; i++) {
        struct mh_trace_opts o;
        if (mh__session_open(a->files[i], &ses[i]) < 0)
            return MH_EXIT_FAIL;
        file_opts(a, i, origin, labels[i], &o);
        int rc = mh__trace_new(&o, &t[i]);
        if (rc < 0) {
            mh__cli_error("%s: %s", a->files[i], mh_strerror(rc));
            return MH_EXIT_FAIL;
        }
        if (kineto)
            continue;
        if (mh__trace_scan(t[i], ses[i]) != 0)
            return MH_EXIT_FAIL;
        if (a->nfiles > 1)
            named_after_rank(ses[i], labels[i]);
        if (mh__trace_get_plan(t[i])->too_big)
            warn_size(mh__trace_get_plan(t[i]), a->files[i]);
        events += mh__trace_get_plan(t[i])->events;
    }
    if (!kineto && events == 0)
        mh__cli_error("warning: %s: no events in the chosen window", a->file);
    return 0;
}

static void say_written(const struct trace_args *a, struct mh_trace **t, int kineto)
{
    uint64_t events = 0, flows = 0;
    for (size_t i = 0; i < a->nfiles; i++) {
        events += mh__trace_get_plan(t[i])->events;
        flows += mh__trace_get_plan(t[i])->flows;
    }
    const struct mh_trace_plan *p = mh__trace_get_plan(t[0]);
    if (kineto && p->profile_last_ns)
        note_overlap(p);
    mh__cli_status_wrote(a->out, "; open it in https://ui.perfetto.dev",
                         "%llu events, %llu launch->GPU arrows%s", (unsigned long long)events,
                         (unsigned long long)flows,
                         a->nfiles > 1 ? ", times from the job's earliest start" : "");
}

static int run_trace(int argc, char **argv)
{
    struct trace_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != 0)
        return rc;
    size_t klen = 0;
    char *kineto = NULL;
    if (a.into && !(kineto = slurp(a.into, &klen)))
        return MH_EXIT_FAIL;
    struct mh_session *ses[TRACE_MAX_FILES] = {NULL};
    struct mh_trace *t[TRACE_MAX_FILES] = {NULL};
    char labels[TRACE_MAX_FILES][48];
    rc = prepare(&a, kineto != NULL, ses, t, labels);
    if (rc == 0)
        rc = produce(&a, ses, t, kineto, klen) == 0 ? 0 : MH_EXIT_FAIL;
    if (rc == 0 && strcmp(a.out, "-") != 0)
        say_written(&a, t, kineto != NULL);
    for (size_t i = 0; i < a.nfiles; i++) {
        mh__trace_free(t[i]);
        mh__session_close(ses[i]);
    }
    free(kineto);
    return mh__cli_finish(rc ? MH_EXIT_FAIL : MH_EXIT_OK);
}
