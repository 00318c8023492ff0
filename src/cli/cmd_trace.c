/* cmd_trace.c - `memhist trace FILE -o OUT`: a trace for ui.perfetto.dev
 * (writer: viz/trace/trace_writer.h), in Perfetto's protobuf format or as
 * Chrome trace event JSON (also chrome://tracing), or memhist's memory tracks
 * merged into a torch.profiler trace (--into, JSON).
 *
 * Scans the files first: the estimated JSON size chooses the format when
 * the output's name does not, and warns when a JSON would be larger than a
 * browser opens (MH__TRACE_VIEWER_LIMIT, or --warn-size), with the protobuf
 * format and a window as the way out; --around finds its window before
 * that (around_window.c). The output goes through cli_output.c, so a failed
 * run never leaves a half-written trace. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gzip.h"
#include "job_origin.h"
#include "trace_writer.h"

static const char usage[] =
    "usage: memhist trace FILE... -o OUT [--format perfetto|json] [--device N]\n"
    "                        [--steps A:B | --time A:B | --around peak|oom]\n"
    "                        [--into PROFILE.json] [--pretty] [--warn-size SIZE]\n\n"
    "Writes a trace to open in https://ui.perfetto.dev: op ranges per thread,\n"
    "kernels, copies and memsets per GPU and stream, arrows from each launch to\n"
    "its kernel, memory counters per GPU (allocated, reserved, outside the\n"
    "allocator, total), steps, segment and driver allocations, and OOMs with\n"
    "their explanation.\n"
    "Several FILEs (one per rank of a job) make one trace: each file's processes\n"
    "are named after its rank, and times count from the job's earliest start\n"
    "(an instant at 0 marks it), as in `memhist report` and `plot` of the same files.\n\n"
    "Two formats hold the same tracks: Perfetto's own protobuf format (OUT.pftrace\n"
    "or OUT.perfetto-trace), several times smaller, and Chrome's trace event JSON\n"
    "(OUT.json, which chrome://tracing also opens). OUT's extension chooses and\n"
    "--format overrides it; for '-' or another name the trace is JSON unless the\n"
    "JSON would be larger than a browser opens (--warn-size), then protobuf.\n"
    "OUT.gz (OUT.json.gz, OUT.pftrace.gz) is written gzip-compressed; Perfetto\n"
    "and TensorBoard read it so.\n\n"
    "options:\n"
    "  -o, --output OUT        output file ('-' for standard output)\n"
    "  --format perfetto|json  the output's format (default: from OUT, see above)\n"
    "  --steps A:B             only steps A..B (inclusive; A:, :B or N also work)\n"
    "  --time A:B              only seconds A..B from the start of the recording (of\n"
    "                          the job with several files)\n"
    "  --around peak|oom       only the step before, the step of and the step after\n"
    "                          the allocated peak (of --device N, else of the GPU\n"
    "                          whose peak is highest) or the last OOM; in a recording\n"
    "                          without steps, the second before and after it\n"
    "  --device N              only GPU N's tracks\n"
    "  --into PROFILE          add the memory tracks to a torch.profiler trace JSON (or\n"
    "                          .json.gz, as tensorboard_trace_handler writes it) and\n"
    "                          write the combined trace, JSON (clocks are aligned,\n"
    "                          torch's track names kept; only the profiled span is\n"
    "                          added unless a window is given; a recording outside\n"
    "                          it is refused)\n"
    "  --pretty                indent the JSON (and write JSON)\n"
    "  --warn-size SIZE        the size a browser opens (default 512MiB, V8's longest\n"
    "                          string): a JSON estimated larger is written as protobuf\n"
    "                          unless OUT says .json, where it warns with the ways\n"
    "                          out; a protobuf trace larger than it warns too\n"
    "  -h, --help              show this help\n\n"
    "examples:\n"
    "  memhist trace run.memhist -o run.pftrace\n"
    "  memhist trace run.memhist -o peak.json --around peak\n"
    "  memhist trace run.memhist.rank* -o job.pftrace\n";

static int run_trace(int argc, char **argv);

const struct mh__cli_command mh__cmd_trace = {
    "trace", "write a Perfetto or Chrome trace (ops, kernels, memory counters)", usage,
    run_trace};

#define TRACE_MAX_FILES MH__TRACE_MAX_FILES

enum trace_format { FORMAT_AUTO, FORMAT_JSON, FORMAT_PERFETTO };

struct trace_args {
    const char *file, *out, *into, *steps, *time, *around; /* file: the first of files */
    const char *format_text;
    const char *files[TRACE_MAX_FILES];
    size_t nfiles;
    int format;        /* enum trace_format: asked for, then chosen */
    int oom;           /* --around oom */
    int warn_size_given;
    char window[256];  /* what --around chose, for the status line */
    uint64_t json_est; /* the JSON's estimated size, all files */
    struct mh__trace_opts o;
};

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* The format OUT's name says: .json, .pftrace or .perfetto-trace (each
 * also with .gz), else none. */
