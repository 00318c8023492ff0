/* cmd_layers.c - `memhist layers FILE...`: which layers hold memory at the
 * allocated peak (by layer and category), what each layer's saved
 * activations are, what checkpointing it would save, and a ranked
 * checkpointing plan; per step, the largest layers at the step's peak.
 * Several files (one per rank) are reported one after the other, then the
 * rank table and the worst rank by peak reserved (report_ranks.c). The
 * answer is src/analysis/layers_answer.h; this file only prints it. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "printers.h"
#include "analysis.h"
#include "layers_answer.h"
#include "json.h"

static const char usage[] =
    "usage: memhist layers [--device N] [--top N] [--json] FILE...\n\n"
    "At the allocated peak: bytes live per layer and per category (parameter,\n"
    "gradient, optimizer_state, activation, temporary, input, unknown); for each\n"
    "layer the activations it saved in the forward pass that are still live, the\n"
    "estimated peak reduction if that layer alone were checkpointed, and a ranked\n"
    "plan (\"checkpoint these K layers to save about X\"). Per step, the largest\n"
    "layers at the step's own peak.\n\n"
    "A layer is the module path in the allocation's user metadata up to its first\n"
    "numeric component (transformer.h.11.mlp.c_fc -> transformer.h.11) or numbered\n"
    "block kept as an attribute (block3.mlp.fc -> block3, beside block1, block2),\n"
    "else up to its first module that holds others beside a sibling\n"
    "(bert.embeddings.word_embeddings -> bert.embeddings); without a module path,\n"
    "the model's child class from the stack's Class.forward frames (GPT.Block),\n"
    "else the stack's most informative frame. The estimate moves each saved\n"
    "activation of a checkpointed layer (not its output, which the next layer\n"
    "keeps) to the start of that layer's backward and adds the recompute transient\n"
    "there; recompute cost is the layers' share of the peak step's forward\n"
    "allocation volume (a proxy for forward FLOPs). A layer marked\n"
    "* made allocations in code torch.compile generated, inside which no module\n"
    "is seen.\n\n"
    "options:\n"
    "  --device N  only device N (default: every device)\n"
    "  --top N     layers listed (default 12)\n"
    "  --json      print one JSON object\n"
    "  -h, --help  show this help\n";

static int run_layers(int argc, char **argv);

const struct mh__cli_command mh__cmd_layers = {
    "layers", "peak by layer and category, activation-checkpointing plan", usage, run_layers};

struct layers_opts {
    int device;
    uint64_t top;
    int json;
};

/* One device of one file: its answer and the file's path. */
struct dev_view {
    const char *path;
    const struct mh__layers_answer *ans;
};

static void print_categories(const struct dev_view *v)
{
    const uint64_t *cat = v->ans->category_at_peak;
    char b[32];
    const char *sep = "";
    printf("  by category at the peak: ");
    for (int c = 0; c < MH__CAT_COUNT; c++)
        if (cat[c]) {
            printf("%s%s %s", sep, mh__category_name(c), mh__bytes_text(cat[c], b));
            sep = ", ";
        }
    printf("\n");
}

static void print_table(const struct dev_view *v, uint64_t top)
{
    const struct mh__layers_answer *ans = v->ans;
    size_t n = ans->nlayers;
    char b[5][32];
    int width = 28;
    for (size_t i = 0; i < n && i < top; i++)
        width = mh__cli_fit_width(width, ans->layers[ans->by_live[i]].name);
    printf("\n  %-*s %11s %11s %11s %11s %11s\n", width, "layer", "live@peak", "activations",
           "saved@peak", "recompute", "ckpt saves");
    for (size_t i = 0; i < n && i < top; i++) {
        const struct mh__layer_stats *s = &ans->layers[ans->by_live[i]];
        printf("%c ", s->compiled ? '*' : ' ');
        mh__cli_print_fitted(s->name, width);
        printf(" %11s %11s %11s %11s %11s\n",
               mh__bytes_text(s->live_at_peak, b[0]),
               mh__bytes_text(s->by_category[MH__CAT_ACTIVATION], b[1]),
               mh__bytes_text(s->saved_at_peak, b[2]),
               s->candidate ? mh__bytes_text(s->transient, b[3]) : "-",
               s->candidate ? mh__bytes_text(s->reduction, b[4]) : "-");
    }
    if (n > top)
        printf("  ... %zu more layers (--top)\n", n - top);
}

