/* cmd_simulate.c - `memhist simulate`: without a command, runs a built-in
 * training workload through the caching-allocator simulator and writes a
 * .memhist recording that every other command reads like a recorded one
 * (writer source "simulated", meta "alloc_conf", device capacity). With
 * `-- COMMAND`, runs that program on the virtual CUDA device and records it
 * (simulate_program.c). Needs no GPU either way. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sim.h"
#include "simulate.h"
#include "workload.h"

static const char usage[] =
    "usage: memhist simulate [--gpu PRESET] [--device-memory SIZE] [--devices N]\n"
    "                        [--alloc-conf STR] [--steps N] [-o FILE] -- COMMAND [ARGS...]\n"
    "       memhist simulate [--workload NAME] [--steps N] [--device-memory SIZE]\n"
    "                        [--alloc-conf STR] [--param K=V,...] [--seed N] [-o FILE]\n\n"
    "With a COMMAND: runs it (a PyTorch program, unchanged) on a virtual CUDA device\n"
    "and records it as `memhist record` would on that GPU, then prints the report\n"
    "and a last line saying whether it fit (or where it ran out of memory).\n"
    "PyTorch's own caching allocator runs and decides every address, so peaks, OOMs\n"
    "and fragmentation are the real allocator's. Kernels do nothing: tensor values\n"
    "are not computed (code whose sizes depend on values can take other paths, and a\n"
    "loop that waits for a value, such as generate(), may not stop: Ctrl-C keeps what\n"
    "ran), cuDNN is off (native convolutions), and torch.compile with Inductor, CUDA\n"
    "graphs and cuSOLVER do not work; memhist warns when the program uses them. Under\n"
    "torchrun each rank gets its own virtual device and writes FILE.rank<R>;\n"
    "torch.distributed runs on gloo (NCCL needs real GPUs).\n\n"
    "  --gpu PRESET           the GPU to pose as (default H100); 'list' shows them\n"
    "  --device-memory SIZE   capacity per device (default: the preset's)\n"
    "  --devices N            devices per process, 1 to 16 (default 1; under torchrun\n"
    "                         one per local rank)\n"
    "  --context-memory SIZE  memory the CUDA context takes (default 512MiB)\n"
    "  --events MODE          immediate (default): events complete when recorded;\n"
    "                         sync: at the next synchronizing call\n"
    "  --alloc-conf STR       PYTORCH_CUDA_ALLOC_CONF for the program\n"
    "  --stacks S             python (default), all, none (as memhist record)\n"
    "  --op-ranges            also record record_function ranges (as memhist record)\n"
    "  --steps N              end the program once N training steps are complete\n"
    "                         (as memhist record --steps; default: run it to its end)\n"
    "  --no-report            do not print the report afterwards\n"
    "  -o, --output FILE      output file (default sim.memhist)\n\n"
    "example: memhist simulate --gpu RTX4090 -- python train.py --batch 16\n\n"
    "Without a command: simulates a built-in training run with PyTorch's CUDA\n"
    "caching allocator rules and writes its memory history, with stacks, steps and\n"
    "phases, as a .memhist file. If the run needs more than --device-memory it\n"
    "stops at the OOM like a real run raising OutOfMemoryError: the file ends with\n"
    "the OOM event and the unfinished step (the command still succeeds: the\n"
    "recording is the result).\n\n"
    "options:\n"
    "  --workload NAME        gpt (default) or resnet; 'list' shows the workloads and\n"
    "                         their parameters\n"
    "  --steps N              training steps (default 8)\n"
    "  --device-memory SIZE   device capacity, e.g. 80GiB (default 80GiB)\n"
    "  --gpu PRESET           take the device capacity from a GPU preset\n"
    "  --alloc-conf STR       allocator settings, PYTORCH_CUDA_ALLOC_CONF syntax, e.g.\n"
    "                         expandable_segments:True or max_split_size_mb:128\n"
    "  --memory-fraction F    torch.cuda.set_per_process_memory_fraction(F), in (0, 1]\n"
    "                         (garbage_collection_threshold needs it)\n"
    "  --param K=V,...        workload parameters, e.g. layers=24,hidden=2048\n"
    "  --seed N               random seed for per-step size variation (default 1)\n"
    "  -o, --output FILE      output file (default sim.memhist)\n"
    "  -h, --help             show this help\n";

extern const struct mh__cli_command mh__cmd_simulate;

struct sim_args {
    const char *workload, *conf_text, *params, *out;
    uint64_t steps, capacity, seed;
    double fraction;
    /* the virtual device (with a command) */
    const char *gpu, *events, *stacks;
    uint64_t devices, context;
    int has_capacity, no_report, op_ranges, cmd_index, has_steps;
    const char *builtin_only, *command_only; /* an option given for the other mode */
};

