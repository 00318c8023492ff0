/* cmd_whatif.c - `memhist whatif FILE`: replays a recorded run's allocation
 * requests through the simulator under other allocator settings or another
 * device size, and prints the recorded run (replayed through the model) and
 * the what-if run side by side. Without --alloc-conf it replays under the
 * recorded settings and reports how many allocator events the simulator
 * reproduced exactly (kind, address, size, position). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "printers.h"
#include "whatif_check.h"
#include "sim_replay.h"
#include "json.h"
#include "sink.h"

static const char usage[] =
    "usage: memhist whatif FILE [--alloc-conf STR] [--device-memory SIZE] [--json]\n\n"
    "Re-drives the recorded allocation requests (sizes, streams, order, frees)\n"
    "through the caching-allocator simulator under other settings and compares\n"
    "peak allocated and reserved memory, fragmentation, segment traffic, retries\n"
    "and OOMs with the recorded run. A what-if run that runs out of memory stops\n"
    "there, as the program would have. Without --alloc-conf the recorded settings\n"
    "are used and the output says how closely the simulation reproduces the\n"
    "recorded allocator events. A trace that starts mid-run (an imported torch\n"
    "snapshot) is replayed from the segments and blocks live at its start. The\n"
    "what-if figures count as checked by replay when the recorded settings\n"
    "reproduce at least 95 % of the recorded allocator events, else they are\n"
    "estimates. Only the first device of a multi-device file is replayed;\n"
    "memory allocated outside the caching allocator is not modelled.\n\n"
    "options:\n"
    "  --alloc-conf STR      settings to try (PYTORCH_CUDA_ALLOC_CONF syntax), e.g.\n"
    "                        expandable_segments:True\n"
    "  --device-memory SIZE  device capacity (default: what the recorded run could\n"
    "                        use: the device's total memory, less what the driver\n"
    "                        did not have free at a recorded OOM; else unlimited)\n"
    "  --memory-fraction F   per-process memory fraction in (0, 1]\n"
    "  --json                print one JSON object\n"
    "  -h, --help            show this help\n";

extern const struct mh__cli_command mh__cmd_whatif;

struct whatif_args {
    const char *path, *conf_text;
    uint64_t capacity;
    double fraction;
    int json;
};

static int parse_args(int argc, char **argv, struct whatif_args *a)
{
    const struct mh__cli_command *cmd = &mh__cmd_whatif;
    const struct mh__cli_opt opts[] = {
        {"alloc-conf", 0, MH__OPT_TEXT, &a->conf_text, 0, 0, NULL, NULL},
        MH__CLI_OPT_DEVICE_MEMORY(&a->capacity, NULL),
        MH__CLI_OPT_MEMORY_FRACTION(&a->fraction, NULL),
        {"json", 0, MH__OPT_FLAG, &a->json, 0, 0, NULL, NULL},
        {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int first, rc = mh__cli_options(cmd, argc, argv, opts, &first);
    if (rc)
        return rc;
    if (first >= argc)
        return mh__cli_usage_error(cmd, "missing FILE");
    if (first + 1 < argc)
        return mh__cli_usage_error(cmd, "one FILE only (got '%s' too)", argv[first + 1]);
    a->path = argv[first];
    return 0;
}

struct whatif_view {
    const struct whatif_args *a;
    const struct mh__whatif_input *L;
    const struct mh__sim_replay_opts *ro;
    const struct mh__whatif_outcome *rec, *sim;
    const struct mh__sim_replay_result *res;
    const struct mh__whatif_outcome *base; /* under the recorded settings, NULL if it failed */
    int mid_run;
};

static double frag(const struct mh__whatif_outcome *s)
{
    return s->peak_reserved ? 1.0 - (double)s->allocated_at_peak / (double)s->peak_reserved : 0.0;
}

static double match_pct(const struct mh__sim_replay_result *r)
{
    uint64_t n = r->recorded_alloc_events > r->simulated_alloc_events ? r->recorded_alloc_events
                                                                      : r->simulated_alloc_events;
    return n ? 100.0 * (double)r->matched / (double)n : 100.0;
}

