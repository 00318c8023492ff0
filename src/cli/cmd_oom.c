/* cmd_oom.c - `memhist oom FILE...`: explains each out-of-memory error (or,
 * with --at peak, the allocated peak): the request, capacity, reserved,
 * allocated and free memory, the largest free block per pool and stream, a
 * verdict (fragmentation, cross-stream caching or exhaustion), what was live
 * by layer and by stack, and suggestions checked by what-if replay
 * (whatif_check.h) plus the activation-checkpointing plan (layers.h).
 * Gathering is in oom_explain.c, printing in report_oom_print.c. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "printers.h"
#include "analysis.h"
#include "oom_explain.h"
#include "whatif_check.h"

static const char usage[] =
    "usage: memhist oom [--at peak] [--top N] [--json] FILE...\n\n"
    "For every OOM in each file (or, with --at peak, at each device's allocated\n"
    "peak): the request and its rounded size and pool; device capacity, reserved,\n"
    "allocated, reserved-but-unallocated, free memory reported by CUDA and memory\n"
    "outside the allocator; the largest free block per pool and stream; a verdict:\n"
    "  fragmentation  allocated + request fit in the device, but no free block is\n"
    "                 large enough\n"
    "  cross-stream   a free block large enough is cached for another stream\n"
    "  exhaustion     live allocations plus the request exceed the device\n"
    "the live allocations by layer and by stack, largest first; and suggestions,\n"
    "each checked by replaying the run's requests through the simulator (as\n"
    "`memhist whatif` does): expandable_segments:True, max_split_size_mb:M (M =\n"
    "half the failing request, at least 20), garbage_collection_threshold:0.6\n"
    "with a memory fraction of 1.0, and the layers to checkpoint (`memhist layers`).\n"
    "Suggestions count as checked when the run replayed under its own settings\n"
    "reproduces at least 95 % of its allocator events, else they are estimates; a\n"
    "trace that starts mid-run is replayed from the state at its start.\n\n"
    "options:\n"
    "  --at peak   explain the allocated peak instead of OOMs\n"
    "  --top N     layers and stacks listed (default 8)\n"
    "  --json      print one JSON object\n"
    "  -h, --help  show this help\n";

static int run_oom(int argc, char **argv);

const struct mh__cli_command mh__cmd_oom = {
    "oom", "why an allocation failed, and checked settings that avoid it", usage, run_oom};

static int parse_opts(int argc, char **argv, struct mh__oom_opts *o, int *first)
{
    const char *at = NULL;
    memset(o, 0, sizeof *o);
    o->top = 8;
    const struct mh__cli_opt opts[] = {
        {"at", 0, MH__OPT_TEXT, &at, 0, 0, NULL, NULL},
        {"top", 0, MH__OPT_UINT, &o->top, 1, 100000, NULL, NULL},
        {"json", 0, MH__OPT_FLAG, &o->json, 0, 0, NULL, NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int rc = mh__cli_options(&mh__cmd_oom, argc, argv, opts, first);
    if (rc)
        return rc;
    if (at && strcmp(at, "peak") != 0)
        return mh__cli_usage_error(&mh__cmd_oom, "invalid value '%s' for --at (only 'peak')", at);
    o->at_peak = at != NULL;
    if (*first >= argc)
        return mh__cli_usage_error(&mh__cmd_oom, "missing FILE");
    return 0;
}

static int run_oom(int argc, char **argv)
{
    struct mh__oom_opts o;
    int first, rc = parse_opts(argc, argv, &o, &first);
    if (rc)
        return rc;
    return mh__cli_finish(mh__oom_explain_all(argv + first, (size_t)(argc - first), &o));
}