static void print_no_plan(const struct dev_view *v)
{
    char b[32];
    uint64_t bytes = v->ans->none_bytes, peak = v->ans->peak;
    switch (v->ans->none_because) {
    case MH__NO_PLAN_SMALL:
        printf("\n  plan: none worth its recompute: checkpointing would lower the peak by at most\n"
               "  %s (%.2g%% of it)\n", mh__bytes_text(bytes, b), 100.0 * (double)bytes / (double)peak);
        break;
    case MH__NO_PLAN_NO_SCOPES:
        printf("\n  plan: none from this recording: %s of activations are live at the peak, but it\n"
               "  has no module scopes (a torch snapshot, or recorded with MEMHIST_SCOPES=0), so no\n"
               "  layer's backward pass is seen and what checkpointing a layer saves cannot be\n"
               "  estimated. Record the program with memhist to get a plan.\n",
               mh__bytes_text(bytes, b));
        break;
    case MH__NO_PLAN_UNKNOWN:
        printf("\n  plan: none from this recording: it has no module scopes and no training\n"
               "  steps (a torch snapshot without Optimizer.step annotations), so none of the\n"
               "  %s live at the peak is told to be activations. Record the program with\n"
               "  memhist to get a plan.\n",
               mh__bytes_text(bytes, b));
        break;
    case MH__NO_PLAN_NO_GAIN:
        printf("\n  plan: none: layers saved activations that are live at the peak, but checkpointing\n"
               "  any one of them leaves the estimated peak where it is\n");
        break;
    case MH__NO_PLAN_NOTHING:
        printf("\n  plan: no layer has saved activations live at the peak; checkpointing would "
               "not lower it\n");
        break;
    case MH__NO_PLAN_COMPILED:
        printf("\n  plan: none from this recording: %s of the activations live at the peak were\n"
               "  made in code torch.compile generated, where memhist sees no modules (layers marked\n"
               "  *). Checkpoint inside the compiled model (torch.utils.checkpoint around its\n"
               "  blocks), let the compiler trade memory for recompute\n"
               "  (torch._functorch.config.activation_memory_budget), or record a run without\n"
               "  torch.compile to see them by layer.\n",
               mh__bytes_text(bytes, b));
        break;
    default:
        break;
    }
}

static void print_plan(const struct dev_view *v)
{
    const struct mh__layers_answer *ans = v->ans;
    char b[3][32];
    if (ans->best == 0) {
        print_no_plan(v);
        return;
    }
    if (ans->best == 1)
        printf("\n  plan: checkpoint this layer");
    else
        printf("\n  plan: checkpoint these %zu layers", ans->best);
    printf(" to save about %s (peak %s -> %s); recompute "
           "~%.0f%% of the forward pass (by allocation volume):\n    ",
           mh__bytes_text(ans->peak - ans->plan_peak, b[0]),
           mh__bytes_text(ans->peak, b[1]), mh__bytes_text(ans->plan_peak, b[2]),
           100.0 * ans->recompute_share);
    for (size_t i = 0; i < ans->best; i++)
        printf("%s%s", i ? ", " : "", ans->layers[ans->ranking[i]].name);
    if (ans->compiled_outside_plan)
        printf("\n  not in the plan: %s of activations made in code torch.compile generated "
               "(layers marked *)", mh__bytes_text(ans->compiled_outside_plan, b[0]));
    printf("\n  estimated peak after checkpointing the first K of the ranking:");
    for (size_t k = 0; k < ans->nranking; k++)
        printf("%s K=%zu %s", k % 4 ? "," : "\n   ", k + 1, mh__bytes_text(ans->peak_after[k], b[0]));
    printf("\n");
}

static void print_steps(const struct dev_view *v)
{
    const struct mh__layers_answer *ans = v->ans;
    char b[32], s[24];
    if (ans->nsteps)
        printf("\n  per step, largest layers at the step's allocated peak:\n");
    for (size_t i = 0; i < ans->nsteps; i++) {
        const struct mh__layer_step *sp = &ans->steps[i];
        printf("  %12s %10s:", mh__step_text(sp->step, s), mh__bytes_text(sp->bytes, b));
        for (int k = 0; k < 3 && sp->top[k] != SIZE_MAX; k++)
            printf("%s %s %s", k ? "," : "", ans->layers[sp->top[k]].name,
                   mh__bytes_text(sp->top_bytes[k], b));
        printf("\n");
    }
}

static void print_text(const struct dev_view *v, const struct layers_opts *o)
{
    char b[32], s[24];
    printf("\n%s device %d: peak allocated %s (%s)\n", v->path, v->ans->device,
           mh__bytes_text(v->ans->peak, b), mh__step_text(v->ans->peak_step, s));
    print_categories(v);
    print_table(v, o->top);
    print_plan(v);
    print_steps(v);
}

static void json_categories(struct mh__json *j, const uint64_t *cat)
{
    mh__json_begin_object(j);
    for (int c = 0; c < MH__CAT_COUNT; c++)
        mh__json_kv_uint(j, mh__category_name(c), cat[c]);
    mh__json_end_object(j);
}

static void json_layer(struct mh__json *j, const struct mh__layer_stats *s)
{
    mh__json_begin_object(j);
    mh__json_kv_string(j, "layer", s->name);
    mh__json_kv_uint(j, "live_at_peak", s->live_at_peak);
    mh__json_key(j, "by_category");
    json_categories(j, s->by_category);
    mh__json_kv_uint(j, "saved_activations_at_peak", s->saved_at_peak);
    mh__json_kv_uint(j, "saved_activations", s->saved_total);
    mh__json_kv_uint(j, "recompute_transient", s->transient);
    mh__json_kv_uint(j, "forward_volume", s->forward_volume);
    mh__json_kv_bool(j, "checkpoint_candidate", s->candidate);
    mh__json_kv_uint(j, "checkpoint_reduction", s->reduction);
    mh__json_kv_bool(j, "compiled", s->compiled);
    mh__json_end_object(j);
}