static const char *conf_text(const struct mh_alloc_conf *c, char *buf, size_t len)
{
    mh_alloc_conf_format(c, buf, len);
    if (!buf[0])
        snprintf(buf, len, "(defaults)");
    return buf;
}

static const char *oom_text(const struct mh__whatif_outcome *s, char *buf, size_t len)
{
    char b1[32], b2[32];
    if (!s->oom)
        snprintf(buf, len, "no");
    else
        snprintf(buf, len, "yes: step %" PRId64 ", at %s, %s", s->oom_step,
                 mh__cli_duration(s->oom_time_ns, b1), mh__bytes_text(s->oom_size, b2));
    return buf;
}

static void row_bytes(const char *name, uint64_t a, uint64_t b)
{
    char b1[32], b2[32];
    printf("%-32s %-22s %s\n", name, mh__bytes_text(a, b1), mh__bytes_text(b, b2));
}

static void print_text(const struct whatif_view *v)
{
    char c1[512], c2[512], b1[32], b2[32];
    const struct mh__whatif_outcome *r = v->rec, *s = v->sim;
    printf("file %s\n\n", v->a->path);
    printf("%-32s %-22s %s\n", "", "recorded", "what-if");
    printf("%-32s %-22s %s\n", "allocator settings", conf_text(&v->L->conf, c1, sizeof c1),
           conf_text(&v->ro->conf, c2, sizeof c2));
    printf("%-32s %-22s %s\n", "device memory",
           v->L->total_bytes ? mh__bytes_text(v->L->total_bytes, b1) : "unknown",
           v->ro->capacity ? mh__bytes_text(v->ro->capacity, b2) : "unlimited");
    row_bytes("peak allocated", r->peak_allocated, s->peak_allocated);
    row_bytes("peak reserved", r->peak_reserved, s->peak_reserved);
    row_bytes("reserved at end", r->end_reserved, s->end_reserved);
    snprintf(c1, sizeof c1, "%.1f %%", 100.0 * frag(r));
    snprintf(c2, sizeof c2, "%.1f %%", 100.0 * frag(s));
    printf("%-32s %-22s %s\n", "fragmentation at reserved peak", c1, c2);
    snprintf(c1, sizeof c1, "%" PRIu64 " / %" PRIu64, r->segment_allocs, r->segment_frees);
    snprintf(c2, sizeof c2, "%" PRIu64 " / %" PRIu64, s->segment_allocs, s->segment_frees);
    printf("%-32s %-22s %s\n", "segment allocs / frees", c1, c2);
    printf("%-32s %-22" PRIu64 " %" PRIu64 "\n", "alloc retries", r->retries, s->retries);
    printf("%-32s %-22s %s\n", "OOM", oom_text(r, c1, sizeof c1), oom_text(s, c2, sizeof c2));
    printf("\n%" PRIu64 " allocation requests replayed", v->res->requests);
    if (v->res->oom)
        printf("; the what-if run stopped at its OOM, as the program would have");
    printf("\n");
    if (v->res->unknown_frees)
        printf("%" PRIu64 " frees of blocks allocated before the recording began were skipped\n",
               v->res->unknown_frees);
    if (v->ro->use_oracle && !v->res->recorded_alloc_events)
        printf("replay fidelity: the recording has no allocator events to reproduce\n");
    else if (v->ro->use_oracle)
        printf("replay fidelity: %.2f %% of %" PRIu64 " recorded allocator events reproduced "
               "exactly (kind, address, size, order)\n",
               match_pct(v->res), v->res->recorded_alloc_events);
    if (v->ro->use_oracle)
        printf("placement: %" PRIu64 " of %" PRIu64 " allocations at the recorded address, %" PRIu64
               " of %" PRIu64 " segment events at the same point\n",
               v->res->placed, v->res->allocs, v->res->matched_segment_events,
               v->res->recorded_segment_events);
    if (v->mid_run || v->res->seeded_segments)
        printf("%s\n", mh__replay_seed_text(v->sim, c1, sizeof c1));
    if (v->L->address_ties)
        printf("best fit: equal free blocks taken by address, as the recording's torch did (an "
               "older torch; torch 2.15 takes the older segment's first)\n");
    printf("what-if figures: %s\n", mh__replay_check_text(v->base, c1, sizeof c1));
}