static int list_workloads(void)
{
    for (size_t i = 0; i < mh__workload_count(); i++) {
        const struct mh__workload *w = mh__workload_at(i);
        printf("%s%s - %s\n", i ? "\n" : "", w->name, w->summary);
        for (size_t j = 0; w->params[j].name; j++)
            printf("  %-8s default %-8lld %s\n", w->params[j].name, (long long)w->params[j].dflt,
                   w->params[j].help);
    }
    return mh__cli_finish(MH__EXIT_OK);
}

static int parse_args(int argc, char **argv, struct sim_args *a)
{
    const struct mh__cli_command *cmd = &mh__cmd_simulate;
    const char *context = NULL;
    int seen[11] = {0};
    const struct mh__cli_opt opts[] = {
        /* the built-in workloads only (--steps: both) */
        {"workload", 0, MH__OPT_TEXT, &a->workload, 0, 0, NULL, &seen[0]},
        {"param", 0, MH__OPT_TEXT, &a->params, 0, 0, NULL, &seen[1]},
        {"steps", 0, MH__OPT_UINT, &a->steps, 1, 1000000, "1 to 1000000", &seen[2]},
        {"seed", 0, MH__OPT_UINT, &a->seed, 0, UINT64_MAX, NULL, &seen[3]},
        MH__CLI_OPT_MEMORY_FRACTION(&a->fraction, &seen[4]),
        /* a command only */
        {"devices", 0, MH__OPT_UINT, &a->devices, 1, 16, "1 to 16", &seen[5]},
        {"context-memory", 0, MH__OPT_TEXT, &context, 0, 0, NULL, &seen[6]},
        {"events", 0, MH__OPT_TEXT, &a->events, 0, 0, NULL, &seen[7]},
        {"stacks", 0, MH__OPT_TEXT, &a->stacks, 0, 0, NULL, &seen[8]},
        {"no-report", 0, MH__OPT_FLAG, &a->no_report, 0, 0, NULL, &seen[9]},
        {"op-ranges", 0, MH__OPT_FLAG, &a->op_ranges, 0, 0, NULL, &seen[10]},
        /* both */
        MH__CLI_OPT_DEVICE_MEMORY(&a->capacity, &a->has_capacity),
        {"alloc-conf", 0, MH__OPT_TEXT, &a->conf_text, 0, 0, NULL, NULL},
        {"gpu", 0, MH__OPT_TEXT, &a->gpu, 0, 0, NULL, NULL},
        {"output", 'o', MH__OPT_TEXT, &a->out, 0, 0, NULL, NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int first, rc = mh__cli_options_in_order(cmd, argc, argv, opts, &first);
    if (rc)
        return rc;
    a->has_steps = seen[2]; /* --steps applies to both */
    for (int i = 0; i < 11; i++)
        if (seen[i] && i != 2)
            *(i < 5 ? &a->builtin_only : &a->command_only) = opts[i].name;
    if (context && mh__cli_parse_size(context, &a->context))
        return mh__cli_usage_error(cmd, "invalid value '%s' for --context-memory (a size such as "
                                        "512MiB)", context);
    if (first == argc && strcmp(argv[first - 1], "--") == 0)
        return mh__cli_usage_error(cmd, "no command after '--'");
    a->cmd_index = first < argc ? first : 0;
    return 0;
}

static int list_gpus(void)
{
    char b[32];
    printf("%-10s %-26s %5s %4s %12s\n", "preset", "name", "SMs", "cc", "memory");
    for (size_t i = 0; i < mh__vdev_preset_count(); i++) {
        const struct mh__vdev_gpu *g = mh__vdev_preset_at(i);
        char cc[16];
        snprintf(cc, sizeof cc, "%d.%d", g->major, g->minor);
        printf("%-10s %-26s %5d %4s %12s\n", g->key, g->name, g->sms, cc, mh__bytes_text(g->memory, b));
    }
    return mh__cli_finish(MH__EXIT_OK);
}

/* Checks the virtual device settings and runs the command on it. */
static int simulate_command(const struct sim_args *a, char **cmd)
{
    const struct mh__cli_command *c = &mh__cmd_simulate;
    if (a->builtin_only)
        return mh__cli_usage_error(c, "--%s applies to the built-in workloads, not to a command",
                                  a->builtin_only);
    const char *gpu = a->gpu ? a->gpu : "H100";
    struct mh__cli_vdev_opts o = {.gpu = mh__vdev_preset_find(gpu), .devices = (int)a->devices,
                                 .context = a->context, .events = a->events, .alloc_conf = a->conf_text,
                                 .output = a->out, .stacks = a->stacks, .op_ranges = a->op_ranges,
                                 .report = !a->no_report,
                                 .stop_after_steps = a->has_steps ? a->steps : 0};
    if (!o.gpu)
        return mh__cli_usage_error(c, "--gpu: no preset named '%s' (try --gpu list)", gpu);
    o.capacity = a->has_capacity ? a->capacity : o.gpu->memory;
    if (o.capacity < (4u << 20))
        return mh__cli_usage_error(c, "--device-memory: at least 4MiB is needed");
    if (o.context >= o.capacity)
        return mh__cli_usage_error(c, "--context-memory must be smaller than the device memory");
    if (strcmp(o.events, "immediate") && strcmp(o.events, "sync"))
        return mh__cli_usage_error(c, "--events must be immediate or sync, not '%s'", o.events);
    if (strcmp(o.stacks, "python") && strcmp(o.stacks, "all") && strcmp(o.stacks, "none"))
        return mh__cli_usage_error(c, "--stacks must be python, all or none, not '%s'", o.stacks);
    char err[256];
    struct mh_alloc_conf conf;
    if (o.alloc_conf && mh_alloc_conf_parse(o.alloc_conf, &conf, err, sizeof err))
        return mh__cli_usage_error(c, "--alloc-conf: %s", err);
    return mh__cli_simulate_program(&o, cmd);
}

static int write_header(struct mh_writer *w, const struct sim_args *a, const struct mh__workload *wl,
                        const int64_t *values, const struct mh_alloc_conf *conf)
{
    char buf[1024];
    int rc = 0;
    mh_alloc_conf_format(conf, buf, sizeof buf);
    rc |= mh_writer_set_meta(w, "alloc_conf", buf);
    rc |= mh_writer_set_meta(w, "workload", wl->name);
    mh__workload_format_params(wl, values, buf, sizeof buf);
    rc |= mh_writer_set_meta(w, "workload_params", buf);
    snprintf(buf, sizeof buf, "%" PRIu64, a->seed);
    rc |= mh_writer_set_meta(w, "seed", buf);
    if (a->fraction > 0) {
        snprintf(buf, sizeof buf, "%g", a->fraction);
        rc |= mh_writer_set_meta(w, "memory_fraction", buf);
    }
    rc |= mh_writer_set_device(w, 0, "simulated GPU", a->capacity);
    return rc;
}

static void print_result(const struct sim_args *a, const struct mh__workload *wl,
                         const struct mh__workload_result *res, const struct mh__sim_stats *st)
{
    char b1[32], b2[32], b3[32];
    mh__cli_status_wrote(a->out, NULL, "simulated %s, %" PRIu64 " step%s, peak allocated %s, peak reserved %s, "
           "device %s",
           wl->name, res->steps_done, res->steps_done == 1 ? "" : "s",
           mh__bytes_text(st->peak_allocated, b1), mh__bytes_text(st->peak_reserved, b2),
           mh__bytes_text(a->capacity, b3));
    if (res->oom)
        mh__cli_status("out of memory in step %" PRId64 " allocating %s: the run stopped there, "
                       "as a real one would", res->oom_step, mh__bytes_text(res->oom_size, b1));
    mh__cli_status("next: memhist %s %s", res->oom ? "oom" : "report", a->out);
}

static int run_sim(const struct sim_args *a, const struct mh__workload *wl, const int64_t *values,
                   const struct mh_alloc_conf *conf)
{
    struct mh_writer_opts wo = {.source = "simulated"};
    struct mh_writer *w = NULL;
    struct mh__sim *s = NULL;
    struct mh__workload_result res;
    struct mh__sim_stats st;
    struct mh__outfile of;
    if (mh__cli_output_open(&of, a->out, NULL, 0) < 0)
        return MH__EXIT_FAIL;
    int rc = mh_writer_open_fd(of.fd, &wo, &w);
    if (rc < 0) {
        mh__cli_error("%s: %s", a->out, mh_strerror(rc));
        mh__outfile_abort(&of);
        return MH__EXIT_FAIL;
    }
    struct mh__sim_opts so = {.conf = *conf, .capacity = a->capacity, .writer = w};
    rc = write_header(w, a, wl, values, conf);
    if (rc == 0)
        rc = mh__sim_new(&so, &s);
    if (rc == 0)
        rc = mh__workload_run(wl, s, values, a->steps, a->seed, &res);
    if (rc == 0)
        mh__sim_stats(s, &st);
    mh__sim_free(s);
    int crc = mh_writer_close(w);
    int errnum = crc == MH_EIO ? errno : 0;
    if (rc == 0)
        rc = crc;
    if (rc < 0 && !errnum)
        mh__cli_error("%s: %s", a->out, mh_strerror(rc));
    if (mh__cli_output_close(&of, a->out, rc, errnum) < 0)
        return MH__EXIT_FAIL;
    print_result(a, wl, &res, &st);
    return MH__EXIT_OK;
}

static int simulate_main(int argc, char **argv)
{
    struct sim_args a = {.workload = "gpt", .out = "sim.memhist", .steps = 8, .seed = 1,
                         .capacity = 80ull << 30, .events = "immediate",
                         .stacks = "python", .context = 512ull << 20};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    if (a.gpu && strcmp(a.gpu, "list") == 0)
        return list_gpus();
    if (a.cmd_index)
        return simulate_command(&a, argv + a.cmd_index);
    if (a.command_only)
        return mh__cli_usage_error(&mh__cmd_simulate, "--%s applies to a command (after --), not to "
                                   "the built-in workloads", a.command_only);
    if (!a.has_capacity && a.gpu != NULL) {
        const struct mh__vdev_gpu *g = mh__vdev_preset_find(a.gpu);
        if (!g)
            return mh__cli_usage_error(&mh__cmd_simulate, "--gpu: no preset named '%s' (try --gpu list)", a.gpu);
        a.capacity = g->memory;
    }
    if (strcmp(a.workload, "list") == 0)
        return list_workloads();
    const struct mh__workload *wl = mh__workload_find(a.workload);
    if (!wl)
        return mh__cli_usage_error(&mh__cmd_simulate,
                                  "no workload named '%s' (try --workload list)", a.workload);
    int64_t values[MH__WORKLOAD_MAX_PARAMS];
    char err[256];
    if (mh__workload_parse_params(wl, a.params, values, err, sizeof err))
        return mh__cli_usage_error(&mh__cmd_simulate, "--param: %s", err);
    struct mh_alloc_conf conf;
    if (mh_alloc_conf_parse(a.conf_text, &conf, err, sizeof err))
        return mh__cli_usage_error(&mh__cmd_simulate, "--alloc-conf: %s", err);
    conf.memory_fraction = a.fraction;
    return mh__cli_finish(run_sim(&a, wl, values, &conf));
}

const struct mh__cli_command mh__cmd_simulate = {
    "simulate", "run a PyTorch program on a virtual GPU, or a built-in training run (no GPU)",
    usage, simulate_main};
