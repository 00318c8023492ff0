/* cmd_layers.c - `memhist layers FILE...`: which layers hold memory at the
 * allocated peak (by layer and category), what each layer's saved
 * activations are, what checkpointing it would save, and a ranked
 * checkpointing plan; per step, the largest layers at the step's peak.
 * Several files (one per rank) are reported one after the other, then the
 * rank table and the worst rank by peak reserved (report_ranks.c). The
 * analysis is src/analysis/layers.h. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "printers.h"
#include "analysis.h"
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

const struct mh_cli_command mh__cmd_layers = {
    "layers", "peak by layer and category, activation-checkpointing plan", usage, run_layers};

struct layers_opts {
    int device;
    uint64_t top;
    int json;
};

/* One device of one file, analysed. */
struct dev_view {
    const struct mh_analysis *a;
    int device;
    struct mh_layers *ly;
    size_t *by_live;            /* layer indices, largest live_at_peak first */
    const size_t *order;        /* plan order */
    const uint64_t *peak_after;
    size_t nplan, best;
};

static const struct mh_layers *sort_src;

static int by_live_desc(const void *a, const void *b)
{
    size_t n;
    const struct mh_layer_stats *st = mh__layers_list(sort_src, &n);
    uint64_t x = st[*(const size_t *)a].live_at_peak, y = st[*(const size_t *)b].live_at_peak;
    if (x != y)
        return x < y ? 1 : -1;
    return strcmp(st[*(const size_t *)a].name, st[*(const size_t *)b].name);
}

static int view_open(const struct mh_analysis *a, int device, struct dev_view *v)
{
    memset(v, 0, sizeof *v);
    v->a = a;
    v->device = device;
    int rc = mh__layers_analyze(a, device, NULL, 0, &v->ly);
    if (rc < 0)
        return rc;
    size_t n;
    mh__layers_list(v->ly, &n);
    v->by_live = malloc((n ? n : 1) * sizeof *v->by_live);
    if (!v->by_live)
        return MH_ENOMEM;
    for (size_t i = 0; i < n; i++)
        v->by_live[i] = i;
    sort_src = v->ly;
    qsort(v->by_live, n, sizeof *v->by_live, by_live_desc);
    return mh__layers_plan(v->ly, &v->order, &v->peak_after, &v->nplan, &v->best);
}

static void view_close(struct dev_view *v)
{
    mh__layers_free(v->ly);
    free(v->by_live);
}

static void print_categories(const struct dev_view *v)
{
    const uint64_t *cat = mh__layers_category_at_peak(v->ly);
    char b[32];
    const char *sep = "";
    printf("  by category at the peak: ");
    for (int c = 0; c < MH_CAT_COUNT; c++)
        if (cat[c]) {
            printf("%s%s %s", sep, mh__category_name(c), mh__bytes_text(cat[c], b));
            sep = ", ";
        }
    printf("\n");
}

static void print_table(const struct dev_view *v, uint64_t top)
{
    size_t n;
    const struct mh_layer_stats *st = mh__layers_list(v->ly, &n);
    char b[5][32];
    int width = 28;
    for (size_t i = 0; i < n && i < top; i++)
        width = mh__cli_fit_width(width, st[v->by_live[i]].name);
    printf("\n  %-*s %11s %11s %11s %11s %11s\n", width, "layer", "live@peak", "activations",
           "saved@peak", "recompute", "ckpt saves");
    for (size_t i = 0; i < n && i < top; i++) {
        const struct mh_layer_stats *s = &st[v->by_live[i]];
        printf("%c ", s->compiled ? '*' : ' ');
        mh__cli_print_fitted(s->name, width);
        printf(" %11s %11s %11s %11s %11s\n",
               mh__bytes_text(s->live_at_peak, b[0]),
               mh__bytes_text(s->by_category[MH_CAT_ACTIVATION], b[1]),
               mh__bytes_text(s->saved_at_peak, b[2]),
               s->candidate ? mh__bytes_text(s->transient, b[3]) : "-",
               s->candidate ? mh__bytes_text(s->reduction, b[4]) : "-");
    }
    if (n > top)
        printf("  ... %zu more layers (--top)\n", n - top);
}

/* Activation bytes live at the peak in layers made by compiled code, but
 * for the plan's first `planned` layers. */
