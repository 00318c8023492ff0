/* cmd_record.c - `memhist record [-o FILE] [--stacks S] -- CMD ...`: runs a
 * PyTorch program unchanged and records its GPU memory history.
 *
 * The recording itself happens inside the child: this command puts the
 * memhist bootstrap (src/python/memhist/bootstrap/sitecustomize.py) first on
 * PYTHONPATH and passes the settings through the environment; the bootstrap
 * attaches libmemhist_torch.so when the program initializes CUDA and, at
 * exit, appends one status line per process to a status file. Programs that
 * do not use PyTorch are recorded by the CUDA driver itself, which loads
 * libmemhist.so through CUDA_INJECTION64_PATH (src/record/inject.c: CUPTI
 * driver-level memory and kernels); in PyTorch programs that CUPTI recording
 * joins the torch bridge's file. This command
 * waits for the child, forwards SIGINT/SIGTERM to it, and then says where
 * each file is and what to run next, or why nothing was recorded
 * (record_summary.c). It exits
 * with the child's status. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "memhist/torch.h"

static const char usage[] =
    "usage: memhist record [-o FILE] [--stacks python|all|none] [--frames N] [--op-ranges]\n"
    "                      [--steps N] -- CMD [ARGS...]\n\n"
    "Runs a Python/PyTorch program unchanged and records every CUDA caching-allocator\n"
    "event, training steps and stacks to FILE. Recording starts when the program\n"
    "initializes CUDA (never earlier). Every process that initializes CUDA gets its\n"
    "own file, created exclusively (a name already taken gets .2, .3, ...): under\n"
    "torchrun FILE.rank<R> for each rank, FILE.rank<R>.attempt<N> after an elastic\n"
    "restart, FILE.rank<R>.pid<P> for processes a rank starts; FILE.pid<P> for\n"
    "other processes. At exit one summary lists every file and the command that\n"
    "opens them all.\n\n"
    "options:\n"
    "  -o, --output FILE   where to write (default: record.memhist)\n"
    "  --stacks S          python (default), all (adds C++ frames; slower), none\n"
    "  --frames N          keep the innermost N frames of each stack, 1 to 512 (default 512)\n"
    "  --op-ranges         also record record_function ranges\n"
    "  --steps N           end the program once N training steps are complete (the\n"
    "                      recording finished as at a normal exit, exit status 0;\n"
    "                      MEMHIST_STOP_AFTER_STEPS=N does the same)\n"
    "  -h, --help          show this help\n\n"
    "environment: MEMHIST_LIB_DIR (libmemhist.so, libmemhist_torch.so) and\n"
    "MEMHIST_PYTHON_DIR (the directory holding the memhist package) override where\n"
    "they are looked for (the installation this binary belongs to).\n\n"
    "example: memhist record -o run.memhist -- python train.py --epochs 1\n";

static int run_record(int argc, char **argv);

const struct mh__cli_command mh__cmd_record = {
    "record", "run a PyTorch program and record its GPU memory history", usage, run_record};

/* Where an installed memhist keeps its libraries and Python package,
 * relative to the directory of this binary (cmake/install.cmake). */
#ifndef MH_REL_LIBDIR
#define MH_REL_LIBDIR "../lib"
#endif
#ifndef MH_REL_PYDIR
#define MH_REL_PYDIR "../share/memhist/python"
#endif

/* The first of $ENV (when set), BINDIR/REL and BINDIR/BUILD (the build
 * tree's layout) whose PROBE file exists, resolved into out (PATH_MAX). */
static int find_dir(const char *env, const char *bindir, const char *rel, const char *build,
                    const char *probe, char *out)
{
    const char *val = getenv(env);
    if (val && *val)
        return mh__cli_is_file(val, probe) && realpath(val, out) ? 0 : -1;
    char cand[2][PATH_MAX];
    snprintf(cand[0], PATH_MAX, "%s/%s", bindir, rel);
    snprintf(cand[1], PATH_MAX, "%s/%s", bindir, build);
    for (int i = 0; i < 2; i++)
        if (mh__cli_is_file(cand[i], probe) && realpath(cand[i], out))
            return 0;
    return -1;
}

