/* plot_timeline.c - drawing the main panel of the timeline: stacked live
 * allocations per group, the allocated / reserved / driver curves, the
 * peak, then the markers, the step strip and the legend (see
 * plot_int.h). Input is the per-column data of pass 2. */
#include <stdio.h>
#include <string.h>

#include "font.h"
#include "palette.h"
#include "plot_int.h"

static uint64_t column_top(const struct mh__plot_scan *s, const struct mh__plot_cols *cols)
{
    uint64_t top = s->peak.value;
    for (int i = 0; i < cols->n; i++) {
        if (cols->reserved[i] > top)
            top = cols->reserved[i];
        if (cols->driver[i] > top)
            top = cols->driver[i];
        if (cols->alloc[i] > top)
            top = cols->alloc[i];
    }
    return top ? top : 1;
}

static void draw_areas(struct mh__canvas *c, const struct mh__plot_cols *cols,
                       const struct mh__plot_axis *ya, int x0)
{
    unsigned ng = cols->ngroups + 1;
    for (int i = 0; i < cols->n; i++) {
        const uint64_t *g = cols->groups + (size_t)i * ng;
        uint64_t sum = 0;
        int ybot = mh__plot_axis_px(ya, 0);
        for (unsigned k = 0; k < ng; k++) {
            sum += g[k];
            int y = mh__plot_axis_px(ya, (double)sum);
            uint32_t col = cols->by_category   ? mh__palette_category((int)k)
                           : k < cols->ngroups ? mh__palette_group(k)
                                               : MH__COL_REST;
            if (y < ybot)
                mh__canvas_vline(c, x0 + i, y, ybot - 1, col);
            ybot = y;
        }
    }
}

/* A curve through the column values, joined by vertical steps. */
static void draw_curve(struct mh__canvas *c, const uint64_t *v, int n,
                       const struct mh__plot_axis *ya, int x0, uint32_t rgb, int thick)
{
    int prev = mh__plot_axis_px(ya, (double)v[0]);
    for (int i = 0; i < n; i++) {
        int y = mh__plot_axis_px(ya, (double)v[i]);
        mh__canvas_rect(c, x0 + i, y < prev ? y : prev, thick,
                        (y < prev ? prev - y : y - prev) + thick, rgb);
        prev = y;
    }
}

/* An axis break where idle time was cut: two short slanted strokes across
 * the time axis at x. */
static void axis_break(struct mh__canvas *c, const struct mh__plot_frame *f, int x)
{
    int y = f->y + f->h;
    mh__canvas_rect(c, x - 3, y - 5, 7, 10, MH__COL_BG);
    mh__canvas_line(c, x - 4, y + 4, x - 1, y - 5, MH__COL_AXIS, 1);
    mh__canvas_line(c, x + 1, y + 4, x + 4, y - 5, MH__COL_AXIS, 1);
}

/* Idle stretches cut out of the axis: on the compressed axis hatched, with
 * their real length ("idle 2.1 s"); on every axis that cuts them (compressed,
 * events) marked by a break on the time axis, so a cut is never hidden. */
static void draw_breaks(struct mh__canvas *c, const struct mh__plot_scan *s,
                        const struct mh__plot_frame *f)
{
    if (s->warp.mode != MH__PLOT_X_EVENTS && s->warp.mode != MH__PLOT_X_COMPRESSED)
        return;
    int last = -1000; /* marks at least 16 pixels apart: a run of short cuts is one mark */
    for (int i = 0; i < s->warp.n; i++) {
        double a = mh__plot_warp(&s->warp, s->t0, s->warp.a[i]);
        double b = mh__plot_warp(&s->warp, s->t0, s->warp.a[i] + s->warp.len[i]);
        int x = mh__plot_axis_px(&f->tx, (a + b) / 2);
        if (x > f->x + 3 && x < f->x + f->w - 4 && x - last >= 16) {
            axis_break(c, f, x);
            last = x;
        }
    }
}

static void draw_gaps(struct mh__canvas *c, const struct mh__plot_scan *s,
                      const struct mh__plot_frame *f)
{
    if (s->warp.mode != MH__PLOT_X_COMPRESSED)
        return;
    int free_x = f->x; /* labels never overlap; only the long stretches get one */
    uint64_t longest = 0;
    for (int i = 0; i < s->warp.n; i++)
        longest = s->warp.len[i] > longest ? s->warp.len[i] : longest;
    for (int i = 0; i < s->warp.n; i++) {
        int xa = mh__plot_axis_px(&f->tx, mh__plot_warp(&s->warp, s->t0, s->warp.a[i]));
        int xb = mh__plot_axis_px(&f->tx, mh__plot_warp(&s->warp, s->t0, s->warp.a[i] + s->warp.len[i]));
        if (xb <= f->x || xa >= f->x + f->w)
            continue;
        xa = xa < f->x ? f->x : xa;
        xb = xb > f->x + f->w ? f->x + f->w : xb;
        mh__canvas_hatch(c, xa, f->y, xb - xa > 1 ? xb - xa : 2, f->h, MH__COL_GRID, 6);
        char d[32], text[48];
        snprintf(text, sizeof text, "idle %s", mh__plot_duration(s->warp.len[i], d, sizeof d));
        int w = mh__font_text_width(text, 1), tx = (xa + xb) / 2 - w / 2;
        if (s->warp.len[i] < longest / 4 || tx < free_x || tx + w > f->x + f->w)
            continue;
        mh__canvas_rect(c, tx - 2, f->y + 3, w + 4, MH__FONT_CAP + 4, MH__COL_BG);
        mh__canvas_text(c, tx, f->y + 5, text, MH__COL_MUTED, 1);
        free_x = tx + w + 8;
    }
}

