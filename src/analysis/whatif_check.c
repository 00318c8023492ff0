/* whatif_check.c - the what-if runner (see whatif_check.h): one device's
 * input, the recorded run, and the replays under the recorded settings and
 * under others, each reading the input again through its own cursors
 * (whatif_source.c) and, but for the baselines, feeding its events to a
 * fresh model (whatif_track.c). Replays that do not depend on one another
 * run on two threads (whatif_jobs.c). */
#include <string.h>

#include "whatif_int.h"

/* ---- one device's input ---------------------------------------------------------- */
/* The time of the input's first event: the pass's first unless that is
 * another device's allocator event. */
static int input_t0(const struct mh__whatif_input *in, uint64_t *t0)
{
    struct mh__whatif_feed feed;
    struct mh__sim_source src;
    struct mh_event ev;
    void *cur;
    *t0 = in->src->t0_ns;
    if (mh__whatif_source_whole(in->src, in->device))
        return 0;
    mh__whatif_feed(in, &feed, &src);
    int rc = src.open(src.user, &cur);
    if (rc < 0)
        return rc;
    rc = src.next(cur, &ev);
    *t0 = rc == 1 ? ev.time_ns : 0;
    src.close(cur);
    return rc < 0 ? rc : 0;
}

int mh__whatif_input(const struct mh__whatif_source *w, struct mh__session *s, int device,
                     struct mh__whatif_input *in)
{
    memset(in, 0, sizeof *in);
    in->src = w;
    in->events = w->events;
    in->device = device < 0 ? w->first_device : device;
    in->conf = *mh__session_conf(s);
    struct mh_device_info d;
    mh__device_info(mh__session_reader(s), in->device, &d);
    in->total_bytes = d.total_bytes;
    return input_t0(in, &in->t0_ns);
}

/* ---- the runs ------------------------------------------------------------------- */
int mh__whatif_recorded(const struct mh__whatif_input *in, struct mh__whatif_outcome *out)
{
    if (mh__whatif_source_recorded(in->src, in->device, out))
        return 0;
    /* other devices allocated too: the input alone through a model of its own */
    struct mh__wtrack t;
    struct mh__whatif_feed feed;
    struct mh__sim_source src;
    struct mh_event ev;
    void *cur = NULL;
    mh__whatif_feed(in, &feed, &src);
    int rc = mh__wtrack_open(&t, &in->conf, in->device);
    if (rc == 0)
        rc = src.open(src.user, &cur);
    while (rc == 0 && (rc = src.next(cur, &ev)) == 1)
        rc = mh__wtrack_event(&t, &ev);
    src.close(cur);
    if (rc == 0) {
        mh_model_finish(t.model);
        mh__wtrack_summarize(&t, t.model, in->t0_ns, out);
    }
    mh__wtrack_close(&t);
    return rc;
}

/* Percent of the allocator events the simulator reproduced as recorded
 * (same kind, address and size at the same position). */
static double match_percent(const struct mh__sim_replay_result *r)
{
    uint64_t n = r->recorded_alloc_events > r->simulated_alloc_events ? r->recorded_alloc_events
                                                                      : r->simulated_alloc_events;
    return n ? 100.0 * (double)r->matched / (double)n : 100.0;
}

static double percent(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 100.0;
}

static void replay_figures(const struct mh__sim_replay_result *r, struct mh__whatif_outcome *out)
{
    out->match = match_percent(r);
    out->events = r->recorded_alloc_events;
    out->placed = percent(r->placed, r->allocs);
    out->segment_match = percent(r->matched_segment_events, r->recorded_segment_events);
    out->seeded_segments = r->seeded_segments;
    out->seeded_blocks = r->seeded_blocks;
    out->seeded_unknown = r->seeded_unknown;
}

int mh__whatif_replay_now(const struct mh__whatif_input *in, const struct mh__sim_replay_opts *ro,
                          int baseline, struct mh__whatif_outcome *out,
                          struct mh__sim_replay_result *res)
{
    struct mh__wtrack t = {0};
    struct mh__sim_replay_result own;
    struct mh__sim_replay_opts o = *ro;
    struct mh__whatif_feed feed;
    struct mh__sim_source src;
    if (!res)
        res = &own;
    int rc = baseline ? 0 : mh__wtrack_open(&t, &ro->conf, 0); /* the simulator emits device 0 */
    o.emit = baseline ? NULL : mh__wtrack_event;
    o.emit_user = baseline ? NULL : &t;
    if (!o.progress.fn)
        o.progress = mh__progress_default();
    mh__whatif_feed(in, &feed, &src);
    if (rc == 0)
        rc = mh__sim_replay(&src, &o, res);
    if (rc == 0) {
        memset(out, 0, sizeof *out);
        if (!baseline) {
            mh_model_finish(t.model);
            mh__wtrack_summarize(&t, t.model, in->t0_ns, out);
        }
        replay_figures(res, out);
    }
    mh__wtrack_close(&t);
    return rc;
}

int mh__whatif_replay(const struct mh__whatif_input *in, const struct mh__sim_replay_opts *ro,
                      int baseline, struct mh__whatif_outcome *out,
                      struct mh__sim_replay_result *res)
{
    if (mh__wexpect_take(in, ro, baseline, out, res))
        return 0;
    return mh__whatif_replay_now(in, ro, baseline, out, res);
}

int mh__whatif_run(const struct mh__whatif_input *in, const struct mh__sim_replay_opts *ro,
                   struct mh__whatif_outcome *out, struct mh__sim_replay_result *res)
{
    struct mh__sim_replay_opts o = *ro;
    o.address_ties = in->address_ties;
    return mh__whatif_replay(in, &o, 0, out, res);
}

