/* plot_strip.c - the timeline's step boundaries, OOM markers and the
 * per-step strip under the main panel: peak reserved and peak allocated per
 * step as overlapping bars, and fragmentation at the step's reserved peak
 * (1 - allocated/reserved, from the model's mh_step_stats), both on the
 * main panel's time axis (see plot_int.h). */
#include <stdint.h>
#include <stdio.h>

#include "font.h"
#include "palette.h"
#include "plot_int.h"

/* Column of a time; the window's last instant maps to the last column
 * (not one past it), so a final OOM stays visible. */
static int time_x(const struct mh__plot_scan *s, const struct mh__plot_frame *f, uint64_t t)
{
    double v = mh__plot_warp(&s->warp, s->t0, t);
    int x = mh__plot_axis_px(&f->tx, v);
    return x == f->x + f->w && v <= f->tx.v1 ? x - 1 : x;
}

static int visible(const struct mh__plot_frame *f, int x)
{
    return x >= f->x && x < f->x + f->w;
}

/* Every k-th step boundary, k in 1, 2, 5, 10, 20, ... so lines stay at
 * least `min_gap` pixels apart. */
static int64_t step_stride(const struct mh__plot_frame *f, size_t visible_steps, int min_gap)
{
    static const int mult[] = {1, 2, 5};
    for (int64_t dec = 1; dec < INT64_MAX / 100; dec *= 10)
        for (int i = 0; i < 3; i++)
            if (visible_steps == 0 || (double)f->w * (double)(mult[i] * dec) / visible_steps >= min_gap)
                return mult[i] * dec;
    return 1;
}

static size_t count_visible(const struct mh__plot_scan *s, const struct mh__plot_frame *f)
{
    size_t n = mh_model_step_count(s->model, s->device), v = 0;
    struct mh_step_stats st;
    for (size_t i = 0; i < n; i++)
        if (mh_model_step(s->model, s->device, i, &st) == 0 && visible(f, time_x(s, f, st.begin_ns)))
            v++;
    return v;
}

static void step_lines(struct mh__canvas *c, const struct mh__plot_scan *s,
                       const struct mh__plot_frame *f, int y0, int y1, int labels)
{
    size_t n = mh_model_step_count(s->model, s->device);
    int64_t k = step_stride(f, count_visible(s, f), 6);
    int last_label = -1000;
    for (size_t i = 0; i < n; i++) {
        struct mh_step_stats st;
        if (mh_model_step(s->model, s->device, i, &st) != 0 || st.step % k != 0)
            continue;
        int x = time_x(s, f, st.begin_ns);
        if (!visible(f, x))
            continue;
        mh__canvas_vdash(c, x, y0, y1, MH__COL_STEP, 3, 2);
        char text[24];
        snprintf(text, sizeof text, "%lld", (long long)st.step);
        int w = mh__font_text_width(text, 1);
        if (labels && x - last_label > w + 8 && x + 2 + w < f->x + f->w) {
            mh__canvas_text(c, x + 2, y0 - 11, text, MH__COL_MUTED, 1);
            last_label = x;
        }
    }
    if (labels && n > 0)
        mh__canvas_text(c, f->x - 30, y0 - 11, "step", MH__COL_MUTED, 1);
    struct mh_step_stats setup;
    if (labels && mh_model_setup(s->model, s->device, &setup) == 0) {
        /* the set-up is its own period: named where it is drawn */
        int xa = time_x(s, f, setup.begin_ns), xb = time_x(s, f, setup.end_ns);
        xa = xa < f->x ? f->x : xa;
        int w = mh__font_text_width("setup", 1);
        if (xb - xa > w + 6 && xb <= f->x + f->w)
            mh__canvas_text(c, xa + (xb - xa - w) / 2, y0 - 11, "setup", MH__COL_MUTED, 1);
    }
}

static void oom_marks(struct mh__canvas *c, const struct mh__plot_scan *s,
                      const struct mh__plot_frame *f, int y0, int y1, int labels)
{
    for (size_t i = 0; i < mh_model_oom_count(s->model); i++) {
        struct mh_oom_info oom;
        if (mh_model_oom(s->model, i, &oom) != 0 || oom.device != s->device)
            continue;
        int x = time_x(s, f, oom.time_ns);
        if (!visible(f, x))
            continue;
        if (x > f->x + f->w - 2)
            x = f->x + f->w - 2;
        mh__canvas_rect(c, x, y0, 2, y1 - y0 + 1, MH__COL_OOM);
        if (labels) {
            mh__canvas_line(c, x - 4, y0 + 2, x + 5, y0 + 11, MH__COL_OOM, 2);
            mh__canvas_line(c, x + 5, y0 + 2, x - 4, y0 + 11, MH__COL_OOM, 2);
            char text[48], b[32];
            snprintf(text, sizeof text, "OOM (%s)", mh__plot_bytes(oom.request, b, sizeof b));
            int w = mh__font_text_width(text, 1);
            int right = x + 9 + w < f->x + f->w;
            mh__canvas_text(c, right ? x + 9 : x - 8 - w, y0 + 14, text, MH__COL_OOM, 1);
        }
    }
}

void mh__plot_markers(struct mh__canvas *c, const struct mh__plot_scan *s,
                      const struct mh__plot_frame *f, int y0, int y1, int labels)
{
    step_lines(c, s, f, y0, y1, labels);
    oom_marks(c, s, f, y0, y1, labels);
}

