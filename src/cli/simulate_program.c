/* simulate_program.c - `memhist simulate [--gpu PRESET] ... -- COMMAND`: runs
 * any program on the virtual CUDA device (src/vdevice) and records it as
 * `memhist record` does (cmd_record.c's mh__cli_record_command: same
 * bootstrap, same torch bridge, same file). This file checks the settings,
 * finds the stand-in libraries, puts them in LD_PRELOAD with the device
 * settings in the environment, says what is simulated, and prints the report
 * of the recording and whether it fit (simulate_verdict.c) when the program
 * ends. cmd_simulate.c parses the options. */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "simulate.h"
#include "vdev_presets.h"

static const char *const vdev_libs[] = {"libcuda.so.1", "libcudart.so.13", "libcublas.so.13",
                                        "libcublasLt.so.13", "libnvidia-ml.so.1"};

/* Where an installed memhist keeps its libraries, relative to the binary's
 * directory (cmake/install.cmake). */
#ifndef MH_REL_LIBDIR
#define MH_REL_LIBDIR "../lib"
#endif

/* $MEMHIST_VDEVICE_DIR, else vdevice/ next to the binary (build tree), else
 * LIBDIR/memhist/vdevice of the installation (a prefix or the pip wheel). */
static int find_vdevice_dir(char *out, size_t len)
{
    const char *env = getenv("MEMHIST_VDEVICE_DIR");
    char exe[PATH_MAX], cand[3][PATH_MAX + 32];
    int n = 0;
    if (env && *env)
        snprintf(cand[n++], sizeof cand[0], "%s", env);
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) {
        exe[k] = '\0';
        *strrchr(exe, '/') = '\0';
        snprintf(cand[n++], sizeof cand[0], "%s/vdevice", exe);
        snprintf(cand[n++], sizeof cand[0], "%s/" MH_REL_LIBDIR "/memhist/vdevice", exe);
    }
    for (int i = 0; i < n; i++)
        if (mh__cli_is_file(cand[i], "libcudart.so.13") && realpath(cand[i], out)) {
            (void)len;
            return 0;
        }
    return -1;
}

int mh__cli_command_exists(const char *name)
{
    if (strchr(name, '/'))
        return access(name, X_OK) == 0;
    const char *path = getenv("PATH");
    char dir[PATH_MAX];
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(dir, sizeof dir, "%.*s/%s", (int)n, p, name);
        if (access(dir, X_OK) == 0)
            return 1;
        p += n + (p[n] == ':');
    }
    return 0;
}

static int set_preload(const char *dir)
{
    const char *old = getenv("LD_PRELOAD");
    size_t len = (old ? strlen(old) : 0) + 6 * (strlen(dir) + 32);
    char *v = malloc(len);
    if (!v)
        return -1;
    v[0] = '\0';
    for (size_t i = 0; i < sizeof vdev_libs / sizeof vdev_libs[0]; i++)
        snprintf(v + strlen(v), len - strlen(v), "%s%s/%s", i ? ":" : "", dir, vdev_libs[i]);
    if (old && *old)
        snprintf(v + strlen(v), len - strlen(v), ":%s", old);
    int rc = setenv("LD_PRELOAD", v, 1);
    free(v);
    return rc;
}

static int set_device_env(const struct mh__cli_vdev_opts *o)
{
    char buf[64];
    int rc = setenv("MEMHIST_VDEVICE", "1", 1) | setenv("MEMHIST_VDEVICE_GPU", o->gpu->key, 1);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)o->capacity);
    rc |= setenv("MEMHIST_VDEVICE_MEMORY", buf, 1);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)o->context);
    rc |= setenv("MEMHIST_VDEVICE_CONTEXT", buf, 1);
    rc |= setenv("MEMHIST_VDEVICE_EVENTS", o->events, 1);
    if (o->devices) {
        snprintf(buf, sizeof buf, "%d", o->devices);
        rc |= setenv("MEMHIST_VDEVICE_COUNT", buf, 1);
    } else {
        unsetenv("MEMHIST_VDEVICE_COUNT");
    }
    if (o->alloc_conf)
        rc |= setenv("PYTORCH_CUDA_ALLOC_CONF", o->alloc_conf, 1);
    return rc ? -1 : 0;
}

static void say_what_runs(const struct mh__cli_vdev_opts *o)
{
    char cap[32], ctx[32];
    if (!mh__cli_is_quiet())
        mh__cli_error("running on a virtual %s (%s, %s of it taken by the CUDA context): "
                      "PyTorch's allocator is real, tensor values are not computed",
                      o->gpu->name, mh__bytes_text(o->capacity, cap), mh__bytes_text(o->context, ctx));
}

/* `memhist report` of what was written: FILE, or FILE.rank<R> under torchrun. */
static int report_files(const struct mh__cli_vdev_opts *o)
{
    char pattern[PATH_MAX + 16];
    glob_t g = {0};
    snprintf(pattern, sizeof pattern, "%s.rank*", o->output);
    if (access(o->output, R_OK) != 0 && glob(pattern, 0, NULL, &g) != 0)
        return MH__EXIT_OK; /* nothing recorded: already said */
    size_t n = g.gl_pathc ? g.gl_pathc : 1;
    char **argv = calloc(n + 2, sizeof *argv);
    if (!argv) {
        globfree(&g);
        return MH__EXIT_FAIL;
    }
    argv[0] = "report";
    for (size_t i = 0; i < n; i++)
        argv[i + 1] = g.gl_pathc ? g.gl_pathv[i] : (char *)o->output;
    fflush(stderr);
    int rc = mh__cmd_report.run((int)n + 1, argv);
    if (rc == MH__EXIT_OK)
        printf("\n");
    for (size_t i = 0; i < n && rc == MH__EXIT_OK; i++)
        rc = mh__cli_simulate_verdict(argv[i + 1], n > 1, o->context);
    free(argv);
    globfree(&g);
    return rc;
}

int mh__cli_simulate_program(const struct mh__cli_vdev_opts *o, char **cmd)
{
    char dir[PATH_MAX];
    if (!mh__cli_command_exists(cmd[0])) {
        mh__cli_error("simulate: cannot run '%s': command not found", cmd[0]);
        return MH__EXIT_FAIL;
    }
    if (!mh__record_output_ok("simulate", o->output))
        return MH__EXIT_FAIL;
    if (find_vdevice_dir(dir, sizeof dir) < 0) {
        mh__cli_error(
            "simulate: the virtual device libraries (libcudart.so.13, ...) were not found in "
            "$MEMHIST_VDEVICE_DIR or next to memhist (built without CUDA headers? see "
            "MEMHIST_WITH_VDEVICE)");
        return MH__EXIT_FAIL;
    }
    if (set_preload(dir) < 0 || set_device_env(o) < 0) {
        mh__cli_error("simulate: cannot set the environment: %s", strerror(errno));
        return MH__EXIT_FAIL;
    }
    say_what_runs(o);
    struct mh__cli_record_opts ro = {.output = o->output, .stacks = o->stacks, .op_ranges = o->op_ranges,
                                    .who = "simulate", .stop_after_steps = o->stop_after_steps};
    int code = mh__cli_record_command(&ro, cmd);
    if (o->report) {
        int rrc = report_files(o);
        if (code == 0)
            code = rrc;
    }
    return code;
}
