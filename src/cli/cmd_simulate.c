/* cmd_simulate.c - `memhist simulate`: runs a built-in training workload
 * through the caching-allocator simulator and writes a .memhist recording
 * that every other command reads like a recorded one (writer source
 * "simulated", meta "alloc_conf", device capacity). Needs no GPU. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sim.h"
#include "workload.h"

static const char usage[] =
    "usage: memhist simulate [--workload NAME] [--steps N] [--device-memory SIZE]\n"
    "                        [--alloc-conf STR] [--param K=V,...] [--seed N] [-o FILE]\n\n"
    "Simulates a training run with PyTorch's CUDA caching allocator rules and writes\n"
    "its memory history, with stacks, steps and phases, as a .memhist file. No GPU\n"
    "is needed. If the run needs more than --device-memory it stops at the OOM like\n"
    "a real run raising OutOfMemoryError: the file ends with the OOM event and the\n"
    "unfinished step (the command still succeeds: the recording is the result).\n\n"
    "options:\n"
    "  --workload NAME        gpt (default) or resnet; 'list' shows the workloads and\n"
    "                         their parameters\n"
    "  --steps N              training steps (default 8)\n"
    "  --device-memory SIZE   device capacity, e.g. 80GiB (default 80GiB)\n"
    "  --alloc-conf STR       allocator settings, PYTORCH_CUDA_ALLOC_CONF syntax, e.g.\n"
    "                         expandable_segments:True or max_split_size_mb:128\n"
    "  --memory-fraction F    torch.cuda.set_per_process_memory_fraction(F), in (0, 1]\n"
    "                         (garbage_collection_threshold needs it)\n"
    "  --param K=V,...        workload parameters, e.g. layers=24,hidden=2048\n"
    "  --seed N               random seed for per-step size variation (default 1)\n"
    "  -o, --output FILE      output file (default sim.memhist)\n"
    "  -h, --help             show this help\n";

extern const struct mh_cli_command mh__cmd_simulate;

struct sim_args {
    const char *workload, *conf_text, *params, *out;
    uint64_t steps, capacity, seed;
    double fraction;
};

static int list_workloads(void)
{
    for (size_t i = 0; i < mh__workload_count(); i++) {
        const struct mh_workload *w = mh__workload_at(i);
        printf("%s%s - %s\n", i ? "\n" : "", w->name, w->summary);
        for (size_t j = 0; w->params[j].name; j++)
            printf("  %-8s default %-8lld %s\n", w->params[j].name, (long long)w->params[j].dflt,
                   w->params[j].help);
    }
    return mh__cli_finish(MH_EXIT_OK);
}

static int parse_args(int argc, char **argv, struct sim_args *a)
{
    const struct mh_cli_command *cmd = &mh__cmd_simulate;
    const struct mh_cli_opt opts[] = {
        {"workload", 0, MH_OPT_TEXT, &a->workload, 0, 0, NULL, NULL},
        {"steps", 0, MH_OPT_UINT, &a->steps, 1, 1000000, "1 to 1000000", NULL},
        MH_CLI_OPT_DEVICE_MEMORY(&a->capacity),
        {"alloc-conf", 0, MH_OPT_TEXT, &a->conf_text, 0, 0, NULL, NULL},
        MH_CLI_OPT_MEMORY_FRACTION(&a->fraction),
        {"param", 0, MH_OPT_TEXT, &a->params, 0, 0, NULL, NULL},
        {"seed", 0, MH_OPT_UINT, &a->seed, 0, UINT64_MAX, NULL, NULL},
        {"output", 'o', MH_OPT_TEXT, &a->out, 0, 0, NULL, NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int first, rc = mh__cli_options(cmd, argc, argv, opts, &first);
    if (rc)
        return rc;
    if (first < argc)
        return mh__cli_usage_error(cmd, "unexpected argument '%s'", argv[first]);
    return 0;
}

static int write_header(struct mh_writer *w, const struct sim_args *a, const struct mh_workload *wl,
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

static void print_result(const struct sim_args *a, const struct mh_workload *wl,
                         const struct mh_workload_result *res, const struct mh_sim_stats *st)
{
    char b1[32], b2[32], b3[32];
    mh__cli_status("wrote %s: simulated %s, %" PRIu64 " step%s, peak allocated %s, peak reserved %s "
           "(device %s)",
           a->out, wl->name, res->steps_done, res->steps_done == 1 ? "" : "s",
           mh__cli_bytes(st->peak_allocated, b1), mh__cli_bytes(st->peak_reserved, b2),
           mh__cli_bytes(a->capacity, b3));
    if (res->oom)
        mh__cli_status("out of memory in step %" PRId64 " allocating %s: the run stopped there, "
                       "as a real one would", res->oom_step, mh__cli_bytes(res->oom_size, b1));
    mh__cli_status("next: memhist %s %s", res->oom ? "oom" : "report", a->out);
}

static int run_sim(const struct sim_args *a, const struct mh_workload *wl, const int64_t *values,
                   const struct mh_alloc_conf *conf)
{
    struct mh_writer_opts wo = {.source = "simulated"};
    struct mh_writer *w = NULL;
    struct mh_sim *s = NULL;
    struct mh_workload_result res;
    struct mh_sim_stats st;
    int rc = mh_writer_open(a->out, &wo, &w);
    if (rc < 0) {
        mh__cli_error("%s: cannot create: %s", a->out, mh_strerror(rc));
        return MH_EXIT_FAIL;
    }
    struct mh_sim_opts so = {.conf = *conf, .capacity = a->capacity, .writer = w};
    rc = write_header(w, a, wl, values, conf);
    if (rc == 0)
        rc = mh__sim_new(&so, &s);
    if (rc == 0)
        rc = mh__workload_run(wl, s, values, a->steps, a->seed, &res);
    if (rc == 0)
        mh__sim_stats(s, &st);
    mh__sim_free(s);
    int crc = mh_writer_close(w);
    if (rc == 0)
        rc = crc;
    if (rc < 0) {
        mh__cli_error("%s: %s", a->out, mh_strerror(rc));
        return MH_EXIT_FAIL;
    }
    print_result(a, wl, &res, &st);
    return MH_EXIT_OK;
}

static int simulate_main(int argc, char **argv)
{
    struct sim_args a = {.workload = "gpt", .out = "sim.memhist", .steps = 8, .seed = 1,
                         .capacity = 80ull << 30};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    if (strcmp(a.workload, "list") == 0)
        return list_workloads();
    const struct mh_workload *wl = mh__workload_find(a.workload);
    if (!wl)
        return mh__cli_usage_error(&mh__cmd_simulate,
                                   "no workload named '%s' (try --workload list)", a.workload);
    int64_t values[MH_WORKLOAD_MAX_PARAMS];
    char err[256];
    if (mh__workload_parse_params(wl, a.params, values, err, sizeof err))
        return mh__cli_usage_error(&mh__cmd_simulate, "--param: %s", err);
    struct mh_alloc_conf conf;
    if (mh_alloc_conf_parse(a.conf_text, &conf, err, sizeof err))
        return mh__cli_usage_error(&mh__cmd_simulate, "--alloc-conf: %s", err);
    conf.memory_fraction = a.fraction;
    return mh__cli_finish(run_sim(&a, wl, values, &conf));
}

const struct mh_cli_command mh__cmd_simulate = {
    "simulate", "simulate a training run's GPU memory (no GPU needed)", usage, simulate_main};