/* x range of a step clipped to the panel; 0 if it is outside. */
static int step_span(const struct mh__plot_scan *s, const struct mh__plot_frame *f,
                     const struct mh_step_stats *st, uint64_t t_end, int *xa, int *xb)
{
    uint64_t end = st->end_ns > st->begin_ns ? st->end_ns : t_end;
    *xa = time_x(s, f, st->begin_ns);
    *xb = time_x(s, f, end);
    if (*xa < f->x)
        *xa = f->x;
    if (*xb > f->x + f->w - 1)
        *xb = f->x + f->w - 1;
    return *xb >= *xa;
}

static void strip_frame(struct mh__canvas *c, const struct mh__plot_frame *f, int y,
                        const char *name, const char *top)
{
    mh__canvas_frame(c, f->x - 1, y - 1, f->w + 2, f->strip_h + 2, MH__COL_AXIS);
    mh__canvas_text_fit(c, 8, y + f->strip_h - 20, name, MH__COL_MUTED, 1, f->x - 14);
    mh__canvas_text_fit(c, 8, y + f->strip_h - 9, "per step", MH__COL_MUTED, 1, f->x - 14);
    int w = mh__font_text_width(top, 1);
    mh__canvas_text(c, f->x - 6 - w, y, top, MH__COL_MUTED, 1);
}

/* Period i of the strip: the set-up (when the model has one) first, then
 * the steps. Returns 0 or -1. */
static int period(const struct mh__plot_scan *s, int has_setup, size_t i, struct mh_step_stats *st)
{
    if (has_setup && i == 0)
        return mh_model_setup(s->model, s->device, st) == 0 ? 0 : -1;
    return mh_model_step(s->model, s->device, i - (size_t)has_setup, st) == 0 ? 0 : -1;
}

/* The axis title under the strips, naming the x axis mode. */
static void axis_title(const struct mh__plot_scan *s, char *buf, size_t len)
{
    const char *since = s->from_job_start ? "time since the job's start (the earliest recording)"
                                          : "time since the first event";
    if (s->event_order && s->warp.mode != MH__PLOT_X_STEPS) {
        snprintf(buf, len, "order of events (the snapshot has no times; 1 us apart)");
        return;
    }
    switch (s->warp.mode) {
    case MH__PLOT_X_EVENTS:
        snprintf(buf, len, "allocator events of the device, evenly spaced (%s--x time for time)",
                 s->warp.n ? "breaks: idle stretches; " : "");
        break;
    case MH__PLOT_X_STEPS:
        snprintf(buf, len, "steps, each the same width (setup: before the first step; --x time "
                           "for time)");
        break;
    case MH__PLOT_X_COMPRESSED: {
        char setup[48] = "";
        if (s->warp.setup_scale > 0 && s->warp.setup_scale < 1)
            snprintf(setup, sizeof setup, "setup drawn at 1/%.0f scale; ", 1 / s->warp.setup_scale);
        snprintf(buf, len, "%s (%s%s--x time for a linear axis)", since, setup,
                 s->warp.n ? "hatched: idle stretches, compressed; " : "");
        break;
    }
    default:
        snprintf(buf, len, "%s", since);
    }
}

void mh__plot_strip(struct mh__canvas *c, const struct mh__plot_scan *s,
                    const struct mh__plot_frame *f, uint64_t t_begin, uint64_t t_end)
{
    int y1 = f->strip_y, y2 = f->strip_y + f->strip_h + f->strip_gap, h = f->strip_h;
    struct mh_step_stats st;
    int has_setup = mh_model_setup(s->model, s->device, &st) == 0;
    size_t n = mh_model_step_count(s->model, s->device) + (size_t)has_setup;
    uint64_t top = 1;
    int xa, xb;
    for (size_t i = 0; i < n; i++)
        if (period(s, has_setup, i, &st) == 0 && st.end_ns >= t_begin &&
            st.begin_ns <= t_end && step_span(s, f, &st, t_end, &xa, &xb) &&
            st.peak_reserved > top)
            top = st.peak_reserved;
    for (size_t i = 0; i < n; i++) {
        if (period(s, has_setup, i, &st) != 0 || st.end_ns < t_begin ||
            st.begin_ns > t_end || !step_span(s, f, &st, t_end, &xa, &xb))
            continue;
        int w = xb - xa > 2 ? xb - xa : 1; /* one pixel of air between steps */
        int hr = (int)((double)st.peak_reserved / top * h + 0.5);
        int ha = (int)((double)st.peak_allocated / top * h + 0.5);
        mh__canvas_rect(c, xa + 1, y1 + h - hr, w, hr, MH__COL_RESERVED_FILL);
        mh__canvas_rect(c, xa + 1, y1 + h - ha, w, ha, 0x555555u);
        int hf = (int)(st.fragmentation * h + 0.5);
        mh__canvas_rect(c, xa + 1, y2 + h - hf, w, hf, MH__COL_FRAG);
    }
    char b[32];
    mh__plot_bytes(top, b, sizeof b);
    strip_frame(c, f, y1, "peaks", b);
    strip_frame(c, f, y2, "frag.", "100%");
    mh__canvas_hline(c, f->x, f->x + f->w - 1, y2 + h / 2, MH__COL_GRID);
    mh__plot_markers(c, s, f, y1, y2 + h - 1, 0);
    if (n == 0)
        mh__canvas_text(c, f->x + 8, y1 + 4, "no step markers in this run", MH__COL_MUTED, 1);
    char axis[192];
    axis_title(s, axis, sizeof axis);
    int w = mh__font_text_width(axis, 1);
    mh__canvas_text(c, f->x + (f->w - w) / 2, y2 + h + 8, axis, MH__COL_MUTED, 1);
}
