/* plot_xmap.c - the timeline's x axis by events or by steps (--x events,
 * --x steps). Both are monotone piecewise-linear maps from time to an axis
 * value, kept as knots (absolute time, value) in the axis (struct
 * mh__plot_warp) and applied by mh__plot_warp() like the compressed axis,
 * so every part of the timeline (columns, curves, markers, strips, peak)
 * places things the same way in every mode.
 *
 * events: pass 1 (plot_scan.c) offers every memory event of the device in
 * the window with its ordinal; every `stride`-th is kept as a knot, the
 * stride doubling (and the knots thinning) when the table is full, so
 * memory stays bounded and the map stays exact to a pixel: event i sits at
 * value i. steps: after pass 1 the model's steps give one knot per step
 * start; the set-up (or whatever comes before the first step in the
 * window) and every step are one unit wide. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "plot_int.h"

static int knot_room(struct mh__plot_warp *w, size_t want)
{
    if (want <= w->capk)
        return 0;
    size_t cap = w->capk ? w->capk * 2 : 64;
    while (cap < want)
        cap *= 2;
    uint64_t *t = realloc(w->kt, cap * sizeof *t);
    if (!t)
        return MH_ENOMEM;
    w->kt = t;
    double *v = realloc(w->kv, cap * sizeof *v);
    if (!v)
        return MH_ENOMEM;
    w->kv = v;
    int64_t *st = realloc(w->kstep, cap * sizeof *st);
    if (!st)
        return MH_ENOMEM;
    w->kstep = st;
    w->capk = cap;
    return 0;
}

static int knot_add(struct mh__plot_warp *w, uint64_t t, double v, int64_t step)
{
    if (w->nk > 0 && t < w->kt[w->nk - 1])
        t = w->kt[w->nk - 1]; /* out-of-order time: never let the map go back */
    if (knot_room(w, w->nk + 1) < 0)
        return MH_ENOMEM;
    w->kt[w->nk] = t;
    w->kv[w->nk] = v;
    w->kstep[w->nk++] = step;
    return 0;
}

int mh__plot_xmap_event(struct mh__plot_warp *w, uint64_t t, uint64_t ordinal)
{
    if (w->stride == 0)
        w->stride = 1;
    w->last_t = t;
    w->last_ord = ordinal;
    if (ordinal % w->stride != 0)
        return 0;
    if (w->nk == MH__PLOT_EVENT_KNOTS) { /* thin out: keep every other knot */
        size_t m = 0;
        for (size_t i = 0; i < w->nk; i += 2) {
            w->kt[m] = w->kt[i];
            w->kstep[m] = w->kstep[i];
            w->kv[m++] = w->kv[i];
        }
        w->nk = m;
        w->stride *= 2;
        if (ordinal % w->stride != 0)
            return 0;
    }
    return knot_add(w, t, (double)ordinal, 0);
}

int mh__plot_xmap_events_finish(struct mh__plot_warp *w, uint64_t first, uint64_t last)
{
    if (w->nk == 0 || w->last_ord == 0) { /* fewer than two events: a time axis */
        w->nk = 0;
        return 0;
    }
    if (w->kv[w->nk - 1] != (double)w->last_ord && knot_add(w, w->last_t, (double)w->last_ord, 0) < 0)
        return MH_ENOMEM;
    if (last > w->kt[w->nk - 1] && knot_add(w, last, (double)w->last_ord, 0) < 0)
        return MH_ENOMEM;
    if (first < w->kt[0]) { /* the window opens before the first memory event */
        if (knot_add(w, 0, 0, 0) < 0)
            return MH_ENOMEM;
        memmove(w->kt + 1, w->kt, (w->nk - 1) * sizeof *w->kt);
        memmove(w->kv + 1, w->kv, (w->nk - 1) * sizeof *w->kv);
        w->kt[0] = first;
        w->kv[0] = 0;
    }
    w->mode = MH__PLOT_X_EVENTS;
    return 0;
}

int mh__plot_xmap_steps(struct mh__plot_warp *w, const struct mh_model *m, int device,
                        uint64_t first, uint64_t last)
{
    struct mh_step_stats st, setup;
    int has_setup = mh_model_setup(m, device, &setup) == 0;
    size_t n = mh_model_step_count(m, device);
    int64_t lead = has_setup ? -1 : -2; /* what the first piece is: set-up, or before a step */
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (mh_model_step(m, device, i, &st) != 0 || st.begin_ns > last)
            continue;
        if (st.begin_ns <= first) {
            lead = st.step; /* the window opens inside this step */
            continue;
        }
        if (w->nk == 0)
            rc = knot_add(w, first, 0, lead);
        if (rc == 0)
            rc = knot_add(w, st.begin_ns, (double)w->nk, st.step);
    }
    if (rc == 0 && w->nk > 0)
        rc = knot_add(w, last, (double)w->nk, INT64_MIN); /* the end of the last piece */
    if (rc < 0)
        return rc;
    w->mode = w->nk > 0 ? MH__PLOT_X_STEPS : MH__PLOT_X_TIME; /* no step in the window: time */
    return 0;
}

