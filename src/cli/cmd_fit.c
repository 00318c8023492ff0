/* cmd_fit.c - `memhist fit [--gpu P,... | --device-memory S,...] [--vary
 * NAME=LO..HI] [--steps N] [--jobs J] [--headroom S|P%] [--json] --
 * COMMAND`: for each card, the largest value of {NAME} in COMMAND with
 * which the program fits, and the smallest with which it does not, from
 * short runs on the virtual device (`memhist simulate --steps N`). This
 * file reads and checks the options, makes the cards, and runs the search
 * (fit_search.c), the levers (fit_levers.c), the printers (fit_print.c,
 * fit_json.c) and the plot (fit_plot.c) in turn; fit.h says how the pieces
 * fit together. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fit.h"
#include "simulate.h"

static const char usage[] =
    "usage: memhist fit [--gpu PRESET,... | --device-memory SIZE,...] [--vary NAME=LO..HI]\n"
    "                   [--steps N] [--jobs J] [--headroom SIZE|P%] [-o DIR] [--json]\n"
    "                   -- COMMAND [ARGS...]\n\n"
    "Finds, for each card, the largest value of NAME with which a PyTorch program\n"
    "fits and the smallest with which it does not, by running it unchanged on the\n"
    "virtual device (as `memhist simulate --steps N`) with {NAME} in COMMAND replaced\n"
    "by the value: in an argument (--batch {batch}) or in an environment assignment\n"
    "before the program (BATCH={batch} python train.py). A value fits a card when no\n"
    "step runs out of memory on a device of the card's memory less the headroom.\n"
    "Each run stops by itself after N complete training steps. Peak memory is close\n"
    "to affine in batch size or sequence length: the boundary is predicted from the\n"
    "runs so far and the prediction tested (V and V+1), with bisection when it\n"
    "misses. Cards of one preset share runs where that is exact: a run that the\n"
    "device never refused memory (no OOM, no allocator retry) is the same run on\n"
    "every card of the preset holding its peak, and a program that had more bytes\n"
    "requested at once than a card can hold cannot fit it. Different presets run\n"
    "apart (torch's workspaces and kernels depend on the GPU model). Prints per\n"
    "card the value that fits with its peaks and memory to spare, the first value\n"
    "that does not with what it ran out on and the levers (allocator settings\n"
    "checked by replay, the checkpointing plan, an estimate), and every run with its\n"
    "recording in DIR (for memhist oom, layers, plot); writes DIR/fit.png.\n\n"
    "options:\n"
    "  --gpu PRESET,...       the cards, as presets of `memhist simulate --gpu list`\n"
    "                         (default H100); with --device-memory, one preset for\n"
    "                         every size, or one per size\n"
    "  --device-memory SIZE,...  the cards' memory (default: each preset's)\n"
    "  --vary NAME=LO..HI     the value to search and its range, integers (default:\n"
    "                         the first {NAME} of COMMAND, 1..1024)\n"
    "  --steps N              training steps per run (default 4: the per-step peak had\n"
    "                         settled by the third step in every fixed-shape program\n"
    "                         measured, by the fourth with a sequence length that\n"
    "                         cycles over three steps; tests/bench/bench_fit_steps.py)\n"
    "  --headroom SIZE|P%     memory to keep free on each card, a size or a percentage\n"
    "                         of its usable memory (default 0)\n"
    "  --jobs J               runs at once (default: by cores and host memory, measured\n"
    "                         on the first run)\n"
    "  --host-memory SIZE     host memory each run may hold (its processes' resident\n"
    "                         memory; default: what is available divided by --jobs)\n"
    "  --context-memory SIZE  memory the CUDA context takes (default 512MiB)\n"
    "  --alloc-conf STR       PYTORCH_CUDA_ALLOC_CONF for every run\n"
    "  --max-runs N           stop after N runs (default 64)\n"
    "  --timeout SECONDS      stop a run after this long (default 3600)\n"
    "  --search MODE          predict (default) or bisect: plain bisection on each\n"
    "                         card's own device, nothing shared (to compare)\n"
    "  -o, --dir DIR          where the recordings and logs go (default memhist-fit)\n"
    "  --plot FILE            the PNG (default DIR/fit.png)\n"
    "  --json                 print one JSON object (docs/schema/fit.schema.json)\n"
    "  -h, --help             show this help\n\n"
    "Exit status: 0 when every card is answered; 2 for bad options and when the\n"
    "program fails for a reason other than memory, or ends before a training step\n"
    "completes; 1 when a run could not be made or held too much host memory.\n\n"
    "example: memhist fit --gpu RTX4090,A100-40GB,H100 --vary batch=1..256 --\n"
    "           python train_gpt.py --layers 24 --dim 1024 --batch {batch}\n";

extern const struct mh__cli_command mh__cmd_fit;

struct fit_args {
    const char *gpus, *sizes, *vary, *headroom, *context, *search, *steps_text;
    int cmd_index;
};

/* --vary NAME=LO..HI, or the command's first {NAME} over 1..1024. */
static int take_vary(const struct fit_args *a, struct mh__fit_opts *o, char *name, size_t len)
{
    const struct mh__cli_command *cmd = &mh__cmd_fit;
    o->lo = 1;
    o->hi = 1024;
    if (!a->vary) {
        if (mh__fit_command_first_name(o->cmd.argv, name, len) < 0)
            return mh__cli_usage_error(cmd, "no {NAME} in the command: put {NAME} where the value "
                                            "goes (e.g. --batch {batch}) and give --vary "
                                            "batch=LO..HI");
        o->cmd.name = name;
        return 0;
    }
    const char *eq = strchr(a->vary, '=');
    size_t nl = eq ? (size_t)(eq - a->vary) : strlen(a->vary);
    if (nl == 0 || nl >= len)
        return mh__cli_usage_error(cmd,
                                   "invalid value '%s' for --vary (NAME=LO..HI, e.g. "
                                   "batch=1..256)",
                                   a->vary);
    memcpy(name, a->vary, nl);
    name[nl] = '\0';
    o->cmd.name = name;
    if (eq && mh__fit_parse_range(eq + 1, &o->lo, &o->hi) < 0)
        return mh__cli_usage_error(cmd,
                                   "invalid range '%s' for --vary: LO..HI with whole numbers "
                                   "from 0, e.g. batch=1..256",
                                   eq + 1);
    if (o->lo > o->hi)
        return mh__cli_usage_error(
            cmd, "--vary %s: the range is reversed (%" PRId64 " > %" PRId64 "): nothing to try",
            a->vary, o->lo, o->hi);
    if (!mh__fit_command_uses(&o->cmd))
        return mh__cli_usage_error(cmd,
                                   "the command has no {%s}: put {%s} where the value goes, "
                                   "e.g. --batch {%s}",
                                   name, name, name);
    return 0;
}