static uint64_t compiled_activations(const struct dev_view *v, size_t planned)
{
    size_t n;
    const struct mh_layer_stats *st = mh__layers_list(v->ly, &n);
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < planned && v->order[k] != i)
            k++;
        if (k == planned && st[i].compiled)
            bytes += st[i].by_category[MH_CAT_ACTIVATION];
    }
    return bytes;
}

/* Bytes of category `cat` live at the peak. */
static uint64_t peak_bytes_of(const struct dev_view *v, int cat)
{
    size_t n;
    const struct mh_layer_stats *st = mh__layers_list(v->ly, &n);
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += st[i].by_category[cat];
    return bytes;
}

/* Why there is no plan, in the order no_plan_reason tells them apart. */
enum no_plan {
    NO_PLAN_COMPILED,   /* activations made in code torch.compile generated */
    NO_PLAN_SMALL,      /* the most any prefix saves is under MH__PLAN_MIN_SHARE */
    NO_PLAN_NO_SCOPES,  /* no module scopes: no layer's backward is seen */
    NO_PLAN_UNKNOWN,    /* no scopes and no steps: no memory is told to be activations */
    NO_PLAN_NO_GAIN,    /* saved activations live at the peak, but no layer's recompute lowers it */
    NO_PLAN_NOTHING,    /* no saved activation live at the peak */
};
/* Their names in `layers --json` (plan.none_because). */
static const char *const no_plan_names[] = {"compiled_code", "saving_under_1_percent",
                                            "no_module_scopes", "unknown_categories", "no_gain",
                                            "no_saved_activations"};

/* The reason, and the bytes it is about: the largest saving, the compiled
 * activations, or the activations at the peak. */
static enum no_plan no_plan_reason(const struct dev_view *v, uint64_t *bytes)
{
    uint64_t peak = mh__layers_peak(v->ly, NULL, NULL), lowest = peak;
    for (size_t k = 0; k < v->nplan; k++)
        if (v->peak_after[k] < lowest)
            lowest = v->peak_after[k];
    if ((*bytes = compiled_activations(v, 0)) > 0)
        return NO_PLAN_COMPILED;
    if ((*bytes = peak - lowest) > 0)
        return NO_PLAN_SMALL;
    const uint64_t *kinds = v->a->rp.summary.events_by_kind;
    int scopes = kinds[MH_EV_SCOPE_ENTER] > 0, steps = kinds[MH_EV_STEP_END] > 0;
    if ((*bytes = peak_bytes_of(v, MH_CAT_ACTIVATION)) > 0 && !scopes)
        return NO_PLAN_NO_SCOPES;
    if (!*bytes && !scopes && !steps && (*bytes = peak_bytes_of(v, MH_CAT_UNKNOWN)) > 0)
        return NO_PLAN_UNKNOWN;
    size_t n;
    const struct mh_layer_stats *st = mh__layers_list(v->ly, &n);
    for (size_t i = 0; i < n; i++)
        if (st[i].saved_at_peak)
            return NO_PLAN_NO_GAIN;
    return NO_PLAN_NOTHING;
}

static void print_no_plan(const struct dev_view *v)
{
    char b[32];
    uint64_t bytes, peak = mh__layers_peak(v->ly, NULL, NULL);
    switch (no_plan_reason(v, &bytes)) {
    case NO_PLAN_SMALL:
        printf("\n  plan: none worth its recompute: checkpointing would lower the peak by at most\n"
               "  %s (%.2g%% of it)\n", mh__bytes_text(bytes, b), 100.0 * (double)bytes / (double)peak);
        break;
    case NO_PLAN_NO_SCOPES:
        printf("\n  plan: none from this recording: %s of activations are live at the peak, but it\n"
               "  has no module scopes (a torch snapshot, or recorded with MEMHIST_SCOPES=0), so no\n"
               "  layer's backward pass is seen and what checkpointing a layer saves cannot be\n"
               "  estimated. Record the program with memhist to get a plan.\n",
               mh__bytes_text(bytes, b));
        break;
    case NO_PLAN_UNKNOWN:
        printf("\n  plan: none from this recording: it has no module scopes and no training\n"
               "  steps (a torch snapshot without Optimizer.step annotations), so none of the\n"
               "  %s live at the peak is told to be activations. Record the program with\n"
               "  memhist to get a plan.\n",
               mh__bytes_text(bytes, b));
        break;
    case NO_PLAN_NO_GAIN:
        printf("\n  plan: none: layers saved activations that are live at the peak, but checkpointing\n"
               "  any one of them leaves the estimated peak where it is\n");
        break;
    case NO_PLAN_NOTHING:
        printf("\n  plan: no layer has saved activations live at the peak; checkpointing would "
               "not lower it\n");
        break;
    case NO_PLAN_COMPILED:
        printf("\n  plan: none from this recording: %s of the activations live at the peak were\n"
               "  made in code torch.compile generated, where memhist sees no modules (layers marked\n"
               "  *). Checkpoint inside the compiled model (torch.utils.checkpoint around its\n"
               "  blocks), let the compiler trade memory for recompute\n"
               "  (torch._functorch.config.activation_memory_budget), or record a run without\n"
               "  torch.compile to see them by layer.\n",
               mh__bytes_text(bytes, b));
        break;
    }
}

