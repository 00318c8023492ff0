/* whatif_check.c - the what-if runner (see whatif_check.h). Both runs feed
 * their events to a fresh model, so their peaks are computed exactly as the
 * recording's are. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "whatif_check.h"

/* ---- the events of a pass ----------------------------------------------------- */
struct mh_whatif_events {
    struct mh_event *ev;
    size_t n, cap;
    struct mh_observer obs;
};

static int keep_begin(void *user, struct mh_session *s)
{
    (void)s;
    ((struct mh_whatif_events *)user)->n = 0;
    return 0;
}

static int keep_event(void *user, struct mh_session *s, const struct mh_event *ev,
                      const struct mh_apply_result *res)
{
    struct mh_whatif_events *e = user;
    (void)s;
    (void)res;
    if (MH__GROW(e->ev, e->n, e->cap, 65536) < 0)
        return MH_ENOMEM;
    e->ev[e->n++] = *ev;
    return 0;
}

int mh__whatif_events_new(struct mh_whatif_events **out)
{
    struct mh_whatif_events *e = calloc(1, sizeof *e);
    if (!e)
        return MH_ENOMEM;
    e->obs = (struct mh_observer){"whatif-events", e, keep_begin, keep_event, NULL};
    *out = e;
    return 0;
}

void mh__whatif_events_free(struct mh_whatif_events *e)
{
    if (e)
        free(e->ev);
    free(e);
}

const struct mh_observer *mh__whatif_events_observer(struct mh_whatif_events *e)
{
    return &e->obs;
}

/* ---- one device's input --------------------------------------------------------- */
static int first_device(const struct mh_whatif_events *e)
{
    for (size_t i = 0; i < e->n; i++)
        if (mh__sim_is_allocator_kind(e->ev[i].kind))
            return e->ev[i].device;
    return -1;
}

static int other_device(const struct mh_whatif_events *e, int device)
{
    for (size_t i = 0; i < e->n; i++)
        if (mh__sim_is_allocator_kind(e->ev[i].kind) && e->ev[i].device != device)
            return 1;
    return 0;
}

int mh__whatif_input(const struct mh_whatif_events *e, struct mh_session *s, int device,
                     struct mh_whatif_input *in)
{
    memset(in, 0, sizeof *in);
    in->device = device < 0 ? first_device(e) : device;
    in->conf = *mh__session_conf(s);
    struct mh_device_info d;
    mh__device_info(mh__session_reader(s), in->device, &d);
    in->total_bytes = d.total_bytes;
    in->ev = e->ev;
    in->n = e->n;
    if (!other_device(e, in->device))
        return 0;
    if (!(in->owned = malloc((e->n ? e->n : 1) * sizeof *in->owned)))
        return MH_ENOMEM;
    in->n = 0;
    for (size_t i = 0; i < e->n; i++)
        if (!mh__sim_is_allocator_kind(e->ev[i].kind) || e->ev[i].device == in->device)
            in->owned[in->n++] = e->ev[i];
    in->ev = in->owned;
    return 0;
}

void mh__whatif_input_free(struct mh_whatif_input *in)
{
    free(in->owned);
    memset(in, 0, sizeof *in);
}

/* ---- the runs ------------------------------------------------------------------- */
/* Feeds events to a model and tracks allocated memory at the reserved peak. */
struct tracker {
    struct mh_model *model;
    int device;
    int64_t allocated, reserved;
    uint64_t peak_reserved, allocated_at_peak, ooms;
    uint64_t oom_available; /* least reserved + driver-free memory at an OOM, 0 if none */
};

