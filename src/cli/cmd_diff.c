/* cmd_diff.c - `memhist diff A B`: two runs side by side (recorded,
 * simulated or what-if files alike): peaks, per-step peaks and their deltas,
 * and the layers and stacks whose bytes at the allocated peak grew or shrank
 * most. Layers come from layers.h, stacks are matched by their
 * label ("file:line func" of the most informative frame) since stack ids
 * differ between files. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "device_report.h"
#include "analysis.h"
#include "stacks.h"
#include "json.h"
#include "grow.h"

static const char usage[] =
    "usage: memhist diff [--device N] [--top N] [--json] A B\n\n"
    "Compares two recordings (a recorded run, a simulated one, a what-if): peak\n"
    "allocated and reserved, per-step peaks with their deltas (steps matched by\n"
    "number), and the layers and allocation stacks whose bytes live at the\n"
    "allocated peak grew or shrank most (B minus A). Stacks are matched by their\n"
    "most informative frame, layers by name (see `memhist layers`).\n\n"
    "options:\n"
    "  --device N  device to compare (default: the first device of each file)\n"
    "  --top N     layers and stacks listed (default 8)\n"
    "  --json      print one JSON object\n"
    "  -h, --help  show this help\n";

static int run_diff(int argc, char **argv);

const struct mh_cli_command mh__cmd_diff = {
    "diff", "compare two runs: peaks, steps, layers and stacks that changed", usage, run_diff};

/* Bytes at the peak keyed by a name, for both runs. */
struct named_delta {
    char name[256];
    uint64_t a, b;
};

struct delta_list {
    struct named_delta *items;
    size_t n, cap;
};

static int delta_add(struct delta_list *l, const char *name, uint64_t bytes, int which)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].name, name) == 0) {
            *(which ? &l->items[i].b : &l->items[i].a) += bytes;
            return 0;
        }
    if (MH__GROW(l->items, l->n, l->cap, 64) < 0)
        return MH_ENOMEM;
    struct named_delta *d = &l->items[l->n++];
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    *(which ? &d->b : &d->a) = bytes;
    return 0;
}

static int by_abs_delta(const void *x, const void *y)
{
    const struct named_delta *p = x, *q = y;
    int64_t dp = (int64_t)p->b - (int64_t)p->a, dq = (int64_t)q->b - (int64_t)q->a;
    uint64_t ap = dp < 0 ? (uint64_t)-dp : (uint64_t)dp, aq = dq < 0 ? (uint64_t)-dq : (uint64_t)dq;
    if (ap != aq)
        return ap < aq ? 1 : -1;
    return strcmp(p->name, q->name);
}

struct run_view {
    struct mh_analysis an;
    int device;
    struct mh_peak pa, pr;
};

static int layers_side(struct run_view *v, int which, struct delta_list *l)
{
    struct mh_layers *ly;
    size_t n;
    int rc = mh__layers_analyze(&v->an, v->device, NULL, 0, &ly);
    if (rc < 0)
        return rc;
    const struct mh_layer_stats *st = mh__layers_list(ly, &n);
    for (size_t i = 0; i < n && rc == 0; i++)
        if (st[i].live_at_peak)
            rc = delta_add(l, st[i].name, st[i].live_at_peak, which);
    mh__layers_free(ly);
    return rc;
}

static int stacks_side(struct run_view *v, int which, struct delta_list *l)
{
    struct mh_stack_group *g = NULL;
    size_t n = 0;
    uint64_t tb, tc;
    if (v->pa.value == 0)
        return 0;
    int rc = mh__peak_groups_get(v->an.peaks, v->an.rp.model, v->device, 0, &g, &n, &tb, &tc);
    char label[512];
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = delta_add(l, mh__stack_label(v->an.rp.reader, g[i].stack, label, sizeof label),
                       g[i].bytes, which);
    free(g);
    return rc;
}

static const char *signed_bytes(int64_t v, char buf[32])
{
    char b[32];
    snprintf(buf, 32, "%s%s", v < 0 ? "-" : "+",
             mh__bytes_text(v < 0 ? (uint64_t)-v : (uint64_t)v, b));
    return buf;
}