static void print_plan(const struct dev_view *v)
{
    size_t n;
    const struct mh_layer_stats *st = mh__layers_list(v->ly, &n);
    uint64_t peak = mh__layers_peak(v->ly, NULL, NULL);
    char b[3][32];
    if (v->best == 0) {
        print_no_plan(v);
        return;
    }
    uint64_t after = v->peak_after[v->best - 1];
    double share = mh__layers_recompute_share(v->ly, v->order, v->best);
    if (v->best == 1)
        printf("\n  plan: checkpoint this layer");
    else
        printf("\n  plan: checkpoint these %zu layers", v->best);
    printf(" to save about %s (peak %s -> %s); recompute "
           "~%.0f%% of the forward pass (by allocation volume):\n    ",
           mh__bytes_text(peak - after, b[0]),
           mh__bytes_text(peak, b[1]), mh__bytes_text(after, b[2]), 100.0 * share);
    for (size_t i = 0; i < v->best; i++)
        printf("%s%s", i ? ", " : "", st[v->order[i]].name);
    uint64_t compiled = compiled_activations(v, v->best);
    if (compiled)
        printf("\n  not in the plan: %s of activations made in code torch.compile generated "
               "(layers marked *)", mh__bytes_text(compiled, b[0]));
    printf("\n  estimated peak after checkpointing the first K of the ranking:");
    for (size_t k = 0; k < v->nplan; k++)
        printf("%s K=%zu %s", k % 4 ? "," : "\n   ", k + 1, mh__bytes_text(v->peak_after[k], b[0]));
    printf("\n");
}

static void print_steps(const struct dev_view *v)
{
    size_t n, nl;
    const struct mh_layer_step *sp = mh__layers_steps(v->ly, &n);
    const struct mh_layer_stats *st = mh__layers_list(v->ly, &nl);
    char b[32], s[24];
    if (n)
        printf("\n  per step, largest layers at the step's allocated peak:\n");
    for (size_t i = 0; i < n; i++) {
        printf("  %12s %10s:", mh__step_text(sp[i].step, s), mh__bytes_text(sp[i].bytes, b));
        for (int k = 0; k < 3 && sp[i].top[k] != SIZE_MAX; k++)
            printf("%s %s %s", k ? "," : "", st[sp[i].top[k]].name,
                   mh__bytes_text(sp[i].top_bytes[k], b));
        printf("\n");
    }
}

static void print_text(const struct dev_view *v, const struct layers_opts *o)
{
    uint64_t index;
    int64_t step;
    uint64_t peak = mh__layers_peak(v->ly, &index, &step);
    char b[32], s[24];
    printf("\n%s device %d: peak allocated %s (%s)\n", v->a->rp.path, v->device,
           mh__bytes_text(peak, b), mh__step_text(step, s));
    print_categories(v);
    print_table(v, o->top);
    print_plan(v);
    print_steps(v);
}

static void json_categories(struct mh_json *j, const uint64_t *cat)
{
    mh__json_begin_object(j);
    for (int c = 0; c < MH_CAT_COUNT; c++)
        mh__json_kv_uint(j, mh__category_name(c), cat[c]);
    mh__json_end_object(j);
}

static void json_layer(struct mh_json *j, const struct mh_layer_stats *s)
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

