/* plot_scan.c - pass 1 of the timeline: one replay that finds the device,
 * the window's time span, the allocated peak and, for every allocation
 * stack, the bytes it held at that peak (see plot_int.h).
 *
 * Bytes at the peak without a second replay: each stack keeps its live bytes
 * and a copy taken the first time it changes after the latest peak. A stack
 * not touched since that peak still holds its value at the peak; one touched
 * since has the copy. That is O(1) per event and exact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "plot_int.h"

static int is_device_event(const struct mh_event *ev)
{
    switch (ev->kind) {
    case MH_EV_ALLOC: case MH_EV_FREE_REQUESTED: case MH_EV_FREE_COMPLETED:
    case MH_EV_SEGMENT_ALLOC: case MH_EV_SEGMENT_FREE: case MH_EV_SEGMENT_MAP:
    case MH_EV_SEGMENT_UNMAP: case MH_EV_OOM: case MH_EV_DRIVER_ALLOC: case MH_EV_DRIVER_FREE:
        return ev->device >= 0;
    default:
        return 0;
    }
}

static int in_window(const struct mh__plot_opts *o, uint64_t t0, uint64_t t, int64_t step)
{
    if (o->has_steps)
        return step >= o->step_lo && step <= o->step_hi;
    if (o->has_time) {
        uint64_t rel = t >= t0 ? t - t0 : 0;
        return rel >= o->t_lo_ns && rel <= o->t_hi_ns;
    }
    return 1;
}

static struct mh__plot_stack *stack_slot(struct mh__plot_scan *s, uint32_t id)
{
    if (id >= s->nstacks) {
        size_t n = s->nstacks ? s->nstacks : 256;
        while (n <= id)
            n *= 2;
        struct mh__plot_stack *p = realloc(s->stacks, n * sizeof *p);
        if (!p)
            return NULL;
        memset(p + s->nstacks, 0, (n - s->nstacks) * sizeof *p);
        s->stacks = p;
        s->nstacks = n;
    }
    return &s->stacks[id];
}

static int track_stack(struct mh__plot_scan *s, const struct mh_event *ev,
                       const struct mh_apply_result *res)
{
    uint32_t site;
    int rc = mh__plot_site_of(&s->sites, &s->sites.live, s->model, ev, res, &site);
    if (rc < 0)
        return rc;
    struct mh__plot_stack *st = stack_slot(s, site);
    if (!st)
        return MH_ENOMEM;
    if (st->seq != s->peak_seq) {
        st->saved = st->cur;
        st->seq = s->peak_seq;
    }
    st->cur += (uint64_t)res->allocated_delta;
    st->seen = 1;
    return 0;
}

/* Per-event bookkeeping for an event of the plotted device. */
static int on_device_event(struct mh__plot_scan *s, const struct mh_event *ev,
                           const struct mh_apply_result *res, int inside, uint64_t *alloc,
                           uint64_t *reserved)
{
    if (res->block_size && res->allocated_delta && track_stack(s, ev, res) < 0)
        return MH_ENOMEM;
    *alloc += (uint64_t)res->allocated_delta;
    *reserved += (uint64_t)res->reserved_delta;
    if (!inside)
        return 0;
    s->dev_events++;
    if (*alloc > s->peak.value || !s->has_peak) {
        s->has_peak = 1;
        if (*alloc > s->peak.value)
            s->peak_seq++;
        s->peak.value = *alloc;
        s->peak.time_ns = ev->time_ns;
        s->peak.step = mh_model_device_step(s->model, ev->device);
        s->peak.event_index = s->events - 1;
    }
    if (*reserved > s->max_reserved)
        s->max_reserved = *reserved;
    if (ev->kind == MH_EV_DRIVER_ALLOC || ev->kind == MH_EV_DRIVER_FREE) {
        struct mh_mem_stats st;
        s->has_driver = 1;
        if (mh_model_stats(s->model, s->device, &st) == 0 && st.driver_outside > s->max_driver)
            s->max_driver = st.driver_outside;
    }
    return 0;
}

static int device_known(const struct mh_model *m, int device)
{
    for (size_t i = 0; i < mh_model_device_count(m); i++)
        if (mh_model_device_at(m, i) == device)
            return 1;
    return 0;
}

static int offer_axis(const struct mh__plot_opts *o, struct mh__plot_scan *s, uint64_t t);

/* The scan as an observer of the session's pass. */
struct scan_pass {
    const struct mh__plot_opts *o;
    struct mh__plot_scan *s;
    uint64_t alloc, reserved;
};