static int track(void *user, const struct mh_event *ev)
{
    struct tracker *t = user;
    struct mh_apply_result res;
    int rc = mh_model_apply(t->model, ev, &res);
    if (rc < 0)
        return rc;
    if (ev->kind == MH_EV_OOM)
        t->ooms++;
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

static void summarize(struct tracker *t, uint64_t t0, struct mh_whatif_outcome *s)
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
    s->ooms = t->ooms;
    s->oom_available = t->oom_available;
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

static uint64_t first_time(const struct mh_whatif_input *in)
{
    return in->n ? in->ev[0].time_ns : 0;
}

int mh__whatif_recorded(const struct mh_whatif_input *in, struct mh_whatif_outcome *out)
{
    struct tracker t;
    int rc = tracker_open(&t, &in->conf, in->device);
    for (size_t i = 0; i < in->n && rc == 0; i++)
        rc = track(&t, &in->ev[i]);
    if (rc == 0)
        summarize(&t, first_time(in), out);
    mh_model_free(t.model);
    return rc;
}

/* Percent of the allocator events the simulator reproduced as recorded
 * (same kind, address and size at the same position). */
static double match_percent(const struct mh_sim_replay_result *r)
{
    uint64_t n = r->recorded_alloc_events > r->simulated_alloc_events ? r->recorded_alloc_events
                                                                      : r->simulated_alloc_events;
    return n ? 100.0 * (double)r->matched / (double)n : 100.0;
}

static double percent(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 100.0;
}

static void replay_figures(const struct mh_sim_replay_result *r, struct mh_whatif_outcome *out)
{
    out->match = match_percent(r);
    out->events = r->recorded_alloc_events;
    out->placed = percent(r->placed, r->allocs);
    out->segment_match = percent(r->matched_segment_events, r->recorded_segment_events);
    out->seeded_segments = r->seeded_segments;
    out->seeded_blocks = r->seeded_blocks;
    out->seeded_unknown = r->seeded_unknown;
}

int mh__whatif_run(const struct mh_whatif_input *in, const struct mh_sim_replay_opts *ro,
                   struct mh_whatif_outcome *out, struct mh_sim_replay_result *res)
{
    struct tracker t;
    struct mh_sim_replay_result own;
    struct mh_sim_replay_opts o = *ro;
    o.address_ties = in->address_ties;
    if (!res)
        res = &own;
    int rc = tracker_open(&t, &ro->conf, 0); /* the simulator emits device 0 */
    o.emit = track;
    o.emit_user = &t;
    if (!o.progress.fn)
        o.progress = mh__progress_default();
    if (rc == 0)
        rc = mh__sim_replay(in->ev, in->n, &o, res);
    if (rc == 0) {
        summarize(&t, first_time(in), out);
        replay_figures(res, out);
    }
    mh_model_free(t.model);
    return rc;
}

static struct mh_sim_replay_opts baseline_opts(const struct mh_whatif_input *in, uint64_t capacity)
{
    struct mh_sim_replay_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.conf = in->conf;
    ro.capacity = capacity;
    ro.use_oracle = 1;
    ro.progress_what = "replay under the recorded settings";
    return ro;
}

int mh__whatif_baseline(const struct mh_whatif_input *in, uint64_t capacity,
                        struct mh_whatif_outcome *out)
{
    struct mh_sim_replay_opts ro = baseline_opts(in, capacity);
    return mh__whatif_run(in, &ro, out, NULL);
}

int mh__whatif_run_picking_ties(struct mh_whatif_input *in, const struct mh_sim_replay_opts *ro,
                                struct mh_whatif_outcome *out, struct mh_sim_replay_result *res)
{
    in->address_ties = 0;
    int rc = mh__whatif_run(in, ro, out, res);
    if (rc < 0 || out->events == 0 || out->match >= 100.0)
        return rc;
    struct mh_sim_replay_opts again = *ro;
    struct mh_whatif_outcome other;
    struct mh_sim_replay_result other_res;
    again.progress_what = "replay again, best-fit ties by address";
    in->address_ties = 1;
    rc = mh__whatif_run(in, &again, &other, &other_res);
    in->address_ties = rc == 0 && other.match > out->match;
    if (in->address_ties) {
        *out = other;
        if (res)
            *res = other_res;
    }
    return rc < 0 ? rc : 0;
}

int mh__whatif_pick_ties(struct mh_whatif_input *in, uint64_t capacity,
                         struct mh_whatif_outcome *out)
{
    struct mh_sim_replay_opts ro = baseline_opts(in, capacity);
    return mh__whatif_run_picking_ties(in, &ro, out, NULL);
}

uint64_t mh__whatif_capacity(const struct mh_whatif_input *in, const struct mh_whatif_outcome *recorded)
{
    uint64_t capacity = in->total_bytes;
    if (recorded->oom_available && (!capacity || recorded->oom_available < capacity))
        capacity = recorded->oom_available;
    return capacity;
}

int mh__whatif_checked(const struct mh_whatif_outcome *base)
{
    return base && base->events > 0 && base->match >= MH_WHATIF_CHECKED_MATCH;
}
