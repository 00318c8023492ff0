/* plot_fit.c - draws the PNG of `memhist fit` (plot_fit.h): a panel with
 * the value on the x axis and bytes on the y axis; for each kind of card
 * its runs that completed joined in value order (filled dots) and the runs
 * that ran out (crosses, at the reserved memory when they ran out); a
 * dashed line at each card's usable memory, labelled on the right, with
 * the largest value that fits it marked by a ring on the line. Colours are
 * dark line colours from Tol's and Okabe-Ito's schemes. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canvas.h"
#include "font.h"
#include "memhist/error.h"
#include "palette.h"
#include "plot_fit.h"
#include "plot_int.h"
#include "png_out.h"

static const uint32_t line_colours[] = {0x0077BB, 0xEE7733, 0x009988, 0xAA3377,
                                        0x33BBEE, 0xCC3311, 0x555555, 0xDDAA33};
#define NCOLOURS (sizeof line_colours / sizeof line_colours[0])

struct frame {
    int x, y, w, h;
    struct mh__plot_axis xa, ya;
};

static uint32_t colour(int series)
{
    return line_colours[(unsigned)series % NCOLOURS];
}

static void value_range(const struct mh__fit_plot *p, double *lo, double *hi, double *top)
{
    *lo = INFINITY, *hi = -INFINITY, *top = 0;
    for (size_t i = 0; i < p->npoints; i++) {
        double v = (double)p->points[i].value;
        *lo = v < *lo ? v : *lo;
        *hi = v > *hi ? v : *hi;
        *top = (double)p->points[i].reserved > *top ? (double)p->points[i].reserved : *top;
    }
    for (size_t i = 0; i < p->ncards; i++)
        *top = (double)p->cards[i].limit > *top ? (double)p->cards[i].limit : *top;
    if (*hi <= *lo)
        *hi = *lo + 1;
    double pad = (*hi - *lo) * 0.04;
    *lo -= pad;
    *hi += pad;
    *top = *top > 0 ? *top * 1.08 : 1;
}

static void value_ticks(struct mh__canvas *c, const struct frame *f)
{
    double step = mh__plot_nice_step(f->xa.v1 - f->xa.v0, 8);
    if (step < 1)
        step = 1;
    for (double v = ceil(f->xa.v0 / step) * step; v <= f->xa.v1; v += step) {
        int x = mh__plot_axis_px(&f->xa, v);
        mh__canvas_vline(c, x, f->y, f->y + f->h, MH__COL_GRID);
        mh__canvas_vline(c, x, f->y + f->h, f->y + f->h + 3, MH__COL_AXIS);
        char text[32];
        snprintf(text, sizeof text, "%.0f", fabs(v) < 0.5 ? 0.0 : v); /* never "-0" */
        mh__canvas_text(c, x - mh__font_text_width(text, 1) / 2, f->y + f->h + 7, text,
                        MH__COL_MUTED, 1);
    }
}

static void dot(struct mh__canvas *c, int x, int y, uint32_t rgb)
{
    mh__canvas_rect(c, x - 3, y - 3, 7, 7, rgb);
}

static void cross(struct mh__canvas *c, int x, int y, uint32_t rgb)
{
    mh__canvas_line(c, x - 4, y - 4, x + 4, y + 4, rgb, 2);
    mh__canvas_line(c, x - 4, y + 4, x + 4, y - 4, rgb, 2);
}

static void ring(struct mh__canvas *c, int x, int y, uint32_t rgb)
{
    mh__canvas_frame(c, x - 6, y - 6, 13, 13, rgb);
    mh__canvas_frame(c, x - 5, y - 5, 11, 11, rgb);
}

static int by_value(const void *a, const void *b)
{
    const struct mh__fit_plot_point *x = a, *y = b;
    return x->value < y->value ? -1 : x->value > y->value;
}

static void draw_series(struct mh__canvas *c, const struct frame *f, const struct mh__fit_plot *p,
                        const struct mh__fit_plot_point *sorted, int s)
{
    int px = -1, py = -1;
    for (size_t i = 0; i < p->npoints; i++) {
        const struct mh__fit_plot_point *q = &sorted[i];
        if (q->series != s || q->oom)
            continue;
        int x = mh__plot_axis_px(&f->xa, (double)q->value);
        int y = mh__plot_axis_px(&f->ya, (double)q->reserved);
        if (px >= 0)
            mh__canvas_line(c, px, py, x, y, colour(s), 2);
        px = x, py = y;
    }
    for (size_t i = 0; i < p->npoints; i++) {
        const struct mh__fit_plot_point *q = &sorted[i];
        if (q->series != s)
            continue;
        int x = mh__plot_axis_px(&f->xa, (double)q->value);
        int y = mh__plot_axis_px(&f->ya, (double)q->reserved);
        if (q->oom)
            cross(c, x, y, MH__COL_OOM);
        else
            dot(c, x, y, colour(s));
    }
}

/* The label rows right of the panel: at each card's line, pushed apart
 * (cards are given largest first or in any order) so none overlap. */