static void draw_peak(struct mh__canvas *c, const struct mh__plot_scan *s,
                      const struct mh__plot_frame *f, const struct mh__plot_axis *ya)
{
    int x = mh__plot_axis_px(&f->tx, mh__plot_warp(&s->warp, s->t0, s->peak.time_ns));
    if (x >= f->x + f->w)
        x = f->x + f->w - 1; /* a peak at the window's last instant */
    int y = mh__plot_axis_px(ya, (double)s->peak.value);
    int tri[6] = {x - 5, y - 11, x + 5, y - 11, x, y - 2};
    mh__canvas_polygon(c, tri, 3, MH__COL_PEAK);
    mh__canvas_vdash(c, x, y, f->y + f->h - 1, MH__COL_PEAK, 2, 3);
    char text[96], b[32], t[32];
    snprintf(text, sizeof text, "peak %s at %s", mh__plot_bytes(s->peak.value, b, sizeof b),
             mh__plot_duration(s->peak.time_ns - s->t0, t, sizeof t));
    int w = mh__font_text_width(text, 1);
    int tx = x + 9 + w < f->x + f->w ? x + 9 : x - 9 - w;
    int ty = y - 18 < f->y + 2 ? f->y + 2 : y - 18;
    mh__canvas_rect(c, tx - 2, ty - 2, w + 4, MH__FONT_CAP + 4, MH__COL_BG);
    mh__canvas_text(c, tx, ty, text, MH__COL_TEXT, 1);
}

int mh__plot_timeline(struct mh__canvas *c, struct mh__session *r, const struct mh__plot_opts *o,
                      const struct mh__plot_scan *s, const struct mh__plot_cols *cols,
                      const struct mh__plot_frame *f)
{
    char sub[256], b1[32], b2[32], t1[32];
    int n = snprintf(sub, sizeof sub, "peak allocated %s at %s",
                     mh__plot_bytes(s->peak.value, b1, sizeof b1),
                     mh__plot_duration(s->peak.time_ns - s->t0, t1, sizeof t1));
    struct mh_step_stats tail; /* a peak after the last complete step */
    if (s->peak.step > 0 && mh_model_tail(s->model, s->device, &tail) == 0 && tail.step == s->peak.step)
        n += snprintf(sub + n, sizeof sub - (size_t)n, " (after step %lld)",
                      (long long)s->peak.step - 1);
    else if (s->peak.step >= 0)
        n += snprintf(sub + n, sizeof sub - (size_t)n, " (step %lld)", (long long)s->peak.step);
    snprintf(sub + n, sizeof sub - (size_t)n, "  |  max reserved %s  |  %llu events%s",
             mh__plot_bytes(s->max_reserved, b2, sizeof b2), (unsigned long long)s->events,
             o->has_steps || o->has_time ? "  |  window of the run" : "");
    mh__plot_title(c, r, o, s->device, "memhist timeline", sub);

    struct mh__plot_axis ya = {.v0 = 0, .v1 = (double)column_top(s, cols) * 1.08, .p0 = f->y + f->h - 1, .p1 = f->y};
    mh__plot_byte_ticks(c, &ya, f->x - 1, f->x, f->x + f->w - 1, f->h / 60);
    mh__plot_time_ticks(c, &f->tx, f->y + f->h, f->y, f->y + f->h - 1);
    draw_gaps(c, s, f);
    draw_areas(c, cols, &ya, f->x);
    mh__plot_markers(c, s, f, f->y, f->y + f->h - 1, 1);
    draw_curve(c, cols->reserved, cols->n, &ya, f->x, MH__COL_RESERVED, 2);
    if (s->has_driver)
        draw_curve(c, cols->driver, cols->n, &ya, f->x, MH__COL_DRIVER, 2);
    draw_curve(c, cols->alloc, cols->n, &ya, f->x, MH__COL_ALLOCATED, 1);
    if (s->peak.time_ns >= cols->t_begin && s->peak.time_ns <= cols->t_end)
        draw_peak(c, s, f, &ya);
    mh__canvas_frame(c, f->x - 1, f->y - 1, f->w + 2, f->h + 2, MH__COL_AXIS);
    draw_breaks(c, s, f);
    mh__plot_strip(c, s, f, cols->t_begin, cols->t_end);
    mh__plot_legend(c, s, f);
    return 0;
}
