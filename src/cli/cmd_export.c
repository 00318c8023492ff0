/* cmd_export.c - `memhist export FILE... -o DIR`: the recordings' tables as a
 * Parquet dataset (or Arrow IPC files) for DuckDB, pandas, Spark, Trino.
 *
 * The tables come from libmemhist_arrow.so (src/export) and are written by
 * pyarrow, so this command runs the Python package's exporter
 * (src/python/memhist/_export.py) with the package and the library found
 * as `memhist record` finds them: the installation this binary belongs
 * to, or $MEMHIST_PYTHON_DIR and $MEMHIST_LIB_DIR. It checks its options
 * and the files, waits for the exporter (forwarding SIGINT/SIGTERM), and
 * prints the closing status line from what the exporter wrote. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
    "usage: memhist export [--format parquet|arrow] -o DIR [--jobs N] [--row-group-rows N]\n"
    "                      [--force] FILE...\n\n"
    "Writes the tables of the recordings (one file per rank: FILE.rank*) as a dataset\n"
    "that DuckDB, pandas, Polars, Spark or Trino read: runs (each file's header),\n"
    "events (every event, with the device's allocated and reserved bytes right after\n"
    "it, its module, step, phase and category), steps (report's per-step table),\n"
    "stacks and frames, segments_at_peak (the blocks at each device's allocated\n"
    "peak). The columns are listed in docs/export.md (schema version 1).\n\n"
    "  parquet (default)  DIR/<table>/run=<run>/rank=<rank>/part-<N>.parquet: a\n"
    "                     Hive-partitioned Parquet dataset (zstd)\n"
    "  arrow              DIR/<table>.arrow: one Arrow IPC file per table holding\n"
    "                     every file's rows\n\n"
    "The files are exported several at once into a temporary folder beside DIR,\n"
    "renamed to DIR when every file is done: a failed or interrupted export leaves\n"
    "nothing behind. A damaged file is exported up to its damage, with a warning.\n"
    "Needs Python 3 with pyarrow (pip install pyarrow); MEMHIST_PYTHON names the\n"
    "interpreter (default python3).\n\n"
    "options:\n"
    "  -o, --output DIR      the dataset's folder (new, or empty)\n"
    "  --format F            parquet (default) or arrow\n"
    "  --jobs N              files exported at once (default: the CPUs, at most 4)\n"
    "  --row-group-rows N    rows per Parquet row group (default 524288)\n"
    "  --force               replace DIR when it holds something\n"
    "  -h, --help            show this help\n\n"
    "example: memhist export run.memhist.rank* -o ds\n"
    "  then:  SELECT rank, max(allocated), max(reserved)\n"
    "         FROM read_parquet('ds/events/**/*.parquet', hive_partitioning = 1)\n"
    "         GROUP BY rank    (DuckDB)\n";

static int run_export(int argc, char **argv);

const struct mh__cli_command mh__cmd_export = {
    "export", "the recordings' tables as a Parquet dataset or Arrow IPC files", usage, run_export};

#ifndef MH_REL_LIBDIR
#define MH_REL_LIBDIR "../lib"
#endif
#ifndef MH_REL_PYDIR
#define MH_REL_PYDIR "../share/memhist/python"
#endif

struct export_opts {
    const char *output, *format;
    uint64_t jobs, group_rows;
    int force;
    char **files;
    size_t nfiles;
};