static void json_plan(struct mh__json *j, const struct mh__layers_answer *ans)
{
    mh__json_key(j, "plan");
    mh__json_begin_object(j);
    mh__json_key(j, "layers");
    mh__json_begin_array(j);
    for (size_t i = 0; i < ans->best; i++)
        mh__json_string(j, ans->layers[ans->ranking[i]].name);
    mh__json_end_array(j);
    mh__json_kv_uint(j, "estimated_peak", ans->plan_peak);
    mh__json_kv_uint(j, "estimated_saving", ans->peak - ans->plan_peak);
    mh__json_kv_double(j, "recompute_share", ans->recompute_share, 4);
    mh__json_kv_string(j, "none_because", mh__no_plan_name(ans->none_because));
    mh__json_key(j, "ranking");
    mh__json_begin_array(j);
    for (size_t k = 0; k < ans->nranking; k++) {
        mh__json_begin_object(j);
        mh__json_kv_string(j, "layer", ans->layers[ans->ranking[k]].name);
        mh__json_kv_uint(j, "estimated_peak_with_first_k", ans->peak_after[k]);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
    mh__json_end_object(j);
}

static void json_steps(struct mh__json *j, const struct mh__layers_answer *ans)
{
    mh__json_key(j, "steps");
    mh__json_begin_array(j);
    for (size_t i = 0; i < ans->nsteps; i++) {
        const struct mh__layer_step *sp = &ans->steps[i];
        mh__json_begin_object(j);
        mh__json_kv_int(j, "step", sp->step);
        mh__json_kv_uint(j, "peak_allocated", sp->bytes);
        mh__json_key(j, "top_layers");
        mh__json_begin_array(j);
        for (int k = 0; k < 3 && sp->top[k] != SIZE_MAX; k++) {
            mh__json_begin_object(j);
            mh__json_kv_string(j, "layer", ans->layers[sp->top[k]].name);
            mh__json_kv_uint(j, "bytes", sp->top_bytes[k]);
            mh__json_end_object(j);
        }
        mh__json_end_array(j);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
}

static void json_device(struct mh__json *j, const struct mh__layers_answer *ans, uint64_t top)
{
    mh__json_begin_object(j);
    mh__json_kv_int(j, "device", ans->device);
    mh__json_kv_uint(j, "peak_allocated", ans->peak);
    mh__json_kv_uint(j, "peak_event_index", ans->peak_index);
    mh__json_kv_int(j, "peak_step", ans->peak_step);
    mh__json_key(j, "by_category");
    json_categories(j, ans->category_at_peak);
    mh__json_key(j, "layers");
    mh__json_begin_array(j);
    for (size_t i = 0; i < ans->nlayers && i < top; i++)
        json_layer(j, &ans->layers[ans->by_live[i]]);
    mh__json_end_array(j);
    json_plan(j, ans);
    json_steps(j, ans);
    mh__json_end_object(j);
}

static int parse_opts(int argc, char **argv, struct layers_opts *o, int *first)
{
    *o = (struct layers_opts){-1, 12, 0};
    const struct mh__cli_opt opts[] = {
        {"device", 0, MH__OPT_INT, &o->device, 0, 255, NULL, NULL},
        {"top", 0, MH__OPT_UINT, &o->top, 1, 100000, NULL, NULL},
        {"json", 0, MH__OPT_FLAG, &o->json, 0, 0, NULL, NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int rc = mh__cli_options(&mh__cmd_layers, argc, argv, opts, first);
    if (rc)
        return rc;
    if (*first >= argc)
        return mh__cli_usage_error(&mh__cmd_layers, "missing FILE");
    return 0;
}

/* Analyses and prints one device of a file. */
static int one_device(void *user, const struct mh__analysis *a, int dev, struct mh__json *j)
{
    const struct layers_opts *o = user;
    struct mh__layers_answer ans;
    int rc = mh__layers_answer(a, dev, &ans);
    if (rc < 0) {
        mh__cli_error("%s: %s", a->rp.path, mh_strerror(rc));
        return rc;
    }
    const struct dev_view v = {a->rp.path, &ans};
    if (j)
        json_device(j, &ans, o->top);
    else
        print_text(&v, o);
    mh__layers_answer_free(&ans);
    return 0;
}

static int layers_file(void *user, const struct mh__analysis *a, void *prepared, size_t i,
                       size_t n, struct mh__json *j)
{
    const struct layers_opts *o = user;
    (void)prepared;
    (void)i;
    (void)n;
    return mh__cli_each_device(a, o->device, j, one_device, user);
}

static int run_layers(int argc, char **argv)
{
    struct layers_opts o;
    int first, rc = parse_opts(argc, argv, &o, &first);
    if (rc)
        return rc;
    const struct mh__cli_multi m = {.command = "layers", .json_files = o.json, .each = layers_file, .user = &o};
    return mh__cli_finish(mh__cli_multi_run(argv + first, (size_t)(argc - first), &m));
}