static void text_row(const char *name, int width, uint64_t a, uint64_t b)
{
    char x[3][32];
    printf("  ");
    mh__cli_print_fitted(name, width);
    printf(" %12s %12s %13s\n", mh__bytes_text(a, x[0]), mh__bytes_text(b, x[1]),
           signed_bytes((int64_t)b - (int64_t)a, x[2]));
}

/* The name column: the longest layer or stack listed. */
static int name_width(const struct delta_list *layers, const struct delta_list *stacks, uint64_t top)
{
    int width = 34;
    for (size_t i = 0; i < layers->n && i < top; i++)
        width = mh__cli_fit_width(width, layers->items[i].name);
    for (size_t i = 0; i < stacks->n && i < top; i++)
        width = mh__cli_fit_width(width, stacks->items[i].name);
    return width;
}

static int step_of(const struct run_view *v, int64_t step, struct mh_step_stats *out)
{
    const struct mh_model *m = v->an.rp.model;
    for (size_t i = 0; i < mh_model_step_count(m, v->device); i++)
        if (mh_model_step(m, v->device, i, out) == 0 && out->step == step)
            return 1;
    return 0;
}

static void print_text(struct run_view *v, const struct delta_list *layers,
                       const struct delta_list *stacks, uint64_t top)
{
    printf("A: %s (device %d)\nB: %s (device %d)\n\n", v[0].an.rp.path, v[0].device,
           v[1].an.rp.path, v[1].device);
    int w = name_width(layers, stacks, top);
    printf("  %-*s %12s %12s %13s\n", w, "", "A", "B", "B - A");
    text_row("peak allocated", w, v[0].pa.value, v[1].pa.value);
    text_row("peak reserved", w, v[0].pr.value, v[1].pr.value);
    const struct mh_model *m = v[0].an.rp.model;
    size_t n = mh_model_step_count(m, v[0].device);
    if (n)
        printf("\n  per step (peak allocated / peak reserved):\n");
    for (size_t i = 0; i < n; i++) {
        struct mh_step_stats a, b;
        char name[64];
        if (mh_model_step(m, v[0].device, i, &a) != 0 || !step_of(&v[1], a.step, &b))
            continue;
        snprintf(name, sizeof name, "step %lld allocated", (long long)a.step);
        text_row(name, w, a.peak_allocated, b.peak_allocated);
        snprintf(name, sizeof name, "step %lld reserved", (long long)a.step);
        text_row(name, w, a.peak_reserved, b.peak_reserved);
    }
    printf("\n  layers at the allocated peak, largest change first:\n");
    for (size_t i = 0; i < layers->n && i < top; i++)
        text_row(layers->items[i].name, w, layers->items[i].a, layers->items[i].b);
    printf("\n  stacks at the allocated peak, largest change first:\n");
    for (size_t i = 0; i < stacks->n && i < top; i++)
        text_row(stacks->items[i].name, w, stacks->items[i].a, stacks->items[i].b);
}

static void json_list(struct mh_json *j, const char *key, const char *field,
                      const struct delta_list *l, uint64_t top)
{
    mh__json_key(j, key);
    mh__json_begin_array(j);
    for (size_t i = 0; i < l->n && i < top; i++) {
        mh__json_begin_object(j);
        mh__json_kv_string(j, field, l->items[i].name);
        mh__json_kv_uint(j, "a", l->items[i].a);
        mh__json_kv_uint(j, "b", l->items[i].b);
        mh__json_kv_int(j, "delta", (int64_t)l->items[i].b - (int64_t)l->items[i].a);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
}

static void json_pair(struct mh_json *j, const char *key, uint64_t a, uint64_t b)
{
    mh__json_key(j, key);
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "a", a);
    mh__json_kv_uint(j, "b", b);
    mh__json_kv_int(j, "delta", (int64_t)b - (int64_t)a);
    mh__json_end_object(j);
}