static int parse_opts(int argc, char **argv, struct export_opts *o)
{
    *o = (struct export_opts){.format = "parquet", .group_rows = 524288};
    const struct mh__cli_opt opts[] = {
        {"output", 'o', MH__OPT_TEXT, &o->output, 0, 0, NULL, NULL},
        {"format", 0, MH__OPT_TEXT, &o->format, 0, 0, NULL, NULL},
        {"jobs", 0, MH__OPT_UINT, &o->jobs, 1, 256, NULL, NULL},
        {"row-group-rows", 0, MH__OPT_UINT, &o->group_rows, 1024, 1u << 26, NULL, NULL},
        {"force", 0, MH__OPT_FLAG, &o->force, 0, 0, NULL, NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int first, rc = mh__cli_options(&mh__cmd_export, argc, argv, opts, &first);
    if (rc)
        return rc;
    if (strcmp(o->format, "parquet") && strcmp(o->format, "arrow"))
        return mh__cli_usage_error(&mh__cmd_export, "--format must be parquet or arrow, not '%s'",
                                   o->format);
    if (!o->output)
        return mh__cli_usage_error(&mh__cmd_export, "missing -o DIR (the dataset's folder)");
    if (first >= argc)
        return mh__cli_usage_error(&mh__cmd_export, "missing FILE");
    o->files = argv + first;
    o->nfiles = (size_t)(argc - first);
    return 0;
}

/* Each input is a readable regular file (the tables read it several times). */
static int inputs_ok(const struct export_opts *o)
{
    for (size_t i = 0; i < o->nfiles; i++) {
        struct stat st;
        const char *p = o->files[i];
        if (strcmp(p, "-") == 0) {
            mh__cli_error("export: standard input cannot be exported: give the recording's file");
            return 0;
        }
        if (stat(p, &st) != 0 || access(p, R_OK) != 0) {
            mh__cli_error("%s: %s", p, strerror(errno));
            return 0;
        }
        if (!S_ISREG(st.st_mode)) {
            mh__cli_error("%s: not a file (a recording is a .memhist file)", p);
            return 0;
        }
    }
    return 1;
}

/* $ENV if set, else BINDIR/REL, else BINDIR/BUILD (the build tree), the
 * first holding PROBE, resolved into out (PATH_MAX). */
static int find_dir(const char *env, const char *rel, const char *build, const char *probe,
                    char *out)
{
    const char *val = getenv(env);
    if (val && *val)
        return mh__cli_is_file(val, probe) && realpath(val, out) ? 0 : -1;
    char exe[PATH_MAX], cand[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    const char *tails[2] = {rel, build};
    for (int i = 0; i < 2; i++) {
        snprintf(cand, sizeof cand, "%s/%s", exe, tails[i]);
        if (mh__cli_is_file(cand, probe) && realpath(cand, out))
            return 0;
    }
    return -1;
}

static int child_env(void)
{
    char pydir[PATH_MAX], libdir[PATH_MAX];
    if (find_dir("MEMHIST_PYTHON_DIR", MH_REL_PYDIR, "python", "memhist/_export.py", pydir) < 0) {
        mh__cli_error("export: the memhist Python package was not found next to this memhist "
                      "(set MEMHIST_PYTHON_DIR to the folder holding it)");
        return -1;
    }
    if (find_dir("MEMHIST_LIB_DIR", MH_REL_LIBDIR, ".", "libmemhist_arrow.so", libdir) < 0) {
        mh__cli_error("export: libmemhist_arrow.so was not found next to this memhist "
                      "(set MEMHIST_LIB_DIR to the folder holding it)");
        return -1;
    }
    const char *old = getenv("PYTHONPATH");
    size_t len = strlen(pydir) + (old ? strlen(old) : 0) + 2;
    char *pp = malloc(len);
    if (!pp)
        return -1;
    snprintf(pp, len, "%s%s%s", pydir, old && *old ? ":" : "", old && *old ? old : "");
    int rc = setenv("PYTHONPATH", pp, 1) | setenv("MEMHIST_LIB_DIR", libdir, 1);
    free(pp);
    return rc ? -1 : 0;
}

static volatile pid_t child_pid;

static void forward_signal(int sig)
{
    if (child_pid > 0)
        kill(child_pid, sig);
}

/* Runs the exporter; returns its exit status (127: it could not start). */
static int run_exporter(char **args)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        mh__cli_error("export: fork failed: %s", strerror(errno));
        return MH__EXIT_FAIL;
    }
    if (pid == 0) {
        execvp(args[0], args);
        fprintf(stderr,
                "memhist: export: cannot run %s (set MEMHIST_PYTHON to a Python 3 "
                "with pyarrow): %s\n",
                args[0], strerror(errno));
        _exit(127);
    }
    child_pid = pid;
    struct sigaction sa = {0};
    sa.sa_handler = forward_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return MH__EXIT_FAIL;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The status line from the exporter's record: DIR, bytes, files, events. */
static void report_written(const char *status, const char *format)
{
    FILE *f = fopen(status, "r");
    char dir[PATH_MAX + 1];
    unsigned long long bytes, files, events;
    if (f && fscanf(f, "%4096[^\t]\t%llu\t%llu\t%llu", dir, &bytes, &files, &events) == 4) {
        char b[32];
        mh__cli_status("wrote %s (%s, %llu file%s, %llu events)", dir, mh__bytes_text(bytes, b),
                       files, files == 1 ? "" : "s", events);
        if (strcmp(format, "parquet") == 0)
            mh__cli_status("next: SELECT rank, max(allocated), max(reserved) FROM "
                           "read_parquet('%s/events/**/*.parquet', hive_partitioning = 1) "
                           "GROUP BY rank  (DuckDB)",
                           dir);
        else
            mh__cli_status("next: pyarrow.ipc.open_file('%s/events.arrow').read_all()", dir);
    }
    if (f)
        fclose(f);
}

static int export_files(const struct export_opts *o)
{
    char status[64], jobs[24], rows[24];
    const char *tmp = getenv("TMPDIR");
    snprintf(status, sizeof status, "%s/memhist-export-XXXXXX",
             tmp && *tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    int fd = mkstemp(status);
    if (fd < 0) {
        mh__cli_error("export: cannot make a temporary file: %s", strerror(errno));
        return MH__EXIT_FAIL;
    }
    close(fd);
    snprintf(jobs, sizeof jobs, "%llu", (unsigned long long)o->jobs);
    snprintf(rows, sizeof rows, "%llu", (unsigned long long)o->group_rows);
    const char *python = getenv("MEMHIST_PYTHON");
    char **args = calloc(o->nfiles + 20, sizeof *args);
    if (!args) {
        unlink(status);
        return MH__EXIT_FAIL;
    }
    size_t n = 0;
    const char *head[] = {python && *python ? python : "python3",
                          "-m",
                          "memhist._export",
                          "--format",
                          o->format,
                          "-o",
                          o->output,
                          "--jobs",
                          jobs,
                          "--row-group-rows",
                          rows,
                          "--status",
                          status};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        args[n++] = (char *)head[i];
    if (o->force)
        args[n++] = "--force";
    if (mh__cli_is_quiet())
        args[n++] = "--quiet";
    args[n++] = "--";
    for (size_t i = 0; i < o->nfiles; i++)
        args[n++] = o->files[i];
    int code = run_exporter(args);
    if (code == 0)
        report_written(status, o->format);
    free(args);
    unlink(status);
    return code;
}

static int run_export(int argc, char **argv)
{
    struct export_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc;
    if (!inputs_ok(&o) || child_env() < 0)
        return MH__EXIT_FAIL;
    mh__cli_progress_off(); /* the exporter draws its own */
    return export_files(&o);
}
