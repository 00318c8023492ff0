/* cmd_diff.c - `memhist diff A B`: two runs side by side (recorded,
 * simulated or what-if files alike): peaks, per-step peaks and their deltas,
 * and the layers and stacks whose bytes at the allocated peak grew or shrank
 * most. The answer is src/analysis/diff.h; this file only prints it. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "analysis.h"
#include "diff.h"
#include "json.h"

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

const struct mh__cli_command mh__cmd_diff = {
    "diff", "compare two runs: peaks, steps, layers and stacks that changed", usage, run_diff};

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
static int name_width(const struct mh__diff *d, uint64_t top)
{
    int width = 34;
    for (size_t i = 0; i < d->nlayers && i < top; i++)
        width = mh__cli_fit_width(width, d->layers[i].name);
    for (size_t i = 0; i < d->nstacks && i < top; i++)
        width = mh__cli_fit_width(width, d->stacks[i].name);
    return width;
}

static void print_text(char *const path[2], const struct mh__diff *d, uint64_t top)
{
    printf("A: %s (device %d)\nB: %s (device %d)\n\n", path[0], d->device[0], path[1],
           d->device[1]);
    int w = name_width(d, top);
    printf("  %-*s %12s %12s %13s\n", w, "", "A", "B", "B - A");
    text_row("peak allocated", w, d->allocated[0].value, d->allocated[1].value);
    text_row("peak reserved", w, d->reserved[0].value, d->reserved[1].value);
    if (d->steps_a)
        printf("\n  per step (peak allocated / peak reserved):\n");
    for (size_t i = 0; i < d->nsteps; i++) {
        const struct mh__diff_step *s = &d->steps[i];
        char name[64];
        snprintf(name, sizeof name, "step %lld allocated", (long long)s->step);
        text_row(name, w, s->allocated_a, s->allocated_b);
        snprintf(name, sizeof name, "step %lld reserved", (long long)s->step);
        text_row(name, w, s->reserved_a, s->reserved_b);
    }
    printf("\n  layers at the allocated peak, largest change first:\n");
    for (size_t i = 0; i < d->nlayers && i < top; i++)
        text_row(d->layers[i].name, w, d->layers[i].a, d->layers[i].b);
    printf("\n  stacks at the allocated peak, largest change first:\n");
    for (size_t i = 0; i < d->nstacks && i < top; i++)
        text_row(d->stacks[i].name, w, d->stacks[i].a, d->stacks[i].b);
}

static void json_list(struct mh__json *j, const char *key, const char *field,
                      const struct mh__named_delta *l, size_t n, uint64_t top)
{
    mh__json_key(j, key);
    mh__json_begin_array(j);
    for (size_t i = 0; i < n && i < top; i++) {
        mh__json_begin_object(j);
        mh__json_kv_string(j, field, l[i].name);
        mh__json_kv_uint(j, "a", l[i].a);
        mh__json_kv_uint(j, "b", l[i].b);
        mh__json_kv_int(j, "delta", (int64_t)l[i].b - (int64_t)l[i].a);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
}

static void json_pair(struct mh__json *j, const char *key, uint64_t a, uint64_t b)
{
    mh__json_key(j, key);
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "a", a);
    mh__json_kv_uint(j, "b", b);
    mh__json_kv_int(j, "delta", (int64_t)b - (int64_t)a);
    mh__json_end_object(j);
}

static void print_json(char *const path[2], const struct mh__diff *d, uint64_t top)
{
    struct mh__sink sink;
    struct mh__json j;
    mh__cli_json_begin(&j, &sink, "diff");
    mh__json_kv_string(&j, "a", path[0]);
    mh__json_kv_string(&j, "b", path[1]);
    json_pair(&j, "peak_allocated", d->allocated[0].value, d->allocated[1].value);
    json_pair(&j, "peak_reserved", d->reserved[0].value, d->reserved[1].value);
    mh__json_key(&j, "steps");
    mh__json_begin_array(&j);
    for (size_t i = 0; i < d->nsteps; i++) {
        mh__json_begin_object(&j);
        mh__json_kv_int(&j, "step", d->steps[i].step);
        json_pair(&j, "peak_allocated", d->steps[i].allocated_a, d->steps[i].allocated_b);
        json_pair(&j, "peak_reserved", d->steps[i].reserved_a, d->steps[i].reserved_b);
        mh__json_end_object(&j);
    }
    mh__json_end_array(&j);
    json_list(&j, "layers", "layer", d->layers, d->nlayers, top);
    json_list(&j, "stacks", "stack", d->stacks, d->nstacks, top);
    mh__json_end_object(&j);
    mh__sink_puts(&sink, "\n");
    mh__sink_finish(&sink);
}

static int run_diff(int argc, char **argv)
{
    uint64_t top = 8;
    int device = -1, json = 0, first;
    const struct mh__cli_opt opts[] = {
        {"device", 0, MH__OPT_INT, &device, 0, 255, NULL, NULL},
        {"top", 0, MH__OPT_UINT, &top, 1, 100000, NULL, NULL},
        {"json", 0, MH__OPT_FLAG, &json, 0, 0, NULL, NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int rc = mh__cli_options(&mh__cmd_diff, argc, argv, opts, &first);
    if (rc)
        return rc;
    if (argc - first != 2)
        return mh__cli_usage_error(&mh__cmd_diff, "expected two files, A and B");
    const struct mh__analysis_want want = {0, 1, 0};
    struct mh__analysis an[2];
    if (mh__analysis_open(argv[first], &want, &an[0]) < 0)
        return MH__EXIT_FAIL;
    if (mh__analysis_open(argv[first + 1], &want, &an[1]) < 0) {
        mh__analysis_close(&an[0]);
        return MH__EXIT_FAIL;
    }
    const struct mh__analysis *run[2] = {&an[0], &an[1]};
    const int dev[2] = {device, device};
    struct mh__diff d;
    if ((rc = mh__diff_runs(run, dev, &d)) == 0 && json)
        print_json(argv + first, &d, top);
    else if (rc == 0)
        print_text(argv + first, &d, top);
    else
        mh__cli_error("%s: %s", argv[first], mh_strerror(rc));
    mh__diff_free(&d);
    mh__analysis_close(&an[0]);
    mh__analysis_close(&an[1]);
    return mh__cli_finish(rc == 0 ? MH__EXIT_OK : MH__EXIT_FAIL);
}