static struct mh__sim_replay_opts baseline_opts(const struct mh__whatif_input *in, uint64_t capacity)
{
    struct mh__sim_replay_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.conf = in->conf;
    ro.capacity = capacity;
    ro.use_oracle = 1;
    ro.progress_what = "replay under the recorded settings";
    ro.address_ties = in->address_ties;
    return ro;
}

int mh__whatif_baseline(const struct mh__whatif_input *in, uint64_t capacity,
                        struct mh__whatif_outcome *out)
{
    struct mh__sim_replay_opts ro = baseline_opts(in, capacity);
    return mh__whatif_replay(in, &ro, 1, out, NULL);
}

void mh__whatif_expect_baseline(void *user, const struct mh__whatif_input *in,
                                const struct mh__whatif_outcome *recorded,
                                struct mh__sim_replay_opts *ro, int *baseline)
{
    const struct mh__whatif_outcome none = {0};
    (void)user;
    *ro = baseline_opts(in, mh__whatif_capacity(in, recorded ? recorded : &none));
    ro->address_ties = 0;
    *baseline = 1;
}

/* Whether a replay under the recorded settings leaves the tie rule open:
 * it ran, had events to compare and did not reproduce all of them. */
static int ties_open(int rc, const struct mh__whatif_outcome *first)
{
    return rc == 0 && first->events > 0 && first->match < 100.0;
}

static const char again_what[] = "replay again, best-fit ties by address";

/* The run under the recorded settings picking the tie rule, as
 * mh__whatif_run_picking_ties, with or without the model. */
static int pick(struct mh__whatif_input *in, const struct mh__sim_replay_opts *ro, int baseline,
                struct mh__whatif_outcome *out, struct mh__sim_replay_result *res)
{
    struct mh__sim_replay_opts o = *ro;
    o.address_ties = in->address_ties = 0;
    int rc = mh__whatif_replay(in, &o, baseline, out, res);
    if (!ties_open(rc, out))
        return rc;
    struct mh__whatif_outcome other;
    struct mh__sim_replay_result other_res;
    o.progress_what = again_what;
    o.address_ties = 1;
    rc = mh__whatif_replay(in, &o, baseline, &other, &other_res);
    in->address_ties = rc == 0 && other.match > out->match;
    if (in->address_ties) {
        *out = other;
        if (res)
            *res = other_res;
    }
    return rc < 0 ? rc : 0;
}

int mh__whatif_run_picking_ties(struct mh__whatif_input *in, const struct mh__sim_replay_opts *ro,
                                struct mh__whatif_outcome *out, struct mh__sim_replay_result *res)
{
    return pick(in, ro, 0, out, res);
}

int mh__whatif_pick_ties(struct mh__whatif_input *in, uint64_t capacity,
                         struct mh__whatif_outcome *out)
{
    struct mh__sim_replay_opts ro = baseline_opts(in, capacity);
    return pick(in, &ro, 1, out, NULL);
}

/* A baseline at `capacity` and the what-if `ro`, both under tie rule
 * `ties`, at once. */
static void pair(const struct mh__whatif_input *in, uint64_t capacity,
                 const struct mh__sim_replay_opts *ro, int ties, struct mh__whatif_job job[2])
{
    memset(job, 0, 2 * sizeof *job);
    job[0].ro = baseline_opts(in, capacity);
    job[0].ro.address_ties = ties;
    job[0].baseline = 1;
    job[1].ro = *ro;
    job[1].ro.address_ties = ties;
    if (ties) {
        job[0].ro.progress_what = again_what;
        if (!job[1].ro.progress_what)
            job[1].ro.progress_what = "what-if replay, best-fit ties by address";
    }
    mh__whatif_jobs(in, job, 2);
}

int mh__whatif_run_with_baseline(struct mh__whatif_input *in, uint64_t base_capacity,
                                 const struct mh__sim_replay_opts *ro,
                                 struct mh__whatif_outcome *base, int *base_rc,
                                 struct mh__whatif_outcome *out, struct mh__sim_replay_result *res)
{
    struct mh__whatif_job first[2], second[2];
    const struct mh__whatif_job *run = &first[1];
    pair(in, base_capacity, ro, 0, first);
    in->address_ties = 0;
    *base = first[0].out;
    *base_rc = first[0].rc;
    if (ties_open(first[0].rc, &first[0].out)) {
        pair(in, base_capacity, ro, 1, second);
        in->address_ties = second[0].rc == 0 && second[0].out.match > first[0].out.match;
        *base_rc = second[0].rc < 0 ? second[0].rc : 0;
        if (in->address_ties) {
            *base = second[0].out;
            run = &second[1];
        }
    }
    *out = run->out;
    if (res)
        *res = run->res;
    return run->rc;
}

int mh__whatif_run_all(const struct mh__whatif_input *in, struct mh__whatif_job *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        jobs[i].ro.address_ties = in->address_ties;
    return mh__whatif_jobs(in, jobs, n);
}

uint64_t mh__whatif_capacity(const struct mh__whatif_input *in, const struct mh__whatif_outcome *recorded)
{
    uint64_t capacity = in->total_bytes;
    if (recorded->oom_available && (!capacity || recorded->oom_available < capacity))
        capacity = recorded->oom_available;
    return capacity;
}

int mh__whatif_checked(const struct mh__whatif_outcome *base)
{
    return base && base->events > 0 && base->match >= MH__WHATIF_CHECKED_MATCH;
}
