/* plot_axes.c - human units, value-to-pixel maps and tick marks of the PNG
 * plots (see plot_int.h). Time axes read in ns/us/ms/s and byte axes in
 * B/KiB/MiB/GiB/TiB, with ticks at 1-2-5 steps of the chosen unit. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "font.h"
#include "palette.h"
#include "plot_int.h"

const char *mh__plot_bytes(uint64_t v, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double d = (double)v;
    int u = 0;
    while (d >= 1024.0 && u < 4) {
        d /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)v);
    else
        snprintf(buf, len, "%.*f %s", d < 10 ? 2 : d < 100 ? 1 : 0, d, units[u]);
    return buf;
}

const char *mh__plot_duration(uint64_t ns, char *buf, size_t len)
{
    if (ns < 1000)
        snprintf(buf, len, "%llu ns", (unsigned long long)ns);
    else if (ns < 1000000)
        snprintf(buf, len, "%.1f us", ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, len, "%.1f ms", ns / 1e6);
    else
        snprintf(buf, len, "%.2f s", ns / 1e9);
    return buf;
}

int mh__plot_axis_px(const struct mh__plot_axis *a, double v)
{
    if (a->v1 == a->v0)
        return a->p0;
    double t = (v - a->v0) / (a->v1 - a->v0);
    return a->p0 + (int)floor(t * (a->p1 - a->p0) + 0.5);
}

double mh__plot_nice_step(double span, int n)
{
    if (!(span > 0) || n < 1)
        return 1;
    double raw = span / n;
    double mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* Decimals needed to print multiples of `step` exactly enough. */
static int decimals(double step)
{
    int d = 0;
    while (d < 6 && fabs(step * pow(10, d) - floor(step * pow(10, d) + 0.5)) > 1e-6)
        d++;
    return d;
}

/* --x events: ticks at round event counts ("25k events"). */
static void event_ticks(struct mh__canvas *c, const struct mh__plot_axis *a, int y, int gy0, int gy1)
{
    double span = a->v1 - a->v0;
    int px = a->p1 - a->p0;
    double step = mh__plot_nice_step(span > 0 ? span : 1, px / 110 > 1 ? px / 110 : 1);
    if (step < 1)
        step = 1;
    for (double v = ceil(a->v0 / step) * step; v <= a->v1 + step * 1e-9; v += step) {
        int x = mh__plot_axis_px(a, v);
        mh__canvas_vline(c, x, gy0, gy1, MH__COL_GRID);
        mh__canvas_vline(c, x, y, y + 3, MH__COL_AXIS);
        char text[32];
        if (v >= 1e6)
            snprintf(text, sizeof text, "%gM", v / 1e6);
        else if (v >= 1e3)
            snprintf(text, sizeof text, "%gk", v / 1e3);
        else
            snprintf(text, sizeof text, "%.0f", v);
        int w = mh__font_text_width(text, 1);
        mh__canvas_text(c, x - w / 2, y + 6, text, MH__COL_MUTED, 1);
    }
}

/* 1, 2, 5, 10, 20, 50, ... */
static size_t next_stride(size_t k)
{
    size_t d = 1;
    while (k >= 10 * d)
        d *= 10;
    size_t m = k / d;
    return (m == 1 ? 2 : m == 2 ? 5 : 10) * d;
}

/* --x steps: each piece (set-up, step N) named under its middle; every
 * k-th when they are too narrow for their names. */
static void step_ticks(struct mh__canvas *c, const struct mh__plot_axis *a, int y, int gy0, int gy1)
{
    const struct mh__plot_warp *w = a->warp;
    size_t pieces = w->nk - 1, k = 1;
    int px = a->p1 - a->p0;
    while (k < pieces && (double)px * (double)k / (double)pieces < 64)
        k = next_stride(k);
    int free_x = a->p0 - 1000;
    for (size_t i = 0; i < pieces; i++) {
        int xa = mh__plot_axis_px(a, w->kv[i]), xb = mh__plot_axis_px(a, w->kv[i + 1]);
        mh__canvas_vline(c, xa, y, y + 3, MH__COL_AXIS);
        if (i > 0)
            mh__canvas_vline(c, xa, gy0, gy1, MH__COL_GRID);
        if (w->kstep[i] >= 0 && (size_t)w->kstep[i] % k != 0)
            continue;
        char text[32];
        if (w->kstep[i] == -1)
            snprintf(text, sizeof text, "setup");
        else if (w->kstep[i] < 0)
            snprintf(text, sizeof text, "start");
        else
            snprintf(text, sizeof text, "%s%lld", k == 1 && xb - xa > 60 ? "step " : "",
                     (long long)w->kstep[i]);
        int tw = mh__font_text_width(text, 1), tx = (xa + xb) / 2 - tw / 2;
        if (tx < free_x)
            continue;
        mh__canvas_text(c, tx, y + 6, text, MH__COL_MUTED, 1);
        free_x = tx + tw + 6;
    }
}

void mh__plot_time_ticks(struct mh__canvas *c, const struct mh__plot_axis *a, int y, int gy0,
                         int gy1)
{
    if (a->warp && a->warp->nk > 1 && a->warp->mode == MH__PLOT_X_EVENTS) {
        event_ticks(c, a, y, gy0, gy1);
        return;
    }
    if (a->warp && a->warp->nk > 1 && a->warp->mode == MH__PLOT_X_STEPS) {
        step_ticks(c, a, y, gy0, gy1);
        return;
    }
    double span = a->v1 - a->v0;
    int px = a->p1 - a->p0;
    double step = mh__plot_nice_step(span > 0 ? span : 1, px / 110 > 1 ? px / 110 : 1);
    static const struct { double ns; const char *name; } units[] = {
        {1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};
    size_t u = 0;
    while (u < 3 && step < units[u].ns)
        u++;
    double unit = units[u].ns;
    int dec = decimals(step / unit);
    for (double v = ceil(a->v0 / step) * step; v <= a->v1 + step * 1e-9; v += step) {
        int x = mh__plot_axis_px(a, v);
        mh__canvas_vline(c, x, gy0, gy1, MH__COL_GRID);
        mh__canvas_vline(c, x, y, y + 3, MH__COL_AXIS);
        char text[32];
        double real = a->warp ? mh__plot_unwarp(a->warp, a->t0, v) : v;
        snprintf(text, sizeof text, "%.*f %s", dec, real / unit, units[u].name);
        int w = mh__font_text_width(text, 1);
        mh__canvas_text(c, x - w / 2, y + 6, text, MH__COL_MUTED, 1);
    }
}

void mh__plot_byte_ticks(struct mh__canvas *c, const struct mh__plot_axis *a, int x, int gx0,
                         int gx1, int max_ticks)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double top = a->v1 > 0 ? a->v1 : 1;
    int u = 0;
    double unit = 1;
    while (u < 4 && top / unit >= 1024) {
        unit *= 1024;
        u++;
    }
    double step = mh__plot_nice_step(top / unit, max_ticks) * unit;
    int dec = decimals(step / unit);
    for (double v = 0; v <= top + step * 1e-9; v += step) {
        int y = mh__plot_axis_px(a, v);
        mh__canvas_hline(c, gx0, gx1, y, MH__COL_GRID);
        mh__canvas_hline(c, x - 3, x, y, MH__COL_AXIS);
        char text[32];
        snprintf(text, sizeof text, "%.*f %s", dec, v / unit, names[u]);
        int w = mh__font_text_width(text, 1);
        mh__canvas_text(c, x - 6 - w, y - 3, text, MH__COL_MUTED, 1);
    }
}