/* The compressed axis with the set-up squeezed: knots at the window's ends,
 * every cut's ends and the set-up's end, valued by the idle cuts (warp
 * without knots) then scaled by `scale` up to the set-up's end. */
static int setup_knots(struct mh__plot_warp *w, uint64_t t0, uint64_t first, uint64_t setup_end,
                       uint64_t last, double scale)
{
    uint64_t t[2 * MH__PLOT_GAPS + 3];
    size_t n = 0;
    t[n++] = first;
    for (int i = 0; i < w->n; i++) {
        t[n++] = w->a[i];
        t[n++] = w->a[i] + w->len[i];
    }
    t[n++] = setup_end;
    t[n++] = last;
    for (size_t i = 1; i < n; i++) /* insertion sort: the cuts are in order already */
        for (size_t j = i; j > 0 && t[j] < t[j - 1]; j--) {
            uint64_t x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    double vs = mh__plot_warp(w, t0, setup_end);
    double v[2 * MH__PLOT_GAPS + 3];
    for (size_t i = 0; i < n; i++) { /* all values first: knots change the map */
        double x = mh__plot_warp(w, t0, t[i]);
        v[i] = x <= vs ? x * scale : vs * scale + (x - vs);
    }
    for (size_t i = 0; i < n; i++)
        if (t[i] >= first && t[i] <= last && knot_add(w, t[i], v[i], 0) < 0)
            return MH_ENOMEM;
    return 0;
}

int mh__plot_xmap_squeeze_setup(struct mh__plot_warp *w, const struct mh_model *m, int device,
                                uint64_t t0, uint64_t first, uint64_t last)
{
    struct mh_step_stats setup;
    w->setup_scale = 1;
    if (mh_model_setup(m, device, &setup) != 0 || mh_model_step_count(m, device) == 0)
        return 0;
    uint64_t end = setup.end_ns;
    if (end <= first || end >= last)
        return 0;
    double vs = mh__plot_warp(w, t0, end) - mh__plot_warp(w, t0, first);
    double total = mh__plot_warp(w, t0, last) - mh__plot_warp(w, t0, first);
    double want = (total - vs) * MH__PLOT_SETUP_SHARE / (1 - MH__PLOT_SETUP_SHARE);
    if (vs <= 0 || vs <= want * 1.01)
        return 0;
    double scale = want / vs;
    int rc = setup_knots(w, t0, first, end, last, scale);
    if (rc == 0)
        w->setup_scale = scale;
    return rc;
}

/* Largest knot index whose time is at most `t`; 0 when before the first. */
static size_t knot_at_time(const struct mh__plot_warp *w, uint64_t t)
{
    size_t lo = 0, hi = w->nk;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (w->kt[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

double mh__plot_xmap_value(const struct mh__plot_warp *w, uint64_t t)
{
    if (t <= w->kt[0])
        return w->kv[0];
    size_t j = knot_at_time(w, t);
    if (j + 1 >= w->nk)
        return w->kv[w->nk - 1];
    double dt = (double)(w->kt[j + 1] - w->kt[j]);
    if (dt <= 0)
        return w->kv[j + 1];
    return w->kv[j] + (w->kv[j + 1] - w->kv[j]) * (double)(t - w->kt[j]) / dt;
}

double mh__plot_xmap_time(const struct mh__plot_warp *w, uint64_t t0, double v)
{
    size_t lo = 0, hi = w->nk;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (w->kv[mid] <= v)
            lo = mid;
        else
            hi = mid;
    }
    double t = (double)w->kt[lo];
    if (lo + 1 < w->nk && w->kv[lo + 1] > w->kv[lo] && v > w->kv[lo])
        t += (double)(w->kt[lo + 1] - w->kt[lo]) * (v - w->kv[lo]) / (w->kv[lo + 1] - w->kv[lo]);
    return t - (double)t0;
}

void mh__plot_xmap_free(struct mh__plot_warp *w)
{
    free(w->kt);
    free(w->kv);
    free(w->kstep);
    w->kt = NULL;
    w->kv = NULL;
    w->kstep = NULL;
    w->nk = w->capk = 0;
}
