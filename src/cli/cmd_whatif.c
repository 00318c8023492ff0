/* cmd_whatif.c - `memhist whatif FILE`: replays a recorded run's allocation
 * requests through the simulator under other allocator settings or another
 * device size, and prints the recorded run (replayed through the model) and
 * the what-if run side by side. Without --alloc-conf it replays under the
 * recorded settings and reports how many allocator events the simulator
 * reproduced exactly (kind, address, size, position). */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
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
    "recorded allocator events. Only the first device of a multi-device file is\n"
    "replayed; memory allocated outside the caching allocator is not modelled.\n\n"
    "options:\n"
    "  --alloc-conf STR      settings to try (PYTORCH_CUDA_ALLOC_CONF syntax), e.g.\n"
    "                        expandable_segments:True\n"
    "  --device-memory SIZE  device capacity (default: what the recorded run could\n"
    "                        use: the device's total memory, less what the driver\n"
    "                        did not have free at a recorded OOM; else unlimited)\n"
    "  --memory-fraction F   per-process memory fraction in (0, 1]\n"
    "  --json                print one JSON object\n"
    "  -h, --help            show this help\n";

extern const struct mh_cli_command mh__cmd_whatif;

struct run_summary {
    uint64_t peak_allocated, peak_reserved, end_reserved;
    uint64_t allocated_at_peak;
    uint64_t segment_allocs, segment_frees, retries;
    int oom;
    int64_t oom_step;
    uint64_t oom_time_ns, oom_size;
};

/* Feeds events to a model and tracks allocated memory at the reserved peak. */
struct tracker {
    struct mh_model *model;
    int device;
    int64_t allocated, reserved;
    uint64_t peak_reserved, allocated_at_peak;
    uint64_t oom_available; /* least reserved + driver-free memory at an OOM, 0 if none */
    int err;
};

static int track(void *user, const struct mh_event *ev)
{
    struct tracker *t = user;
    struct mh_apply_result res;
    int rc = mh_model_apply(t->model, ev, &res);
    if (rc < 0)
        return t->err = rc;
    t->allocated += res.allocated_delta;
    t->reserved += res.reserved_delta;
    if (ev->kind == MH_EV_OOM && ev->addr && t->reserved >= 0) {
        /* what the allocator could have had: its segments plus what the driver had left */
        uint64_t avail = (uint64_t)t->reserved + ev->addr;
        if (!t->oom_available || avail < t->oom_available)
            t->oom_available = avail;
    }
    /* as the model's per-step statistics do: of the moments at the reserved
     * peak, the one with the most allocated (a segment is reserved just before
     * the allocation that needs it) */
    uint64_t allocated = t->allocated > 0 ? (uint64_t)t->allocated : 0;
    if (t->reserved > 0 && (uint64_t)t->reserved > t->peak_reserved) {
        t->peak_reserved = (uint64_t)t->reserved;
        t->allocated_at_peak = allocated;
    } else if ((uint64_t)t->reserved == t->peak_reserved && allocated > t->allocated_at_peak) {
        t->allocated_at_peak = allocated;
    }
    return 0;
}

static int tracker_open(struct tracker *t, const struct mh_alloc_conf *conf, int device)
{
    struct mh_model_opts mo;
    memset(t, 0, sizeof *t);
    memset(&mo, 0, sizeof mo);
    mo.conf = *conf;
    t->device = device;
    return mh_model_new(&mo, &t->model);
}

static void summarize(struct tracker *t, uint64_t t0, struct run_summary *s)
{
    struct mh_mem_stats st;
    struct mh_peak p;
    memset(s, 0, sizeof *s);
    mh_model_finish(t->model);
    if (mh_model_stats(t->model, t->device, &st) == 0) {
        s->end_reserved = st.reserved;
        s->segment_allocs = st.segment_allocs + st.maps;
        s->segment_frees = st.segment_frees + st.unmaps;
    }
    if (mh_model_peak_allocated(t->model, t->device, &p) == 0)
        s->peak_allocated = p.value;
    if (mh_model_peak_reserved(t->model, t->device, &p) == 0)
        s->peak_reserved = p.value;
    s->allocated_at_peak = t->allocated_at_peak;
    for (size_t i = 0; i < mh_model_step_count(t->model, t->device); i++) {
        struct mh_step_stats ss;
        if (mh_model_step(t->model, t->device, i, &ss) == 0)
            s->retries += ss.retries;
    }
    struct mh_oom_info oi;
    if (mh_model_oom_count(t->model) > 0 && mh_model_oom(t->model, 0, &oi) == 0) {
        s->oom = 1;
        s->oom_step = oi.step;
        s->oom_time_ns = oi.time_ns >= t0 ? oi.time_ns - t0 : 0;
        s->oom_size = oi.request;
    }
}

struct whatif_args {
    const char *path, *conf_text;
    uint64_t capacity;
    double fraction;
    int json;
};

