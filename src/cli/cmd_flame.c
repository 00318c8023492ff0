/* cmd_flame.c - `memhist flame FILE -o OUT.svg`: a flame graph of what one
 * device has live at its allocated peak, its last OOM or a given time, as an
 * SVG picture or as folded stacks. Parses options, analyses the file
 * (src/analysis/analysis.h), picks the moment and builds the tree
 * (src/analysis/flame.h) and hands it to viz/flame/flame_svg.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "flame.h"
#include "flame_svg.h"
#include "printers.h"

static const char usage[] =
    "usage: memhist flame FILE -o OUT.svg [--at peak|oom|SECONDS] [--device N]\n"
    "                     [--by module|stack] [--folded] [--width W]\n\n"
    "A flame graph of the allocations live at one moment: each allocation is a\n"
    "path from the root, widths are bytes. The path is the module path recorded\n"
    "for it (transformer.h.11.mlp -> transformer, h, 11, mlp; module scopes or\n"
    "the allocation's metadata), with allocations made outside every module\n"
    "under '<no module>' and then their stack; or, with --by stack (the default\n"
    "when no live allocation has a module path), the Python stack from its\n"
    "outermost frame. Allocations with no stack end in '<no stack>'. The live\n"
    "set is the one `memhist report` counts at that moment.\n\n"
    "The SVG is self-contained: every frame has a hover title with its bytes,\n"
    "share of the live bytes, allocations and bytes per category, and is\n"
    "coloured by its main memory category (legend at the top). --folded writes\n"
    "the folded-stack text (\"a;b;c BYTES\" per line) that flamegraph.pl,\n"
    "inferno and speedscope read.\n\n"
    "options:\n"
    "  -o, --output OUT        where to write (required; '-' = stdout)\n"
    "  --at peak|oom|SECONDS   the device's allocated peak (default), its last\n"
    "                          out-of-memory event, or seconds from the first event\n"
    "  --device N              device to show (default: the first one in the file)\n"
    "  --by module|stack       hierarchy (default: module when a live allocation\n"
    "                          has a module path, else stack)\n"
    "  --folded                write folded stacks instead of an SVG\n"
    "  --width W               SVG width in pixels (default 1200, 400..16384)\n"
    "  -h, --help              show this help\n\n"
    "examples:\n"
    "  memhist flame run.memhist -o peak.svg\n"
    "  memhist flame run.memhist -o oom.svg --at oom\n"
    "  memhist flame run.memhist -o - --folded --by stack | flamegraph.pl > stacks.svg\n";

extern const struct mh__cli_command mh__cmd_flame;

struct flame_args {
    const char *file, *out, *at_text, *by_text;
    int device, has_device, folded, at, by;
    uint64_t at_ns, width;
};

static int parse_args(int argc, char **argv, struct flame_args *a)
{
    memset(a, 0, sizeof *a);
    const struct mh__cli_opt opts[] = {
        {"output", 'o', MH__OPT_TEXT, &a->out, 0, 0, NULL, NULL},
        {"at", 0, MH__OPT_TEXT, &a->at_text, 0, 0, NULL, NULL},
        {"device", 0, MH__OPT_INT, &a->device, 0, 32767, NULL, &a->has_device},
        {"by", 0, MH__OPT_TEXT, &a->by_text, 0, 0, NULL, NULL},
        {"folded", 0, MH__OPT_FLAG, &a->folded, 0, 0, NULL, NULL},
        {"width", 0, MH__OPT_UINT, &a->width, 400, 16384, NULL, NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int first, rc = mh__cli_options(&mh__cmd_flame, argc, argv, opts, &first);
    if (rc)
        return rc;
    if (first >= argc)
        return mh__cli_usage_error(&mh__cmd_flame, "missing the input FILE");
    if (argc - first > 1)
        return mh__cli_usage_error(&mh__cmd_flame, "one input FILE ('%s' is extra)",
                                   argv[first + 1]);
    a->file = argv[first];
    if (!a->out)
        return mh__cli_usage_error(&mh__cmd_flame, "missing -o OUT.svg ('-' for stdout)");
    if (a->at_text && mh__cli_parse_at(a->at_text, &a->at, &a->at_ns) != 0)
        return mh__cli_usage_error(&mh__cmd_flame,
                                   "--at takes 'peak', 'oom' or seconds from the start, not '%s'",
                                   a->at_text);
    if (!a->by_text)
        a->by = MH__FLAME_BY_AUTO;
    else if (strcmp(a->by_text, "module") == 0)
        a->by = MH__FLAME_BY_MODULE;
    else if (strcmp(a->by_text, "stack") == 0)
        a->by = MH__FLAME_BY_STACK;
    else
        return mh__cli_usage_error(&mh__cmd_flame, "--by is 'module' or 'stack', not '%s'",
                                   a->by_text);
    if (a->folded && a->width)
        return mh__cli_usage_error(&mh__cmd_flame, "--width applies to the SVG, not --folded");
    return 0;
}

/* The device to show; prints why there is none. */
static int pick_device(const struct flame_args *a, const struct mh_model *m, int *device)
{
    size_t n = mh_model_device_count(m);
    for (size_t i = 0; i < n; i++)
        if (!a->has_device || mh_model_device_at(m, i) == a->device) {
            *device = mh_model_device_at(m, i);
            return 0;
        }
    if (a->has_device)
        mh__cli_missing_device(a->file, m, a->device, 0);
    else
        mh__cli_error("%s: no device has allocator events; nothing to draw", a->file);
    return MH__EXIT_FAIL;
}