static int format_of_name(const char *out)
{
    static const char *const json[] = {".json", ".json.gz"};
    static const char *const perfetto[] = {".pftrace", ".pftrace.gz", ".perfetto-trace",
                                           ".perfetto-trace.gz"};
    for (size_t i = 0; i < sizeof json / sizeof json[0]; i++)
        if (ends_with(out, json[i]))
            return FORMAT_JSON;
    for (size_t i = 0; i < sizeof perfetto / sizeof perfetto[0]; i++)
        if (ends_with(out, perfetto[i]))
            return FORMAT_PERFETTO;
    return FORMAT_AUTO;
}

/* --format, OUT's name, --into and --pretty: the format asked for. */
static int parse_format(struct trace_args *a)
{
    const struct mh__cli_command *c = &mh__cmd_trace;
    if (!a->format_text)
        a->format = format_of_name(a->out);
    else if (strcmp(a->format_text, "perfetto") == 0)
        a->format = FORMAT_PERFETTO;
    else if (strcmp(a->format_text, "json") == 0)
        a->format = FORMAT_JSON;
    else
        return mh__cli_usage_error(c, "--format is 'perfetto' or 'json', not '%s'",
                                   a->format_text);
    if (a->format == FORMAT_PERFETTO && a->into)
        return mh__cli_usage_error(c, "--into writes a torch.profiler trace, which is JSON; "
                                      "give -o OUT.json (or --format json)");
    if (a->format == FORMAT_PERFETTO && a->o.pretty)
        return mh__cli_usage_error(c, "--pretty indents JSON; the protobuf format has no text");
    if (a->into || a->o.pretty)
        a->format = FORMAT_JSON;
    return 0;
}

static int parse_window(struct trace_args *a)
{
    const struct mh__cli_command *c = &mh__cmd_trace;
    if (a->around) {
        if (strcmp(a->around, "peak") != 0 && strcmp(a->around, "oom") != 0)
            return mh__cli_usage_error(c, "--around takes 'peak' or 'oom', not '%s'", a->around);
        if (a->steps || a->time)
            return mh__cli_usage_error(c, "--around chooses the window itself; it cannot be "
                                          "combined with --steps or --time");
        a->oom = a->around[0] == 'o';
    }
    struct mh__window w;
    char err[160];
    if (mh__cli_parse_window(a->steps, a->time, &w, err, sizeof err) != 0)
        return mh__cli_usage_error(c, "%s", err);
    a->o.has_steps = w.has_steps;
    a->o.step_lo = w.step_lo;
    a->o.step_hi = w.step_hi;
    a->o.has_time = w.has_time;
    a->o.t_lo_ns = w.t_lo_ns;
    a->o.t_hi_ns = w.t_hi_ns;
    return 0;
}

