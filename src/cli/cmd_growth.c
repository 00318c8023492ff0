/* cmd_growth.c - `memhist growth FILE...`: the allocation sites (stack and
 * module) whose memory allocated in a step is still live at the end of the
 * steps after it, step after step: bytes per step, live bytes at the last
 * complete step's end, the step the growth began, the steps it grew in.
 * The analysis is the growth observer (src/analysis/growth.h); `memhist
 * report` prints its first entry as one line and its entries in --json
 * (mh__growth_json, here). Several files (one per rank) are listed one after
 * the other, then the rank table. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "printers.h"
#include "analysis.h"
#include "json.h"
#include "stacks.h"

static const char usage[] =
    "usage: memhist growth [--device N] [--top N] [--frames N] [--json] FILE...\n\n"
    "Memory that grows across training steps: per allocation site (stack and\n"
    "module), the bytes allocated in a step that are still live at the end of the\n"
    "steps after it. A site grows when its live bytes at the end of each of the\n"
    "last K complete steps are above those at the end of the step before; K is\n"
    "half the steps after the first, rounded up, from 2 to 8, so three complete\n"
    "steps are needed and steady state is not growth (parameters, optimizer state\n"
    "created in the first step, a cache that filled and then stayed). Steps are\n"
    "the device's own; the tail after the last step is left out. Bytes are the\n"
    "tensors' requested sizes: a tensor the allocator serves from a larger block\n"
    "is not growth. Listed per site: bytes per step (growth over the last K\n"
    "steps / K), bytes live at the end of the last step, the step its growth\n"
    "began, the steps it grew in.\n\n"
    "options:\n"
    "  --device N  only device N (default: every device)\n"
    "  --top N     sites listed per device (default 10)\n"
    "  --frames N  stack frames shown per site (default 6)\n"
    "  --json      print one JSON object\n"
    "  -h, --help  show this help\n";

static int run_growth(int argc, char **argv);

const struct mh__cli_command mh__cmd_growth = {
    "growth", "allocations that stay live step after step (leaks across steps)", usage,
    run_growth};

struct growth_opts {
    int device;
    uint64_t top, frames;
    int json;
};

const char *mh__growth_label(const struct mh_reader *r, const struct mh__growth_entry *e, char *buf,
                             size_t len)
{
    char site[256], safe[256];
    const char *module = e->module ? mh_reader_string(r, e->module) : NULL;
    mh__stack_label(r, e->stack, site, sizeof site);
    if (module && module[0])
        snprintf(buf, len, "%s (%s)", mh__cli_text(module, safe, sizeof safe), site);
    else
        snprintf(buf, len, "%s", site);
    return buf;
}

static void json_entry(struct mh__json *j, const struct mh_reader *r, const struct mh__growth_entry *e)
{
    const char *module = e->module ? mh_reader_string(r, e->module) : NULL;
    char site[256];
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "bytes_per_step", e->bytes_per_step);
    mh__json_kv_uint(j, "live_bytes", e->live_bytes);
    mh__json_kv_int(j, "first_step", e->first_step);
    mh__json_kv_uint(j, "steps_grown", e->steps_grown);
    mh__json_key(j, "module");
    if (module && module[0])
        mh__json_string(j, module);
    else
        mh__json_null(j);
    mh__json_kv_string(j, "site", mh__stack_label(r, e->stack, site, sizeof site));
    mh__json_end_object(j);
}

void mh__growth_json(struct mh__json *j, const struct mh_reader *r, const struct mh__device_report *d,
                     size_t top)
{
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "window_steps", d->growth_window);
    mh__json_kv_uint(j, "sites", d->ngrowth);
    mh__json_key(j, "entries");
    mh__json_begin_array(j);
    for (size_t i = 0; i < d->ngrowth && (!top || i < top); i++)
        json_entry(j, r, &d->growth[i]);
    mh__json_end_array(j);
    mh__json_end_object(j);
}

static void print_device(const struct mh__analysis *a, const struct mh__device_report *d,
                         const struct growth_opts *o)
{
    char b[2][32], label[512], text[4096];
    size_t steps = mh_model_step_count(a->rp.model, d->device);
    printf("\n%s device %d: %zu complete step%s", a->rp.path, d->device, steps,
           steps == 1 ? "" : "s");
    if (!d->growth_window) {
        printf("; too few to tell growth from set-up (3 needed)\n");
        return;
    }
    printf(", growth over the last %u\n", d->growth_window);
    if (!d->ngrowth) {
        printf("  nothing grows: no allocation site holds more at each of the last %u step ends\n",
               d->growth_window);
        return;
    }
    printf("  %11s %11s %7s %7s  %s\n", "per step", "live at end", "since", "grew", "site");
    for (size_t i = 0; i < d->ngrowth && i < o->top; i++) {
        const struct mh__growth_entry *e = &d->growth[i];
        char since[24], grew[24];
        snprintf(since, sizeof since, "step %" PRId64, e->first_step);
        snprintf(grew, sizeof grew, "%u/%u", e->steps_grown, e->steps);
        printf("  %11s %11s %7s %7s  %s\n", mh__bytes_text(e->bytes_per_step, b[0]),
               mh__bytes_text(e->live_bytes, b[1]), since, grew,
               mh__growth_label(a->rp.reader, e, label, sizeof label));
        mh__cli_stack_text(a->rp.reader, e->stack, "\n                                           ",
                           (size_t)o->frames, 0, text, sizeof text);
        if (text[0])
            printf("                                           %s\n", text);
    }
    if (d->ngrowth > o->top)
        printf("  ... %zu more sites (--top)\n", d->ngrowth - o->top);
}

static int one_device(void *user, const struct mh__analysis *a, int dev, struct mh__json *j)
{
    const struct growth_opts *o = user;
    struct mh__device_report d;
    memset(&d, 0, sizeof d);
    d.device = dev;
    int rc = mh__growth_get(a->growth, dev, &d.growth, &d.ngrowth, &d.growth_window);
    if (rc < 0) {
        mh__cli_error("%s: %s", a->rp.path, mh_strerror(rc));
        return rc;
    }
    if (j) {
        mh__json_begin_object(j);
        mh__json_kv_int(j, "device", dev);
        mh__json_kv_uint(j, "steps", mh_model_step_count(a->rp.model, dev));
        mh__json_key(j, "growth");
        mh__growth_json(j, a->rp.reader, &d, (size_t)o->top);
        mh__json_end_object(j);
    } else {
        print_device(a, &d, o);
    }
    free(d.growth);
    return 0;
}

static int growth_file(void *user, const struct mh__analysis *a, void *prepared, size_t i,
                       size_t n, struct mh__json *j)
{
    const struct growth_opts *o = user;
    (void)prepared;
    (void)i;
    (void)n;
    return mh__cli_each_device(a, o->device, j, one_device, user);
}

static int run_growth(int argc, char **argv)
{
    struct growth_opts o = {-1, 10, 6, 0};
    const struct mh__cli_opt opts[] = {
        {"device", 0, MH__OPT_INT, &o.device, 0, 255, NULL, NULL},
        {"top", 0, MH__OPT_UINT, &o.top, 1, 100000, NULL, NULL},
        {"frames", 0, MH__OPT_UINT, &o.frames, 1, 1000, NULL, NULL},
        {"json", 0, MH__OPT_FLAG, &o.json, 0, 0, NULL, NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int first, rc = mh__cli_options(&mh__cmd_growth, argc, argv, opts, &first);
    if (rc)
        return rc;
    if (first >= argc)
        return mh__cli_usage_error(&mh__cmd_growth, "missing FILE");
    const struct mh__analysis_want want = {0, 0, 1};
    const struct mh__cli_multi m = {.command = "growth", .want = &want, .json_files = o.json,
                                   .each = growth_file, .user = &o};
    return mh__cli_finish(mh__cli_multi_run(argv + first, (size_t)(argc - first), &m));
}