static int parse_args(int argc, char **argv, struct whatif_args *a)
{
    static const struct option opts[] = {
        {"alloc-conf", required_argument, NULL, 'c'}, {"device-memory", required_argument, NULL, 'm'},
        {"memory-fraction", required_argument, NULL, 'f'}, {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0}};
    const struct mh_cli_command *cmd = &mh__cmd_whatif;
    int c;
    char *end;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'c': a->conf_text = optarg; break;
        case 'j': a->json = 1; break;
        case 'm':
            if (mh__cli_parse_size(optarg, &a->capacity) || a->capacity == 0)
                return mh__cli_usage_error(cmd, "--device-memory: bad size '%s' (e.g. 80GiB)",
                                           optarg);
            break;
        case 'f':
            a->fraction = strtod(optarg, &end);
            if (*end || !(a->fraction > 0.0 && a->fraction <= 1.0))
                return mh__cli_usage_error(cmd, "--memory-fraction: bad value '%s' (in (0, 1])",
                                           optarg);
            break;
        default:
            return mh__cli_usage_error(cmd, "unknown option or missing value: '%s'",
                                      argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return mh__cli_usage_error(cmd, "missing FILE");
    if (optind + 1 < argc)
        return mh__cli_usage_error(cmd, "one FILE only (got '%s' too)", argv[optind + 1]);
    a->path = argv[optind];
    return 0;
}

struct whatif_view {
    const struct whatif_args *a;
    const struct mh_whatif_input *L;
    const struct mh_sim_replay_opts *ro;
    const struct run_summary *rec, *sim;
    const struct mh_sim_replay_result *res;
};

static double frag(const struct run_summary *s)
{
    return s->peak_reserved ? 1.0 - (double)s->allocated_at_peak / (double)s->peak_reserved : 0.0;
}

static double match_pct(const struct mh_sim_replay_result *r)
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

static const char *oom_text(const struct run_summary *s, char *buf, size_t len)
{
    char b1[32], b2[32];
    if (!s->oom)
        snprintf(buf, len, "no");
    else
        snprintf(buf, len, "yes: step %" PRId64 ", at %s, %s", s->oom_step,
                 mh__cli_duration(s->oom_time_ns, b1), mh__cli_bytes(s->oom_size, b2));
    return buf;
}

static void row_bytes(const char *name, uint64_t a, uint64_t b)
{
    char b1[32], b2[32];
    printf("%-32s %-22s %s\n", name, mh__cli_bytes(a, b1), mh__cli_bytes(b, b2));
}

static void print_text(const struct whatif_view *v)
{
    char c1[512], c2[512], b1[32], b2[32];
    const struct run_summary *r = v->rec, *s = v->sim;
    printf("file %s\n\n", v->a->path);
    printf("%-32s %-22s %s\n", "", "recorded", "what-if");
    printf("%-32s %-22s %s\n", "allocator settings", conf_text(&v->L->conf, c1, sizeof c1),
           conf_text(&v->ro->conf, c2, sizeof c2));
    printf("%-32s %-22s %s\n", "device memory",
           v->L->total_bytes ? mh__cli_bytes(v->L->total_bytes, b1) : "unknown",
           v->ro->capacity ? mh__cli_bytes(v->ro->capacity, b2) : "unlimited");
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
    if (v->ro->use_oracle)
        printf("replay fidelity: %.2f %% of %" PRIu64 " recorded allocator events reproduced "
               "exactly (kind, address, size, order)\n",
               match_pct(v->res), v->res->recorded_alloc_events);
    if (v->ro->use_oracle)
        printf("placement: %" PRIu64 " of %" PRIu64 " allocations at the recorded address\n",
               v->res->placed, v->res->allocs);
}

static void json_run(struct mh_json *j, const char *key, const struct run_summary *s,
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
    struct mh_sink sink;
    struct mh_json j;
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
    mh__json_end_object(&j);
    mh__sink_puts(&sink, "\n");
}

static int whatif_main(int argc, char **argv)
{
    struct whatif_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    struct mh_sim_replay_opts ro;
    char err[256];
    memset(&ro, 0, sizeof ro);
    if (a.conf_text && mh_alloc_conf_parse(a.conf_text, &ro.conf, err, sizeof err))
        return mh__cli_usage_error(&mh__cmd_whatif, "--alloc-conf: %s", err);
    struct mh_whatif_input L;
    if (mh__whatif_load(a.path, -1, &L) < 0)
        return MH_EXIT_FAIL;
    if (L.damage[0])
        mh__cli_error("warning: %s: %s; using the events before that point", a.path, L.damage);
    if (!a.conf_text)
        ro.conf = L.conf;
    ro.conf.memory_fraction = a.fraction;
    ro.use_oracle = !a.conf_text;
    struct tracker rec, sim;
    memset(&rec, 0, sizeof rec);
    memset(&sim, 0, sizeof sim);
    struct run_summary rs, ss;
    struct mh_sim_replay_result res;
    uint64_t t0 = L.n ? L.ev[0].time_ns : 0;
    rc = tracker_open(&rec, &L.conf, L.device);
    for (size_t i = 0; i < L.n && rc == 0; i++)
        rc = track(&rec, &L.ev[i]);
    /* by default the memory the recorded run could use: the device's, less what
     * was not the allocator's to take when it ran out (the CUDA context, other
     * processes), as the driver reported at its OOM */
    ro.capacity = a.capacity ? a.capacity : L.total_bytes;
    if (!a.capacity && rec.oom_available && (!ro.capacity || rec.oom_available < ro.capacity))
        ro.capacity = rec.oom_available;
    if (rc == 0)
        rc = tracker_open(&sim, &ro.conf, 0);
    ro.emit = track;
    ro.emit_user = &sim;
    if (rc == 0)
        rc = mh__sim_replay(L.ev, L.n, &ro, &res);
    if (rc < 0) {
        mh__cli_error("%s: %s", a.path, mh_strerror(rc));
        mh_model_free(rec.model);
        mh_model_free(sim.model);
        mh__whatif_input_free(&L);
        return MH_EXIT_FAIL;
    }
    summarize(&rec, t0, &rs);
    summarize(&sim, t0, &ss);
    struct whatif_view v = {&a, &L, &ro, &rs, &ss, &res};
    if (a.json)
        print_json(&v);
    else
        print_text(&v);
    mh_model_free(rec.model);
    mh_model_free(sim.model);
    mh__whatif_input_free(&L);
    return mh__cli_finish(MH_EXIT_OK);
}

const struct mh_cli_command mh__cmd_whatif = {
    "whatif", "replay a recording under other allocator settings", usage, whatif_main};