static void json_plan(struct mh_json *j, const struct dev_view *v)
{
    size_t n;
    const struct mh_layer_stats *st = mh__layers_list(v->ly, &n);
    uint64_t peak = mh__layers_peak(v->ly, NULL, NULL), after = peak;
    double share = 0;
    if (v->best) {
        after = v->peak_after[v->best - 1];
        share = mh__layers_recompute_share(v->ly, v->order, v->best);
    }
    mh__json_key(j, "plan");
    mh__json_begin_object(j);
    mh__json_key(j, "layers");
    mh__json_begin_array(j);
    for (size_t i = 0; i < v->best; i++)
        mh__json_string(j, st[v->order[i]].name);
    mh__json_end_array(j);
    mh__json_kv_uint(j, "estimated_peak", after);
    mh__json_kv_uint(j, "estimated_saving", peak - after);
    mh__json_kv_double(j, "recompute_share", share, 4);
    uint64_t bytes;
    mh__json_kv_string(j, "none_because", v->best ? NULL : no_plan_names[no_plan_reason(v, &bytes)]);
    mh__json_key(j, "ranking");
    mh__json_begin_array(j);
    for (size_t k = 0; k < v->nplan; k++) {
        mh__json_begin_object(j);
        mh__json_kv_string(j, "layer", st[v->order[k]].name);
        mh__json_kv_uint(j, "estimated_peak_with_first_k", v->peak_after[k]);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
    mh__json_end_object(j);
}

static void json_steps(struct mh_json *j, const struct dev_view *v)
{
    size_t n, nl;
    const struct mh_layer_step *sp = mh__layers_steps(v->ly, &n);
    const struct mh_layer_stats *st = mh__layers_list(v->ly, &nl);
    mh__json_key(j, "steps");
    mh__json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        mh__json_begin_object(j);
        mh__json_kv_int(j, "step", sp[i].step);
        mh__json_kv_uint(j, "peak_allocated", sp[i].bytes);
        mh__json_key(j, "top_layers");
        mh__json_begin_array(j);
        for (int k = 0; k < 3 && sp[i].top[k] != SIZE_MAX; k++) {
            mh__json_begin_object(j);
            mh__json_kv_string(j, "layer", st[sp[i].top[k]].name);
            mh__json_kv_uint(j, "bytes", sp[i].top_bytes[k]);
            mh__json_end_object(j);
        }
        mh__json_end_array(j);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
}

static void json_device(struct mh_json *j, const struct dev_view *v, uint64_t top)
{
    uint64_t index;
    int64_t step;
    size_t n;
    const struct mh_layer_stats *st = mh__layers_list(v->ly, &n);
    mh__json_begin_object(j);
    mh__json_kv_int(j, "device", v->device);
    mh__json_kv_uint(j, "peak_allocated", mh__layers_peak(v->ly, &index, &step));
    mh__json_kv_uint(j, "peak_event_index", index);
    mh__json_kv_int(j, "peak_step", step);
    mh__json_key(j, "by_category");
    json_categories(j, mh__layers_category_at_peak(v->ly));
    mh__json_key(j, "layers");
    mh__json_begin_array(j);
    for (size_t i = 0; i < n && i < top; i++)
        json_layer(j, &st[v->by_live[i]]);
    mh__json_end_array(j);
    json_plan(j, v);
    json_steps(j, v);
    mh__json_end_object(j);
}

static int parse_opts(int argc, char **argv, struct layers_opts *o, int *first)
{
    *o = (struct layers_opts){-1, 12, 0};
    const struct mh_cli_opt opts[] = {
        {"device", 0, MH_OPT_INT, &o->device, 0, 255, NULL, NULL},
        {"top", 0, MH_OPT_UINT, &o->top, 1, 100000, NULL, NULL},
        {"json", 0, MH_OPT_FLAG, &o->json, 0, 0, NULL, NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int rc = mh__cli_options(&mh__cmd_layers, argc, argv, opts, first);
    if (rc)
        return rc;
    if (*first >= argc)
        return mh__cli_usage_error(&mh__cmd_layers, "missing FILE");
    return 0;
}

/* Analyses and prints one device of a file. */
static int one_device(void *user, const struct mh_analysis *a, int dev, struct mh_json *j)
{
    const struct layers_opts *o = user;
    struct dev_view v;
    int rc = view_open(a, dev, &v);
    if (rc < 0) {
        view_close(&v);
        mh__cli_error("%s: %s", a->rp.path, mh_strerror(rc));
        return rc;
    }
    if (j)
        json_device(j, &v, o->top);
    else
        print_text(&v, o);
    view_close(&v);
    return 0;
}

static int layers_file(void *user, const struct mh_analysis *a, size_t i, size_t n,
                       struct mh_json *j)
{
    const struct layers_opts *o = user;
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
    const struct mh_cli_multi m = {.command = "layers", .json_files = o.json, .each = layers_file, .user = &o};
    return mh__cli_finish(mh__cli_multi_run(argv + first, (size_t)(argc - first), &m));
}