static void label_rows(const struct frame *f, const struct mh__fit_plot *p, int *row)
{
    int order[64];
    size_t n = p->ncards < 64 ? p->ncards : 64;
    for (size_t i = 0; i < n; i++) {
        order[i] = (int)i;
        row[i] = mh__plot_axis_px(&f->ya, (double)p->cards[i].limit) - 4;
    }
    for (size_t i = 1; i < n; i++) /* by row, top first */
        for (size_t j = i; j > 0 && row[order[j]] < row[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (size_t i = 1; i < n; i++)
        if (row[order[i]] < row[order[i - 1]] + MH__FONT_LINE + 1)
            row[order[i]] = row[order[i - 1]] + MH__FONT_LINE + 1;
}

static void draw_cards(struct mh__canvas *c, const struct frame *f, const struct mh__fit_plot *p)
{
    int row[64];
    label_rows(f, p, row);
    for (size_t i = 0; i < p->ncards && i < 64; i++) {
        const struct mh__fit_plot_card *k = &p->cards[i];
        int y = mh__plot_axis_px(&f->ya, (double)k->limit);
        uint32_t rgb = colour(k->series);
        for (int x = f->x; x < f->x + f->w; x += 9)
            mh__canvas_hline(c, x, x + 4 < f->x + f->w ? x + 4 : f->x + f->w - 1, y, rgb);
        char text[96], b[32];
        snprintf(text, sizeof text, "%s %s", k->label, mh__plot_bytes(k->limit, b, sizeof b));
        mh__canvas_text_fit(c, f->x + f->w + 6, row[i], text, rgb, 1, c->width - f->x - f->w - 8);
        if (k->fits >= 0) {
            int x = mh__plot_axis_px(&f->xa, (double)k->fits);
            ring(c, x, y, rgb);
            snprintf(text, sizeof text, "%" PRId64, k->fits);
            mh__canvas_text(c, x - mh__font_text_width(text, 1) / 2, y - 18, text, rgb, 1);
        }
    }
}

static void draw_legend(struct mh__canvas *c, const struct mh__fit_plot *p, int x, int y)
{
    for (size_t s = 0; s < p->nseries; s++) {
        mh__canvas_rect(c, x, y + 1, 14, 3, colour((int)s));
        x += 18 + mh__canvas_text(c, x + 18, y - 2, p->series[s], MH__COL_TEXT, 1) + 14;
    }
    cross(c, x + 4, y + 2, MH__COL_OOM);
    x += 14 + mh__canvas_text(c, x + 14, y - 2, "ran out (reserved then)", MH__COL_TEXT, 1) + 14;
    ring(c, x + 5, y + 2, MH__COL_TEXT);
    mh__canvas_text(c, x + 16, y - 2, "largest value that fits the card", MH__COL_TEXT, 1);
}

static void draw(struct mh__canvas *c, const struct mh__fit_plot *p,
                 const struct mh__fit_plot_point *sorted)
{
    double lo, hi, top;
    value_range(p, &lo, &hi, &top);
    struct frame f;
    f.x = 90, f.y = 64, f.w = c->width - 90 - 190, f.h = c->height - 64 - 56;
    f.xa = (struct mh__plot_axis){lo, hi, f.x, f.x + f.w, NULL, 0};
    f.ya = (struct mh__plot_axis){0, top, f.y + f.h, f.y, NULL, 0};
    mh__canvas_text_fit(c, 12, 10, p->title ? p->title : "memhist fit", MH__COL_TEXT, 2,
                        c->width - 24);
    draw_legend(c, p, 12, 40);
    mh__plot_byte_ticks(c, &f.ya, f.x, f.x, f.x + f.w, 8);
    value_ticks(c, &f);
    mh__canvas_frame(c, f.x, f.y, f.w + 1, f.h + 1, MH__COL_AXIS);
    char xlabel[96];
    snprintf(xlabel, sizeof xlabel, "%s (peak reserved of each run)",
             p->xname ? p->xname : "value");
    mh__canvas_text(c, f.x + f.w / 2 - mh__font_text_width(xlabel, 1) / 2, f.y + f.h + 24, xlabel,
                    MH__COL_TEXT, 1);
    draw_cards(c, &f, p);
    for (size_t s = 0; s < p->nseries; s++)
        draw_series(c, &f, p, sorted, (int)s);
}

int mh__plot_fit_render(const struct mh__fit_plot *p, struct mh__sink *out, char *err, size_t errlen)
{
    struct mh__canvas c;
    if (p->npoints == 0) {
        snprintf(err, errlen, "no runs to plot");
        return MH_EINVAL;
    }
    int w = p->width ? p->width : 1000, h = p->height ? p->height : 620;
    if (w < 400 || h < 300) {
        snprintf(err, errlen, "the plot needs at least 400 x 300 pixels");
        return MH_EINVAL;
    }
    struct mh__fit_plot_point *sorted = malloc(p->npoints * sizeof *sorted);
    if (!sorted)
        return MH_ENOMEM;
    memcpy(sorted, p->points, p->npoints * sizeof *sorted);
    qsort(sorted, p->npoints, sizeof *sorted, by_value);
    int rc = mh__canvas_init(&c, w, h, MH__COL_BG);
    if (rc == 0) {
        draw(&c, p, sorted);
        rc = mh__png_write(out, &c);
    }
    mh__canvas_release(&c);
    free(sorted);
    return rc;
}