static int parse_args(int argc, char **argv, struct trace_args *a)
{
    memset(a, 0, sizeof *a);
    a->o.device = -1;
    const struct mh__cli_opt opts[] = {
        {"output", 'o', MH__OPT_TEXT, &a->out, 0, 0, NULL, NULL},
        {"format", 0, MH__OPT_TEXT, &a->format_text, 0, 0, NULL, NULL},
        {"steps", 0, MH__OPT_TEXT, &a->steps, 0, 0, NULL, NULL},
        {"time", 0, MH__OPT_TEXT, &a->time, 0, 0, NULL, NULL},
        {"around", 0, MH__OPT_TEXT, &a->around, 0, 0, NULL, NULL},
        {"device", 0, MH__OPT_INT, &a->o.device, 0, 32767, NULL, NULL},
        {"into", 0, MH__OPT_TEXT, &a->into, 0, 0, NULL, NULL},
        {"pretty", 0, MH__OPT_FLAG, &a->o.pretty, 0, 0, NULL, NULL},
        {"warn-size", 0, MH__OPT_SIZE, &a->o.warn_bytes, 0, 0, "a size such as 512MiB",
         &a->warn_size_given},
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
        return mh__cli_usage_error(&mh__cmd_trace, "missing -o OUT (OUT.pftrace, OUT.json)");
    if (!a->o.warn_bytes)
        a->o.warn_bytes = MH__TRACE_VIEWER_LIMIT;
    if ((rc = parse_format(a)) != 0)
        return rc;
    return parse_window(a);
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

/* The one size policy (MH__TRACE_VIEWER_LIMIT, or --warn-size): a JSON
 * larger than a browser opens is written as protobuf when OUT's name leaves
 * the choice, and warns when it was asked for, naming the ways out. */
static void choose_format(struct trace_args *a, struct mh__trace **t)
{
    const struct mh__trace_plan *big = NULL;
    size_t at = 0;
    a->json_est = 0;
    for (size_t i = 0; i < a->nfiles; i++) {
        const struct mh__trace_plan *p = mh__trace_get_plan(t[i]);
        a->json_est += p->est_bytes;
        if (p->suggestion[0] && (!big || p->est_bytes > big->est_bytes)) {
            big = p;
            at = i;
        }
    }
    int over = a->json_est > a->o.warn_bytes;
    if (a->format == FORMAT_AUTO)
        a->format = over ? FORMAT_PERFETTO : FORMAT_JSON;
    else if (a->format == FORMAT_JSON && over) {
        char b[32], l[32], window[200] = "";
        if (big)
            snprintf(window, sizeof window, "'memhist trace %s %s -o OUT.json' or ", a->files[at],
                     big->suggestion);
        char limit[96];
        if (a->warn_size_given)
            snprintf(limit, sizeof limit, "more than --warn-size %s",
                     mh__bytes_text(a->o.warn_bytes, l));
        else
            snprintf(limit, sizeof limit, "more than a browser opens (%s, V8's longest string)",
                     mh__bytes_text(a->o.warn_bytes, l));
        mh__cli_error("warning: the JSON trace will be about %s, %s: write Perfetto's protobuf "
                      "format instead (-o OUT.pftrace, several times smaller), or a window: "
                      "%s--around peak", mh__bytes_text(a->json_est, b), limit, window);
    }
    for (size_t i = 0; i < a->nfiles; i++)
        mh__trace_set_perfetto(t[i], a->format == FORMAT_PERFETTO);
}

/* A protobuf trace past the same size: the browser's memory is the limit. */
static void warn_perfetto_size(const struct trace_args *a, uint64_t bytes)
{
    char b[32];
    mh__cli_error("warning: at %s the trace may not open in the Perfetto UI in a browser tab "
                  "(its trace processor has about 2 GB and takes 2-4 times a trace's size): open "
                  "it with 'trace_processor --httpd %s' and ui.perfetto.dev, or write a window "
                  "(--around peak, --steps A:B)",
                  mh__bytes_text(bytes, b), strcmp(a->out, "-") ? a->out : "OUT");
}

/* Writes the trace to an open stream (gzip-compressed for OUT.gz); returns 0
 * or says why. */
static int write_output(struct trace_args *a, struct mh__session **ses, struct mh__trace **t,
                        const char *kineto, size_t klen, FILE *fp, uint64_t *bytes)
{
    FILE *gz = NULL;
    if (ends_with(a->out, ".gz") && !(fp = gz = mh__gzip_open_write(fp))) {
        mh__cli_error("%s: %s", a->out, mh_strerror(MH_ENOMEM));
        return MH_ENOMEM;
    }
    struct mh__sink sink;
    mh__sink_init_file(&sink, fp);
    char err[200] = "";
    int rc = kineto        ? mh__trace_merge_kineto(t[0], ses[0], kineto, klen, &sink, err, sizeof err)
             : a->nfiles > 1 ? mh__trace_write_files(t, ses, a->nfiles, &sink)
                             : mh__trace_write(t[0], ses[0], &sink);
    if (rc == 0)
        rc = mh__sink_finish(&sink);
    *bytes = sink.bytes;
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

static int produce(struct trace_args *a, struct mh__session **ses, struct mh__trace **t,
                   const char *kineto, size_t klen, uint64_t *bytes)
{
    const char *inputs[TRACE_MAX_FILES + 1];
    for (size_t i = 0; i < a->nfiles; i++)
        inputs[i] = a->files[i];
    inputs[a->nfiles] = a->into;
    struct mh__outfile of;
    if (mh__cli_output_open(&of, a->out, inputs, a->nfiles + (a->into != NULL)) != 0)
        return MH_EIO;
    int rc = write_output(a, ses, t, kineto, klen, of.fp, bytes);
    return mh__cli_output_close(&of, a->out, rc, 0);
}

/* How the recording and the profile it was merged into line up in time. */
static void note_overlap(const struct mh__trace_plan *p)
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
                      struct mh__trace_opts *o)
{
    *o = a->o;
    if (a->nfiles < 2)
        return;
    snprintf(label, 48, "file %zu", i + 1);
    o->file_index = (unsigned)i;
    o->origin_ns = origin;
    o->gpu_pid_base = (int64_t)(i + 1) * 1000;
    o->process_label = label;
}

/* The label of a scanned file's processes: its rank (read with the
 * metadata during the scan), "R+" for a process the rank started. */
static void named_after_rank(struct mh__session *ses, char label[48])
{
    const struct mh_reader *r = mh__session_reader(ses);
    const char *rank = mh_reader_meta(r, "rank"), *role = mh_reader_meta(r, "rank_process");
    if (rank && *rank)
        snprintf(label, 48, "rank %.24s%s", rank, role && !strcmp(role, "helper") ? "+" : "");
}

/* The window --around chooses, as the options --steps or --time would set it. */
static int around(struct trace_args *a, struct mh__session **ses, uint64_t origin)
{
    struct mh__window w;
    int rc = mh__cli_around_window(ses, a->files, a->nfiles, a->oom, a->o.device, origin, &w,
                                   a->window, sizeof a->window);
    if (rc != 0)
        return rc;
    a->o.has_steps = w.has_steps;
    a->o.step_lo = w.step_lo;
    a->o.step_hi = w.step_hi;
    a->o.has_time = w.has_time;
    a->o.t_lo_ns = w.t_lo_ns;
    a->o.t_hi_ns = w.t_hi_ns;
    return 0;
}

/* Opens and scans every file; returns 0 or an exit code (reported). */
static int prepare(struct trace_args *a, int kineto, struct mh__session **ses, struct mh__trace **t,
                   char (*labels)[48])
{
    uint64_t origin = 0, events = 0;
    if (a->nfiles > 1 && mh__job_origin(a->files, a->nfiles, &origin) < 0)
        return MH__EXIT_FAIL;
    for (size_t i = 0; i < a->nfiles; i++)
        if (mh__session_open(a->files[i], &ses[i]) < 0)
            return MH__EXIT_FAIL;
    int rc = a->around ? around(a, ses, origin) : 0;
    for (size_t i = 0; i < a->nfiles && rc == 0; i++) {
        struct mh__trace_opts o;
        file_opts(a, i, origin, labels[i], &o);
        if ((rc = mh__trace_new(&o, &t[i])) < 0) {
            mh__cli_error("%s: %s", a->files[i], mh_strerror(rc));
            return MH__EXIT_FAIL;
        }
        if (kineto)
            continue;
        if (mh__trace_scan(t[i], ses[i]) != 0)
            return MH__EXIT_FAIL;
        if (a->nfiles > 1)
            named_after_rank(ses[i], labels[i]);
        events += mh__trace_get_plan(t[i])->events;
    }
    if (rc != 0)
        return rc;
    if (!kineto && events == 0)
        mh__cli_error("warning: %s: no events in the chosen window", a->file);
    if (!kineto)
        choose_format(a, t);
    return 0;
}

static void say_written(const struct trace_args *a, struct mh__trace **t, int kineto)
{
    uint64_t events = 0, flows = 0;
    for (size_t i = 0; i < a->nfiles; i++) {
        events += mh__trace_get_plan(t[i])->events;
        flows += mh__trace_get_plan(t[i])->flows;
    }
    const struct mh__trace_plan *p = mh__trace_get_plan(t[0]);
    if (kineto && p->profile_last_ns)
        note_overlap(p);
    char format[96] = "Chrome JSON", b[32];
    if (a->format == FORMAT_PERFETTO && a->json_est > a->o.warn_bytes)
        snprintf(format, sizeof format, "Perfetto protobuf (as JSON it would be about %s)",
                 mh__bytes_text(a->json_est, b));
    else if (a->format == FORMAT_PERFETTO)
        snprintf(format, sizeof format, "Perfetto protobuf");
    mh__cli_status_wrote(a->out, "; open it in https://ui.perfetto.dev",
                         "%s, %llu events, %llu launch->GPU arrows%s%s%s", format,
                         (unsigned long long)events, (unsigned long long)flows,
                         a->nfiles > 1 ? ", times from the job's earliest start" : "",
                         a->window[0] ? ", " : "", a->window);
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
        return MH__EXIT_FAIL;
    struct mh__session *ses[TRACE_MAX_FILES] = {NULL};
    struct mh__trace *t[TRACE_MAX_FILES] = {NULL};
    char labels[TRACE_MAX_FILES][48];
    uint64_t bytes = 0;
    rc = prepare(&a, kineto != NULL, ses, t, labels);
    if (rc == 0)
        rc = produce(&a, ses, t, kineto, klen, &bytes) == 0 ? 0 : MH__EXIT_FAIL;
    if (rc == 0 && a.format == FORMAT_PERFETTO && bytes > a.o.warn_bytes)
        warn_perfetto_size(&a, bytes);
    if (rc == 0 && strcmp(a.out, "-") != 0)
        say_written(&a, t, kineto != NULL);
    for (size_t i = 0; i < a.nfiles; i++) {
        mh__trace_free(t[i]);
        mh__session_close(ses[i]);
    }
    free(kineto);
    return mh__cli_finish(rc ? MH__EXIT_FAIL : MH__EXIT_OK);
}