static void print_json(struct run_view *v, const struct delta_list *layers,
                       const struct delta_list *stacks, uint64_t top)
{
    struct mh_sink sink;
    struct mh_json j;
    mh__cli_json_begin(&j, &sink, "diff");
    mh__json_kv_string(&j, "a", v[0].an.rp.path);
    mh__json_kv_string(&j, "b", v[1].an.rp.path);
    json_pair(&j, "peak_allocated", v[0].pa.value, v[1].pa.value);
    json_pair(&j, "peak_reserved", v[0].pr.value, v[1].pr.value);
    mh__json_key(&j, "steps");
    mh__json_begin_array(&j);
    const struct mh_model *m = v[0].an.rp.model;
    for (size_t i = 0; i < mh_model_step_count(m, v[0].device); i++) {
        struct mh_step_stats a, b;
        if (mh_model_step(m, v[0].device, i, &a) != 0 || !step_of(&v[1], a.step, &b))
            continue;
        mh__json_begin_object(&j);
        mh__json_kv_int(&j, "step", a.step);
        json_pair(&j, "peak_allocated", a.peak_allocated, b.peak_allocated);
        json_pair(&j, "peak_reserved", a.peak_reserved, b.peak_reserved);
        mh__json_end_object(&j);
    }
    mh__json_end_array(&j);
    json_list(&j, "layers", "layer", layers, top);
    json_list(&j, "stacks", "stack", stacks, top);
    mh__json_end_object(&j);
    mh__sink_puts(&sink, "\n");
    mh__sink_finish(&sink);
}

static int open_side(const char *path, int device, struct run_view *v)
{
    const struct mh_analysis_want want = {0, 1, 0};
    if (mh__analysis_open(path, &want, &v->an) < 0)
        return MH_EIO;
    const struct mh_model *m = v->an.rp.model;
    v->device = device >= 0 ? device : mh_model_device_count(m) ? mh_model_device_at(m, 0) : 0;
    mh_model_peak_allocated(m, v->device, &v->pa);
    mh_model_peak_reserved(m, v->device, &v->pr);
    return 0;
}

static int run_diff(int argc, char **argv)
{
    uint64_t top = 8;
    int device = -1, json = 0, first;
    const struct mh_cli_opt opts[] = {
        {"device", 0, MH_OPT_INT, &device, 0, 255, NULL, NULL},
        {"top", 0, MH_OPT_UINT, &top, 1, 100000, NULL, NULL},
        {"json", 0, MH_OPT_FLAG, &json, 0, 0, NULL, NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int rc = mh__cli_options(&mh__cmd_diff, argc, argv, opts, &first);
    if (rc)
        return rc;
    if (argc - first != 2)
        return mh__cli_usage_error(&mh__cmd_diff, "expected two files, A and B");
    struct run_view v[2];
    struct delta_list layers = {0}, stacks = {0};
    memset(v, 0, sizeof v);
    rc = open_side(argv[first], device, &v[0]);
    if (rc == 0 && (rc = open_side(argv[first + 1], device, &v[1])) < 0)
        mh__analysis_close(&v[0].an);
    if (rc < 0)
        return MH_EXIT_FAIL;
    for (int s = 0; s < 2 && rc == 0; s++) {
        rc = layers_side(&v[s], s, &layers);
        if (rc == 0)
            rc = stacks_side(&v[s], s, &stacks);
    }
    if (rc == 0) {
        if (layers.n) /* an empty list has no array to sort */
            qsort(layers.items, layers.n, sizeof *layers.items, by_abs_delta);
        if (stacks.n)
            qsort(stacks.items, stacks.n, sizeof *stacks.items, by_abs_delta);
        if (json)
            print_json(v, &layers, &stacks, top);
        else
            print_text(v, &layers, &stacks, top);
    } else {
        mh__cli_error("%s: %s", argv[first], mh_strerror(rc));
    }
    free(layers.items);
    free(stacks.items);
    mh__analysis_close(&v[0].an);
    mh__analysis_close(&v[1].an);
    return mh__cli_finish(rc == 0 ? MH_EXIT_OK : MH_EXIT_FAIL);
}