static void json_run(struct mh__json *j, const char *key, const struct mh__whatif_outcome *s,
                     const struct mh_alloc_conf *conf, uint64_t capacity)
{
    char c[512];
    mh__json_key(j, key);
    mh__json_begin_object(j);
    mh_alloc_conf_format(conf, c, sizeof c);
    mh__json_kv_string(j, "alloc_conf", c);
    mh__json_kv_uint(j, "device_memory", capacity);
    mh__json_kv_uint(j, "peak_allocated", s->peak_allocated);
    mh__json_kv_uint(j, "peak_reserved", s->peak_reserved);
    mh__json_kv_uint(j, "reserved_at_end", s->end_reserved);
    mh__json_kv_double(j, "fragmentation_at_reserved_peak", frag(s), 4);
    mh__json_kv_uint(j, "segment_allocs", s->segment_allocs);
    mh__json_kv_uint(j, "segment_frees", s->segment_frees);
    mh__json_kv_uint(j, "alloc_retries", s->retries);
    mh__json_key(j, "oom");
    if (!s->oom) {
        mh__json_null(j);
    } else {
        mh__json_begin_object(j);
        mh__json_kv_int(j, "step", s->oom_step);
        mh__json_kv_uint(j, "time_ns", s->oom_time_ns);
        mh__json_kv_uint(j, "size", s->oom_size);
        mh__json_end_object(j);
    }
    mh__json_end_object(j);
}

static void print_json(const struct whatif_view *v)
{
    struct mh__sink sink;
    struct mh__json j;
    mh__cli_json_begin(&j, &sink, "whatif");
    mh__json_kv_string(&j, "file", v->a->path);
    json_run(&j, "recorded", v->rec, &v->L->conf, v->L->total_bytes);
    json_run(&j, "whatif", v->sim, &v->ro->conf, v->ro->capacity);
    mh__json_kv_uint(&j, "requests", v->res->requests);
    mh__json_kv_bool(&j, "whatif_stopped_on_oom", v->res->oom);
    mh__json_kv_uint(&j, "unknown_frees", v->res->unknown_frees);
    mh__json_kv_uint(&j, "recorded_allocator_events", v->res->recorded_alloc_events);
    mh__json_kv_uint(&j, "simulated_allocator_events", v->res->simulated_alloc_events);
    mh__json_kv_uint(&j, "recorded_allocations", v->res->allocs);
    mh__json_kv_uint(&j, "allocations_placed_same", v->res->placed);
    mh__json_key(&j, "match_percent");
    if (v->ro->use_oracle)
        mh__json_double(&j, match_pct(v->res), 2);
    else
        mh__json_null(&j);
    mh__json_kv_uint(&j, "recorded_segment_events", v->res->recorded_segment_events);
    mh__json_kv_uint(&j, "segment_events_same", v->res->matched_segment_events);
    mh__json_kv_uint(&j, "seeded_segments", v->res->seeded_segments);
    mh__json_kv_uint(&j, "seeded_blocks", v->res->seeded_blocks);
    mh__json_kv_uint(&j, "seeded_unknown_sizes", v->res->seeded_unknown);
    mh__json_key(&j, "baseline_match_percent");
    if (v->base)
        mh__json_double(&j, v->base->match, 2);
    else
        mh__json_null(&j);
    mh__json_kv_double(&j, "checked_from_percent", MH__WHATIF_CHECKED_MATCH, 1);
    mh__json_kv_bool(&j, "checked", mh__whatif_checked(v->base));
    mh__json_kv_string(&j, "best_fit_ties", v->L->address_ties ? "address" : "segment_age");
    mh__json_end_object(&j);
    mh__sink_puts(&sink, "\n");
}

/* What the command asks for: the settings from --alloc-conf (or none). */
struct whatif_plan {
    const struct whatif_args *a;
    struct mh_alloc_conf conf;
};

/* The options of the run the command asks for, from the input and the
 * recorded run (NULL: as if it had no OOM; mh__whatif_expect_fn). */