/* "24GiB", "1536MiB" or bytes: a card's name beside its preset. */
static void size_label(uint64_t v, char *buf, size_t len)
{
    if (v % (1ull << 30) == 0)
        snprintf(buf, len, "%" PRIu64 "GiB", v >> 30);
    else if (v % (1ull << 20) == 0)
        snprintf(buf, len, "%" PRIu64 "MiB", v >> 20);
    else
        snprintf(buf, len, "%" PRIu64 "B", v);
}

static int split_list(const char *text, char items[MH__FIT_MAX_CARDS][64], int *n)
{
    *n = 0;
    for (const char *p = text; p && *p;) {
        size_t k = strcspn(p, ",");
        if (k == 0 || k >= 64 || *n == MH__FIT_MAX_CARDS)
            return -1;
        memcpy(items[*n], p, k);
        items[(*n)++][k] = '\0';
        p += k + (p[k] == ',');
    }
    return *n ? 0 : -1;
}

static int make_card(const struct fit_args *a, struct mh__fit_opts *o, const char *gpu,
                     const char *size)
{
    const struct mh__cli_command *cmd = &mh__cmd_fit;
    struct mh__fit_card *c = &o->cards[o->ncards];
    char sz[32];
    c->gpu = mh__vdev_preset_find(gpu);
    if (!c->gpu)
        return mh__cli_usage_error(cmd,
                                   "--gpu: no preset named '%s' (try memhist simulate --gpu "
                                   "list)",
                                   gpu);
    c->capacity = c->gpu->memory;
    if (size && (mh__cli_parse_size(size, &c->capacity) || c->capacity == 0))
        return mh__cli_usage_error(cmd,
                                   "invalid value '%s' for --device-memory (a size such as "
                                   "24GiB)",
                                   size);
    if (c->capacity <= o->context + (4u << 20))
        return mh__cli_usage_error(cmd,
                                   "%s: the card's memory must be above the context memory "
                                   "and 4MiB",
                                   size ? size : gpu);
    if (mh__fit_parse_headroom(a->headroom, c->capacity - o->context, &c->headroom) < 0)
        return mh__cli_usage_error(cmd,
                                   "invalid value '%s' for --headroom (a size such as 1GiB, "
                                   "or a percentage such as 10%%)",
                                   a->headroom);
    if (c->headroom + (2u << 20) >= c->capacity - o->context)
        return mh__cli_usage_error(cmd, "--headroom %s leaves nothing of %s's memory", a->headroom,
                                   gpu);
    c->limit = c->capacity - o->context - c->headroom;
    c->trial_capacity = c->limit + o->context;
    size_label(c->capacity, sz, sizeof sz);
    snprintf(c->label, sizeof c->label, "%s%s%s", c->gpu->key, size ? "-" : "", size ? sz : "");
    c->kind = o->ncards;
    for (int i = 0; i < o->ncards; i++) {
        if (o->cards[i].gpu == c->gpu && o->cards[i].capacity == c->capacity)
            return mh__cli_usage_error(cmd, "the card %s is given twice", c->label);
        if (o->cards[i].gpu == c->gpu && c->kind == o->ncards)
            c->kind = o->cards[i].kind;
    }
    o->ncards++;
    return 0;
}