static int parse_args(int argc, char **argv, struct mh__cli_record_opts *o, int *cmd_index)
{
    const struct mh__cli_opt opts[] = {
        {"output", 'o', MH__OPT_TEXT, &o->output, 0, 0, NULL, NULL},
        {"stacks", 0, MH__OPT_TEXT, &o->stacks, 0, 0, NULL, NULL},
        {"frames", 0, MH__OPT_UINT, &o->frames, 1, MH_TORCH_FRAMES_MAX, NULL, NULL},
        {"op-ranges", 0, MH__OPT_FLAG, &o->op_ranges, 0, 0, NULL, NULL},
        {"steps", 0, MH__OPT_UINT, &o->stop_after_steps, 1, 1000000000, "1 to 1000000000", NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int rc = mh__cli_options_in_order(&mh__cmd_record, argc, argv, opts, cmd_index);
    if (rc)
        return rc;
    if (strcmp(o->stacks, "python") && strcmp(o->stacks, "all") && strcmp(o->stacks, "none"))
        return mh__cli_usage_error(&mh__cmd_record,
                                   "--stacks must be python, all or none, not '%s'", o->stacks);
    if (*cmd_index >= argc)
        return mh__cli_usage_error(&mh__cmd_record, "no command to run (put it after --)");
    return 0;
}

static int setup_env(const struct mh__cli_record_opts *o, const char *out_abs, const char *status_path)
{
    char exe[PATH_MAX], pydir[PATH_MAX], libdir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        mh__cli_error("%s: cannot locate the memhist binary (/proc/self/exe)", o->who);
        return -1;
    }
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    if (find_dir("MEMHIST_LIB_DIR", exe, MH_REL_LIBDIR, ".", "libmemhist_torch.so", libdir) < 0) {
        mh__cli_error("%s: the torch bridge libmemhist_torch.so is not in %s/%s or $MEMHIST_LIB_DIR: "
                      "this memhist was built without torch; install torch, then reinstall or "
                      "rebuild memhist (CMake: MEMHIST_WITH_TORCH=ON)",
                      o->who, exe, MH_REL_LIBDIR);
        return -1;
    }
    if (find_dir("MEMHIST_PYTHON_DIR", exe, MH_REL_PYDIR, "python", "memhist/__init__.py", pydir) < 0) {
        mh__cli_error("%s: the memhist Python package was not found (set MEMHIST_PYTHON_DIR)", o->who);
        return -1;
    }
    const char *old = getenv("PYTHONPATH");
    size_t len = 2 * strlen(pydir) + (old ? strlen(old) : 0) + 32;
    char *pp = malloc(len);
    if (!pp)
        return -1;
    snprintf(pp, len, "%s/memhist/bootstrap:%s%s%s", pydir, pydir, old && *old ? ":" : "", old ? old : "");
    /* programs that do not run the Python bootstrap are recorded by the CUDA
     * driver loading libmemhist.so (src/record/inject.c) into MEMHIST_OUT */
    char inject[PATH_MAX + 32];
    snprintf(inject, sizeof inject, "%s/libmemhist.so", libdir);
    int rc = setenv("PYTHONPATH", pp, 1) | setenv("MEMHIST_LIB_DIR", libdir, 1) |
             setenv("CUDA_INJECTION64_PATH", inject, 1) | setenv("MEMHIST_OUT", out_abs, 1) |
             setenv("MEMHIST_RECORD_PATH", out_abs, 1) | setenv("MEMHIST_STACKS", o->stacks, 1) |
             setenv("MEMHIST_OP_RANGES", o->op_ranges ? "1" : "0", 1) |
             setenv("MEMHIST_STATUS_FILE", status_path, 1);
    free(pp);
    char frames[24], steps[24];
    snprintf(frames, sizeof frames, "%llu", (unsigned long long)o->frames);
    rc |= o->frames ? setenv("MEMHIST_FRAMES", frames, 1) : unsetenv("MEMHIST_FRAMES");
    snprintf(steps, sizeof steps, "%llu", (unsigned long long)o->stop_after_steps);
    if (o->stop_after_steps)
        rc |= setenv("MEMHIST_STOP_AFTER_STEPS", steps, 1);
    return rc ? -1 : 0;
}

static volatile pid_t child_pid;

static void forward_signal(int sig)
{
    if (child_pid > 0)
        kill(child_pid, sig);
}

static int run_child(const char *who, char **cmd)
{
    pid_t pid = fork();
    if (pid < 0) {
        mh__cli_error("%s: fork failed: %s", who, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        char buf[32];
        snprintf(buf, sizeof buf, "%d", (int)getpid());
        setenv("MEMHIST_ROOT_PID", buf, 1);
        execvp(cmd[0], cmd);
        fprintf(stderr, "memhist: %s: cannot run '%s': %s\n", who, cmd[0], strerror(errno));
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
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int mh__record_output_ok(const char *who, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
        return 1;
    mh__cli_error("%s: %s is %s, not a file: a recording is written to FILE (FILE.rankN per "
                  "process); give a file path such as run.memhist",
                  who, path, S_ISDIR(st.st_mode) ? "a directory" : "a device or a pipe");
    return 0;
}

int mh__cli_record_command(const struct mh__cli_record_opts *o, char **cmd)
{
    char cwd[PATH_MAX], out_abs[2 * PATH_MAX + 2], status_path[2 * PATH_MAX + 40];
    if (o->output[0] == '/')
        snprintf(out_abs, sizeof out_abs, "%s", o->output);
    else if (getcwd(cwd, sizeof cwd))
        snprintf(out_abs, sizeof out_abs, "%s/%s", cwd, o->output);
    else
        snprintf(out_abs, sizeof out_abs, "%s", o->output);
    if (!mh__record_output_ok(o->who, o->output))
        return MH__EXIT_FAIL;
    snprintf(status_path, sizeof status_path, "%s.status.%d", out_abs, (int)getpid());
    int fd = open(status_path, O_WRONLY | O_CREAT | O_TRUNC, 0644); /* also: can we write there? */
    if (fd < 0) {
        mh__cli_error("%s: cannot write %s: %s", o->who, out_abs, strerror(errno));
        return MH__EXIT_FAIL;
    }
    close(fd);
    unlink(out_abs); /* what exists afterwards was written by this run */
    mh__record_clear_previous(out_abs);
    if (setup_env(o, out_abs, status_path) < 0)
        return MH__EXIT_FAIL;
    fflush(stdout);
    int code = run_child(o->who, cmd);
    if (code < 0)
        return MH__EXIT_FAIL;
    if (code != 127) /* 127: the command could not be run; already said */
        mh__record_summary(status_path, out_abs);
    unlink(status_path);
    return code;
}

static int run_record(int argc, char **argv)
{
    struct mh__cli_record_opts o = {.output = "record.memhist", .stacks = "python", .who = "record"};
    int cmd_index = 0, rc = parse_args(argc, argv, &o, &cmd_index);
    if (rc)
        return rc;
    return mh__cli_record_command(&o, argv + cmd_index);
}
