/* cmd_oom.c - `memhist oom FILE...`: explains each out-of-memory error (or,
 * with --at peak, the allocated peak): the request, capacity, reserved,
 * allocated and free memory, the largest free block per pool and stream, a
 * verdict (fragmentation, cross-stream caching or exhaustion), what was live
 * by layer and by stack, and suggestions checked by what-if replay
 * (whatif_check.h) plus the activation-checkpointing plan (layers.h).
 * Gathering is in oom_explain.c, printing in report_oom_print.c. */
#include <getopt.h>
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
    "with a memory fraction of 1.0, and the layers to checkpoint (`memhist layers`).\n\n"
    "options:\n"
    "  --at peak   explain the allocated peak instead of OOMs\n"
    "  --top N     layers and stacks listed (default 8)\n"
    "  --json      print one JSON object\n"
    "  -h, --help  show this help\n";

static int run_oom(int argc, char **argv);

const struct mh_cli_command mh__cmd_oom = {
    "oom", "why an allocation failed, and checked settings that avoid it", usage, run_oom};

static int parse_opts(int argc, char **argv, struct mh_oom_opts *o)
{
    static const struct option opts[] = {{"at", required_argument, NULL, 'a'},
                                         {"top", required_argument, NULL, 't'},
                                         {"json", no_argument, NULL, 'j'},
                                         {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->top = 8;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'a' && strcmp(optarg, "peak") == 0)
            o->at_peak = 1;
        else if (c == 't' && mh__cli_parse_uint(optarg, 1, 100000, &o->top) == 0)
            ;
        else if (c == 'j')
            o->json = 1;
        else if (c == '?')
            return mh__cli_usage_error(&mh__cmd_oom, "unknown option '%s'", argv[optind - 1]);
        else
            return mh__cli_usage_error(&mh__cmd_oom, "invalid value '%s' for --%s%s", optarg,
                                       c == 'a' ? "at" : "top", c == 'a' ? " (only 'peak')" : "");
    }
    if (optind >= argc)
        return mh__cli_usage_error(&mh__cmd_oom, "missing FILE");
    return 0;
}

static int run_oom(int argc, char **argv)
{
    struct mh_oom_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc;
    size_t n = (size_t)(argc - optind);
    struct mh_analysis *a = calloc(n, sizeof *a);
    if (!a) {
        mh__cli_error("%s", mh_strerror(MH_ENOMEM));
        return MH_EXIT_FAIL;
    }
    const struct mh_analysis_want want = {1, 0};
    size_t opened = 0;
    while (opened < n && rc == 0) {
        if (mh__analysis_open(argv[optind + (int)opened], &want, &a[opened]) < 0)
            rc = MH_EXIT_FAIL;
        else
            opened++;
    }
    if (rc == 0)
        rc = mh__oom_explain_all(a, n, &o) < 0 ? MH_EXIT_FAIL : MH_EXIT_OK;
    for (size_t i = 0; i < opened; i++)
        mh__analysis_close(&a[i]);
    free(a);
    return mh__cli_finish(rc);
}