static int make_cards(const struct fit_args *a, struct mh__fit_opts *o)
{
    const struct mh__cli_command *cmd = &mh__cmd_fit;
    char gpus[MH__FIT_MAX_CARDS][64], sizes[MH__FIT_MAX_CARDS][64];
    int ng = 1, ns = 0;
    strcpy(gpus[0], "H100");
    if (a->gpus && split_list(a->gpus, gpus, &ng) < 0)
        return mh__cli_usage_error(cmd,
                                   "invalid value '%s' for --gpu (PRESET,PRESET,..., at most "
                                   "%d)",
                                   a->gpus, MH__FIT_MAX_CARDS);
    if (a->sizes && split_list(a->sizes, sizes, &ns) < 0)
        return mh__cli_usage_error(cmd,
                                   "invalid value '%s' for --device-memory (SIZE,SIZE,..., at "
                                   "most %d)",
                                   a->sizes, MH__FIT_MAX_CARDS);
    if (ns && ng != 1 && ng != ns)
        return mh__cli_usage_error(cmd,
                                   "--gpu names %d presets and --device-memory %d sizes: give "
                                   "one preset, or one per size",
                                   ng, ns);
    int n = ns ? ns : ng;
    for (int i = 0; i < n; i++) {
        int rc = make_card(a, o, gpus[ng == 1 ? 0 : i], ns ? sizes[i] : NULL);
        if (rc)
            return rc;
    }
    return 0;
}