static int scan_event(void *user, struct mh__session *ses, const struct mh_event *ev,
                      const struct mh_apply_result *res)
{
    struct scan_pass *p = user;
    struct mh__plot_scan *s = p->s;
    s->model = mh__session_model(ses);
    if (s->events == 0) {
        s->from_job_start = p->o->origin_ns && p->o->origin_ns <= ev->time_ns;
        s->t0 = s->from_job_start ? p->o->origin_ns : ev->time_ns;
    }
    s->events++;
    s->sites.scopes += ev->kind == MH_EV_SCOPE_ENTER;
    int inside = in_window(p->o, s->t0, ev->time_ns, mh_model_device_step(s->model, ev->device));
    if (inside) {
        if (s->win_events == 0 || ev->time_ns < s->win_first)
            s->win_first = ev->time_ns;
        if (ev->time_ns > s->win_last)
            s->win_last = ev->time_ns;
        s->win_events++;
    }
    if (!s->has_device && is_device_event(ev)) {
        s->device = ev->device;
        s->has_device = 1;
    }
    int rc = 0;
    if (s->has_device && ev->device == s->device && is_device_event(ev) &&
        (rc = on_device_event(s, ev, res, inside, &p->alloc, &p->reserved)) < 0)
        return rc;
    if (inside && s->has_device && ev->device == s->device && is_device_event(ev))
        return offer_axis(p->o, s, ev->time_ns);
    return 0;
}

/* A memory event of the device inside the window, for the x axis: idle
 * stretches (compressed, and marked on the events axis) and event knots. */
static int offer_axis(const struct mh__plot_opts *o, struct mh__plot_scan *s, uint64_t t)
{
    if (o->x_axis == MH__PLOT_X_COMPRESSED || o->x_axis == MH__PLOT_X_EVENTS) {
        if (s->last_mem_ns)
            mh__plot_warp_offer(&s->warp, s->last_mem_ns, t);
        s->last_mem_ns = t;
    }
    if (o->x_axis == MH__PLOT_X_EVENTS)
        return mh__plot_xmap_event(&s->warp, t, s->dev_events - 1);
    return 0;
}

/* After pass 1: the idle stretches, then the knots of --x events|steps. */
static int finish_axis(const struct mh__plot_opts *o, struct mh__plot_scan *s)
{
    if (s->last_mem_ns && s->win_last > s->last_mem_ns) /* idle to the window's end */
        mh__plot_warp_offer(&s->warp, s->last_mem_ns, s->win_last);
    if (s->dev_events < MH__PLOT_WARP_MIN_EVENTS) /* too sparse to tell idle from busy */
        s->warp.n = 0;
    mh__plot_warp_finish(&s->warp, s->win_last > s->win_first ? s->win_last - s->win_first : 0);
    s->warp.mode = MH__PLOT_X_TIME;
    if (o->x_axis == MH__PLOT_X_EVENTS) {
        int rc = mh__plot_xmap_events_finish(&s->warp, s->win_first, s->win_last);
        if (s->warp.nk == 0)
            s->warp.n = 0; /* too few events: plain time, nothing cut */
        return rc;
    }
    if (o->x_axis == MH__PLOT_X_STEPS && s->has_device)
        return mh__plot_xmap_steps(&s->warp, s->model, s->device, s->win_first, s->win_last);
    if (o->x_axis == MH__PLOT_X_COMPRESSED && s->has_device && !s->event_order) {
        int rc = mh__plot_xmap_squeeze_setup(&s->warp, s->model, s->device, s->t0, s->win_first,
                                             s->win_last);
        if (rc < 0)
            return rc;
    }
    if (o->x_axis == MH__PLOT_X_COMPRESSED && (s->warp.n > 0 || s->warp.nk > 0))
        s->warp.mode = MH__PLOT_X_COMPRESSED;
    return 0;
}

int mh__plot_scan_run(struct mh__session *r, const struct mh__plot_opts *o, struct mh__plot_scan *s,
                      char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->device = o->has_device ? o->device : -1;
    s->has_device = o->has_device;
    s->peak_seq = 1;
    struct scan_pass p = {o, s, 0, 0};
    const struct mh__observer obs = {"plot-scan", &p, NULL, scan_event, NULL};
    int rc = mh__session_pass(r, &obs);
    s->model = mh__session_take_model(r); /* the scan keeps the state at the end */
    if (rc < 0)
        return rc;
    s->read_error = mh__session_read_error(r);
    s->event_order = mh_reader_meta(mh__session_reader(r), "synthetic_times") != NULL;
    if ((rc = finish_axis(o, s)) < 0)
        return rc;
    if (o->has_device && !device_known(s->model, o->device)) {
        size_t n = mh_model_device_count(s->model), used = 0;
        used += (size_t)snprintf(err, errlen, "unknown device %d; the file has ", o->device);
        if (n == 0)
            snprintf(err + used, errlen - used, "no devices");
        for (size_t i = 0; i < n && used < errlen; i++)
            used += (size_t)snprintf(err + used, errlen - used, "%s%s%d",
                                     i == 0 ? (n > 1 ? "devices " : "device ") : "",
                                     i == 0 ? "" : ", ", mh_model_device_at(s->model, i));
        return MH_EINVAL;
    }
    if ((o->has_steps || o->has_time) && s->events > 0 && s->win_events == 0) {
        snprintf(err, errlen, "the %s window holds no events", o->has_steps ? "--steps" : "--time");
        return MH_EINVAL;
    }
    return 0;
}

void mh__plot_scan_free(struct mh__plot_scan *s)
{
    free(s->stacks);
    mh__plot_sites_free(&s->sites);
    mh__plot_xmap_free(&s->warp);
    mh_model_free(s->model);
    memset(s, 0, sizeof *s);
}