/* "at the allocated peak (3.21 s, step 2)"; an OOM with its request. */
static const char *moment_text(const struct flame_args *a, const struct mh__flame_moment *m,
                               char *buf, size_t len)
{
    char b[32], t[32], s[24];
    if (a->at == MH__MOMENT_OOM)
        snprintf(buf, len, "at the last OOM (request %s, %s, %s)", mh__bytes_text(m->value, b),
                 mh__cli_duration(m->time_ns, t), mh__step_text(m->step, s));
    else
        snprintf(buf, len, "at %s%s (%s)", a->at == MH__MOMENT_PEAK ? "the allocated peak, " : "",
                 mh__cli_duration(m->time_ns, t), mh__step_text(m->step, s));
    return buf;
}

static int write_out(const struct flame_args *a, const struct mh__sink *sink)
{
    struct mh__outfile of;
    if (mh__cli_output_open(&of, a->out, &a->file, 1) < 0)
        return MH__EXIT_FAIL;
    int rc = 0, errnum = 0;
    if (fwrite(sink->buf, 1, sink->len, of.fp) != sink->len) {
        errnum = errno ? errno : EIO;
        rc = MH_EIO;
    }
    return mh__cli_output_close(&of, a->out, rc, errnum) < 0 ? MH__EXIT_FAIL : MH__EXIT_OK;
}

/* Draws the tree into memory, then writes it whole. */
static int render(const struct flame_args *a, const struct mh__analysis *an, int device, int by,
                  const char *moment, const struct mh__flame *f)
{
    struct mh__sink sink;
    char title[512], sub[512], b[32];
    struct mh_device_info info;
    mh__device_info(an->rp.reader, device, &info);
    size_t n;
    const struct mh__flame_node *nodes = mh__flame_nodes(f, &n);
    snprintf(title, sizeof title, "memhist flame: %s, device %d%s%s", a->file, device,
             info.name[0] ? " " : "", info.name);
    snprintf(sub, sizeof sub, "%s live %s, by %s", mh__bytes_text(nodes[0].bytes, b), moment,
             by == MH__FLAME_BY_MODULE ? "module path" : "Python stack");
    const struct mh__flame_svg_opts o = {title, sub, (int)a->width};
    mh__sink_init_mem(&sink);
    int rc = a->folded ? mh__flame_folded_write(f, &sink) : mh__flame_svg_write(f, &o, &sink);
    if (rc < 0)
        mh__cli_error("%s: %s", a->out, mh_strerror(rc));
    else
        rc = write_out(a, &sink);
    if (rc == 0 && strcmp(a->out, "-") != 0)
        mh__cli_status_wrote(a->out, NULL, "%s", sub);
    mh__sink_free(&sink);
    return rc < 0 ? MH__EXIT_FAIL : rc;
}

static int flame_file(const struct flame_args *a, const struct mh__analysis *an)
{
    int device, by, rc = pick_device(a, an->rp.model, &device);
    if (rc)
        return rc;
    struct mh__flame_moment m;
    char err[256], when[160];
    rc = mh__flame_moment(an, device, a->at, a->at_ns, &m, err, sizeof err);
    if (rc == MH_EINVAL) {
        mh__cli_error("%s: %s", a->file, err);
        return MH__EXIT_FAIL;
    } else if (rc < 0) {
        return MH__EXIT_FAIL; /* the session reported it (a pipe read twice, damage) */
    }
    moment_text(a, &m, when, sizeof when);
    struct mh__flame *f = NULL;
    const struct mh__lifetimes *live_at;
    struct mh__lifetimes *kept = NULL;
    if ((rc = mh__analysis_records_at(an, &m.index, 1, &live_at, &kept)) < 0 ||
        (rc = mh__flame_live(live_at, an->rp.reader, device, m.index, a->by, &f, &by)) < 0) {
        if (rc != MH_EUNSUPPORTED) /* a pipe read twice: the session reported it */
            mh__cli_error("%s: %s", a->file, mh_strerror(rc));
        mh__lifetimes_free(kept);
        return MH__EXIT_FAIL;
    }
    mh__lifetimes_free(kept);
    size_t n;
    if (mh__flame_nodes(f, &n)[0].bytes == 0) {
        mh__cli_error("%s: nothing is live on device %d %s; no flame graph written", a->file,
                      device, when);
        rc = MH__EXIT_FAIL;
    } else {
        rc = render(a, an, device, by, when, f);
    }
    mh__flame_free(f);
    return rc;
}

static int run(int argc, char **argv)
{
    struct flame_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    struct mh__analysis an;
    if (mh__analysis_open(a.file, NULL, &an) < 0)
        return MH__EXIT_FAIL;
    rc = flame_file(&a, &an);
    mh__analysis_close(&an);
    return mh__cli_finish(rc);
}

const struct mh__cli_command mh__cmd_flame = {
    .name = "flame",
    .summary = "flame graph (SVG or folded stacks) of what is live at the peak",
    .usage = usage,
    .run = run,
};
