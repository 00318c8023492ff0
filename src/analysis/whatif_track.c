/* whatif_track.c - a run's figures for the what-if runner (whatif_int.h):
 * its events go through a model, so the peaks of a replay are computed
 * exactly as the recording's are, and the tracker adds what the model does
 * not keep (allocated memory at the reserved peak, the memory the allocator
 * could have had at an OOM). The recorded run's tracker notes the session's
 * own pass; a replay's owns its model. */
#include <string.h>

#include "whatif_int.h"

int mh__wtrack_open(struct mh__wtrack *t, const struct mh_alloc_conf *conf, int device)
{
    struct mh_model_opts mo;
    memset(t, 0, sizeof *t);
    memset(&mo, 0, sizeof mo);
    mo.conf = *conf;
    t->device = device;
    return mh_model_new(&mo, &t->model);
}

void mh__wtrack_close(struct mh__wtrack *t)
{
    mh_model_free(t->model);
    t->model = NULL;
}

void mh__wtrack_note(struct mh__wtrack *t, const struct mh_event *ev,
                     const struct mh_apply_result *res)
{
    if (ev->kind == MH_EV_OOM)
        t->ooms++;
    t->allocated += res->allocated_delta;
    t->reserved += res->reserved_delta;
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
}

int mh__wtrack_event(void *tracker, const struct mh_event *ev)
{
    struct mh__wtrack *t = tracker;
    struct mh_apply_result res;
    int rc = mh_model_apply(t->model, ev, &res);
    if (rc < 0)
        return rc;
    mh__wtrack_note(t, ev, &res);
    return 0;
}

void mh__wtrack_summarize(const struct mh__wtrack *t, const struct mh_model *m, uint64_t t0_ns,
                          struct mh__whatif_outcome *s)
{
    struct mh_mem_stats st;
    struct mh_peak p;
    memset(s, 0, sizeof *s);
    if (mh_model_stats(m, t->device, &st) == 0) {
        s->end_reserved = st.reserved;
        s->segment_allocs = st.segment_allocs + st.maps;
        s->segment_frees = st.segment_frees + st.unmaps;
    }
    if (mh_model_peak_allocated(m, t->device, &p) == 0)
        s->peak_allocated = p.value;
    if (mh_model_peak_reserved(m, t->device, &p) == 0)
        s->peak_reserved = p.value;
    s->allocated_at_peak = t->allocated_at_peak;
    s->ooms = t->ooms;
    s->oom_available = t->oom_available;
    for (size_t i = 0; i < mh_model_step_count(m, t->device); i++) {
        struct mh_step_stats ss;
        if (mh_model_step(m, t->device, i, &ss) == 0)
            s->retries += ss.retries;
    }
    struct mh_oom_info oi;
    if (mh_model_oom_count(m) > 0 && mh_model_oom(m, 0, &oi) == 0) {
        s->oom = 1;
        s->oom_step = oi.step;
        s->oom_time_ns = oi.time_ns >= t0_ns ? oi.time_ns - t0_ns : 0;
        s->oom_size = oi.request;
    }
}