static void run_opts(void *user, const struct mh__whatif_input *L,
                     const struct mh__whatif_outcome *rs, struct mh__sim_replay_opts *ro,
                     int *baseline)
{
    const struct whatif_plan *p = user;
    const struct mh__whatif_outcome none = {0};
    memset(ro, 0, sizeof *ro);
    ro->conf = p->a->conf_text ? p->conf : L->conf;
    ro->conf.memory_fraction = p->a->fraction;
    ro->use_oracle = !p->a->conf_text;
    /* by default the memory the recorded run could use: the device's, less
     * what was not the allocator's to take when it ran out (the CUDA
     * context, other processes), as the driver reported at its OOM */
    ro->capacity = p->a->capacity ? p->a->capacity : mh__whatif_capacity(L, rs ? rs : &none);
    *baseline = 0;
}

/* One pass over the file, gathering what the replays read it again with
 * (the run asked for starts during it), and the first allocator device's
 * input. */
static int load(const struct whatif_plan *p, struct mh__session **s, struct mh__whatif_source **w,
                struct mh__whatif_input *in)
{
    const char *path = p->a->path;
    int rc = mh__session_open(path, s);
    if (rc < 0)
        return rc;
    if ((rc = mh__whatif_source_new(w)) == 0) {
        mh__whatif_source_expect(*w, run_opts, (void *)p);
        rc = mh__session_observe(*s, mh__whatif_source_observer(*w));
    }
    if (rc == 0 && (rc = mh__session_run(*s, 0)) == 0 &&
        (rc = mh__whatif_input(*w, *s, -1, in)) < 0)
        mh__cli_error("%s: %s", path, mh_strerror(rc));
    return rc;
}

/* The what-if run of `ro` and (in `base`) the replay under the recorded
 * settings that tells how far it can be trusted, the two at once. */
static int run_checked(struct mh__whatif_input *L, const struct mh__sim_replay_opts *ro,
                       struct mh__whatif_outcome *base, struct mh__whatif_outcome *out,
                       struct mh__sim_replay_result *res)
{
    int base_rc, rc = mh__whatif_run_with_baseline(L, ro->capacity, ro, base, &base_rc, out, res);
    return base_rc < 0 ? base_rc : rc;
}

static int whatif_main(int argc, char **argv)
{
    struct whatif_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    struct whatif_plan plan = {&a, {0}};
    struct mh__sim_replay_opts ro;
    char err[256];
    int baseline;
    memset(&ro, 0, sizeof ro);
    if (a.conf_text && mh_alloc_conf_parse(a.conf_text, &plan.conf, err, sizeof err))
        return mh__cli_usage_error(&mh__cmd_whatif, "--alloc-conf: %s", err);
    struct mh__session *s = NULL;
    struct mh__whatif_source *w = NULL;
    struct mh__whatif_input L = {0};
    struct mh__whatif_outcome rs = {0}, ss, bs;
    struct mh__sim_replay_result res;
    if ((rc = load(&plan, &s, &w, &L)) == 0) {
        rc = mh__whatif_recorded(&L, &rs);
        run_opts(&plan, &L, &rs, &ro, &baseline);
        if (rc == 0 && !a.conf_text) /* the recorded settings: the run is the baseline */
            rc = mh__whatif_run_picking_ties(&L, &ro, &ss, &res);
        else if (rc == 0)
            rc = run_checked(&L, &ro, &bs, &ss, &res);
        if (rc < 0)
            mh__cli_error("%s: %s", a.path, mh_strerror(rc));
    }
    /* how far the what-if can be trusted: the same replay under the recorded settings */
    const struct mh__whatif_outcome *base = a.conf_text ? &bs : &ss;
    if (rc == 0) {
        struct whatif_view v = {&a, &L, &ro, &rs, &ss, &res, base,
                                mh_reader_meta(mh__session_reader(s), "trace_start") != NULL};
        if (a.json)
            print_json(&v);
        else
            print_text(&v);
    }
    mh__whatif_source_free(w);
    mh__session_close(s);
    return mh__cli_finish(rc == 0 ? MH__EXIT_OK : MH__EXIT_FAIL);
}

const struct mh__cli_command mh__cmd_whatif = {
    "whatif", "replay a recording under other allocator settings", usage, whatif_main};