static int parse_args(int argc, char **argv, struct fit_args *a, struct mh__fit_opts *o)
{
    const struct mh__cli_command *cmd = &mh__cmd_fit;
    const struct mh__cli_opt opts[] = {
        {"gpu", 0, MH__OPT_TEXT, &a->gpus, 0, 0, NULL, NULL},
        {"device-memory", 0, MH__OPT_TEXT, &a->sizes, 0, 0, NULL, NULL},
        {"vary", 0, MH__OPT_TEXT, &a->vary, 0, 0, NULL, NULL},
        {"steps", 0, MH__OPT_UINT, &o->steps, 1, 1000000, "1 to 1000000", NULL},
        {"jobs", 0, MH__OPT_UINT, &o->jobs, 1, 256, "1 to 256", NULL},
        {"host-memory", 0, MH__OPT_SIZE, &o->host_memory, 0, 0, "a size such as 8GiB", NULL},
        {"headroom", 0, MH__OPT_TEXT, &a->headroom, 0, 0, NULL, NULL},
        {"context-memory", 0, MH__OPT_TEXT, &a->context, 0, 0, NULL, NULL},
        {"alloc-conf", 0, MH__OPT_TEXT, &o->alloc_conf, 0, 0, NULL, NULL},
        {"max-runs", 0, MH__OPT_UINT, &o->max_trials, 1, MH__FIT_MAX_TRIALS, "1 to 200", NULL},
        {"timeout", 0, MH__OPT_UINT, &o->timeout_s, 1, 604800, "1 to 604800 seconds", NULL},
        {"search", 0, MH__OPT_TEXT, &a->search, 0, 0, NULL, NULL},
        {"dir", 'o', MH__OPT_TEXT, &o->dir, 0, 0, NULL, NULL},
        {"plot", 0, MH__OPT_TEXT, &o->plot, 0, 0, NULL, NULL},
        {"json", 0, MH__OPT_FLAG, &o->json, 0, 0, NULL, NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int first, rc = mh__cli_options_in_order(cmd, argc, argv, opts, &first);
    if (rc)
        return rc;
    if (first >= argc)
        return mh__cli_usage_error(cmd, "no command to run (put it after --)");
    a->cmd_index = first;
    if (a->context && mh__cli_parse_size(a->context, &o->context))
        return mh__cli_usage_error(cmd,
                                   "invalid value '%s' for --context-memory (a size such as "
                                   "512MiB)",
                                   a->context);
    if (a->search && strcmp(a->search, "predict") && strcmp(a->search, "bisect"))
        return mh__cli_usage_error(cmd, "--search must be predict or bisect, not '%s'", a->search);
    o->bisect = a->search && strcmp(a->search, "bisect") == 0;
    char err[256];
    struct mh_alloc_conf conf;
    if (o->alloc_conf && mh_alloc_conf_parse(o->alloc_conf, &conf, err, sizeof err))
        return mh__cli_usage_error(cmd, "--alloc-conf: %s", err);
    return 0;
}

static int setup_command(struct mh__fit_opts *o, char **argv, char *name, size_t len,
                         const struct fit_args *a)
{
    o->cmd.argv = argv;
    o->cmd.nenv = mh__fit_command_env_count(argv);
    if (!argv[o->cmd.nenv])
        return mh__cli_usage_error(&mh__cmd_fit, "no program after the environment assignments");
    if (!mh__cli_command_exists(argv[o->cmd.nenv]))
        return mh__cli_usage_error(&mh__cmd_fit, "cannot run '%s': command not found",
                                   argv[o->cmd.nenv]);
    return take_vary(a, o, name, len);
}

/* DIR exists as a directory (made if absent); the plot's default path. */
static int prepare_dir(struct mh__fit_opts *o, char *plot, size_t len)
{
    struct stat st;
    if (mkdir(o->dir, 0755) != 0 && errno != EEXIST) {
        mh__cli_error("fit: cannot make %s: %s", o->dir, strerror(errno));
        return -1;
    }
    if (stat(o->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        mh__cli_error("fit: %s is not a directory: the runs' recordings go there (-o DIR)", o->dir);
        return -1;
    }
    if (!o->plot) {
        snprintf(plot, len, "%s/fit.png", o->dir);
        o->plot = plot;
    }
    ssize_t k = readlink("/proc/self/exe", o->self, sizeof o->self - 1);
    if (k <= 0) {
        mh__cli_error("fit: cannot locate the memhist binary (/proc/self/exe)");
        return -1;
    }
    o->self[k] = '\0';
    return 0;
}

/* The run that stopped the search, said plainly; returns the exit code. */
static int report_failure(const struct mh__fit *f)
{
    const struct mh__fit_trial *t = &f->trials[f->failed_trial];
    char v[64];
    const char *card = f->o->cards[t->card].label;
    mh__fit_value_text(f->o, t->value, v, sizeof v);
    if (t->outcome == MH__FIT_HOST_LIMIT || t->outcome == MH__FIT_TIMEOUT) {
        char b[32];
        if (t->outcome == MH__FIT_HOST_LIMIT)
            mh__cli_error("fit: the run at %s on %s held more than %s of host memory and was "
                          "stopped: give fewer --jobs or a larger --host-memory",
                          v, card, mh__bytes_text(f->host_limit, b));
        else
            mh__cli_error("fit: the run at %s on %s took longer than %" PRIu64 " s and was "
                          "stopped (--timeout); its output is in %s",
                          v, card, f->o->timeout_s, t->log);
        return MH__EXIT_FAIL;
    }
    if (t->outcome == MH__FIT_NO_STEP)
        mh__cli_error("fit: at %s on %s the program ended (exit status 0) before it completed a "
                      "training step (an optimizer step): nothing to measure there; choose a range "
                      "in which it trains. The last lines of its output (%s):",
                      v, card, t->log);
    else
        mh__cli_error("fit: the program failed at %s on %s (exit status %d) for a reason other "
                      "than running out of memory, so the search stopped. The last lines of its "
                      "output (%s):",
                      v, card, t->exit_status, t->log);
    mh__fit_print_tail(t, MH__FIT_TAIL_LINES);
    return MH__EXIT_USAGE;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static int run_fit(struct mh__fit *f)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mh__fit_trial_catch_signals();
    int rc = mh__fit_search(f);
    f->wall_seconds = seconds_since(&t0);
    if (rc == -2) {
        mh__cli_error("fit: interrupted; the runs so far are in %s", f->o->dir);
        return 130;
    }
    if (rc < 0)
        return MH__EXIT_FAIL;
    if (f->failed_trial >= 0)
        return report_failure(f);
    for (int c = 0; c < f->o->ncards; c++)
        mh__fit_levers(f, c);
    if (f->o->json)
        mh__fit_print_json(f);
    else
        mh__fit_print_text(f);
    if (mh__fit_write_plot(f) < 0)
        return MH__EXIT_FAIL;
    for (int c = 0; c < f->o->ncards; c++)
        if (f->answers[c].fail_trial >= 0) {
            mh__cli_status("next: memhist oom %s", f->trials[f->answers[c].fail_trial].path);
            break;
        }
    return MH__EXIT_OK;
}

static int fit_main(int argc, char **argv)
{
    struct fit_args a = {0};
    struct mh__fit_opts *o = calloc(1, sizeof *o);
    struct mh__fit *f = calloc(1, sizeof *f);
    char name[64], plot[PATH_MAX + 16];
    int rc = MH__EXIT_FAIL;
    if (!o || !f) {
        mh__cli_error("fit: out of memory");
        goto out;
    }
    o->steps = 4;
    o->context = 512ull << 20;
    o->max_trials = 64;
    o->timeout_s = 3600;
    o->dir = "memhist-fit";
    if ((rc = parse_args(argc, argv, &a, o)) != 0)
        goto out;
    if ((rc = setup_command(o, argv + a.cmd_index, name, sizeof name, &a)) != 0)
        goto out;
    if ((rc = make_cards(&a, o)) != 0)
        goto out;
    rc = MH__EXIT_FAIL;
    if (prepare_dir(o, plot, sizeof plot) < 0)
        goto out;
    f->o = o;
    rc = mh__cli_finish(run_fit(f));
out:
    free(f);
    free(o);
    return rc;
}

const struct mh__cli_command mh__cmd_fit = {
    "fit", "the largest batch (or any setting) that fits each GPU, from short runs (no GPU)", usage,
    fit_main};
