/* plot_heat.c - the compact view of many ranks (see plot.h,
 * mh__plot_render_ranks): a heat map of peak reserved memory per rank (rows)
 * and step (columns), drawn from pass 1 alone (each scan's model holds its
 * steps), with a colour scale in bytes and the worst cell outlined.
 *
 * Columns are the steps of every rank, lowest to highest; when there are
 * more steps than pixels, a column holds the largest value of several
 * consecutive steps (the axis says how many). A rank without a given step
 * leaves its cell hatched. The colour runs from the smallest to the largest
 * cell (light to dark), so differences of a few per cent between ranks
 * stand out; the scale's ends are labelled in bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "font.h"
#include "memhist/error.h"
#include "palette.h"
#include "plot_int.h"

#define HEAT_LEFT 84        /* rank labels */
#define HEAT_RIGHT 170      /* colour scale */
#define HEAT_MAX_GRID 640   /* most pixels the rows take */
#define HEAT_MAX_ROW 22
#define HEAT_MIN_ROW 4
#define HEAT_BOTTOM 46      /* step axis and its title */
#define HEAT_EMPTY 0xF4F4F4u

/* Light to dark, yellow-orange-brown (ColorBrewer YlOrBr, 5 classes). */
static const uint32_t ramp[] = {0xFFFFD4u, 0xFED98Eu, 0xFE9929u, 0xD95F0Eu, 0x993404u};

static uint32_t mix(uint32_t a, uint32_t b, double f)
{
    uint32_t out = 0;
    for (int sh = 0; sh <= 16; sh += 8) {
        double x = (double)((a >> sh) & 0xFF), y = (double)((b >> sh) & 0xFF);
        out |= (uint32_t)(x + (y - x) * f + 0.5) << sh;
    }
    return out;
}

/* Colour of f in [0, 1]. */
static uint32_t heat_color(double f)
{
    int n = (int)(sizeof ramp / sizeof ramp[0]) - 1;
    f = f < 0 ? 0 : f > 1 ? 1 : f;
    int i = (int)(f * n);
    if (i >= n)
        return ramp[n];
    return mix(ramp[i], ramp[i + 1], f * n - i);
}

struct heat {
    const struct mh__plot_opts *o; /* its --steps window limits the columns */
    size_t n, ncols;
    int64_t first_step; /* step of column 0 */
    int64_t per_col;    /* steps per column */
    uint64_t *cell;     /* n * ncols, 0 = no such step; rows in `order` */
    size_t *order;      /* row -> file index */
    uint64_t lo, hi;    /* smallest and largest non-empty cell */
    size_t worst_row, worst_col;
    int64_t worst_step;   /* the step (not the column) of the worst cell */
    uint64_t worst_bytes; /* its peak reserved */
    int worst_own;        /* it is the worst rank's (mh__job_worst) */
};

/* The rank from the header, else from a ".rank3" name; -1 if neither. */
static int64_t rank_number(struct mh__session *r, const char *name)
{
    const char *meta = mh_reader_meta(mh__session_reader(r), "rank");
    const char *p = name ? strstr(name, ".rank") : NULL;
    if (meta && *meta >= '0' && *meta <= '9')
        return strtoll(meta, NULL, 10);
    return p && p[5] >= '0' && p[5] <= '9' ? strtoll(p + 5, NULL, 10) : -1;
}

/* "rank 3", or "file 4" for a file of no known rank. */
static void rank_label(struct mh__session *r, const char *name, size_t i, char *buf, size_t len)
{
    int64_t rank = rank_number(r, name);
    if (rank >= 0)
        snprintf(buf, len, "rank %lld", (long long)rank);
    else
        snprintf(buf, len, "file %zu", i + 1);
}

struct row_key {
    int64_t rank;
    size_t file;
};

static int by_rank(const void *a, const void *b)
{
    const struct row_key *x = a, *y = b;
    uint64_t rx = (uint64_t)x->rank, ry = (uint64_t)y->rank; /* -1 (unknown) last */
    if (rx != ry)
        return rx < ry ? -1 : 1;
    return x->file < y->file ? -1 : x->file > y->file;
}

/* Rows in rank order (files of no known rank last, in the order given). */
static int row_order(struct mh__session *const *rd, const char *const *names, size_t n,
                     size_t *order)
{
    struct row_key *k = calloc(n ? n : 1, sizeof *k);
    if (!k)
        return MH_ENOMEM;
    for (size_t i = 0; i < n; i++)
        k[i] = (struct row_key){rank_number(rd[i], names[i]), i};
    qsort(k, n, sizeof *k, by_rank);
    for (size_t i = 0; i < n; i++)
        order[i] = k[i].file;
    free(k);
    return 0;
}

static int in_window(const struct mh__plot_opts *o, int64_t step)
{
    return step >= 0 && (!o->has_steps || (step >= o->step_lo && step <= o->step_hi));
}

static int has_steps(const struct mh__plot_scan *s)
{
    return s->model && s->has_device && mh_model_step_count(s->model, s->device) > 0;
}

/* The range of step numbers of every rank (steps before the first, < 0,
 * are left out). Returns 0 when no rank has a step. */
static int step_range(const struct mh__plot_opts *o, const struct mh__plot_scan *scans, size_t n,
                      int64_t *lo, int64_t *hi)
{
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = has_steps(&scans[i]) ? mh_model_step_count(scans[i].model, scans[i].device) : 0;
        for (size_t j = 0; j < k; j++) {
            struct mh_step_stats st;
            if (mh_model_step(scans[i].model, scans[i].device, j, &st) != 0 || !in_window(o, st.step))
                continue;
            *lo = any && *lo < st.step ? *lo : st.step;
            *hi = any && *hi > st.step ? *hi : st.step;
            any = 1;
        }
    }
    return any;
}

static void fill_row(struct heat *h, size_t row, const struct mh__plot_scan *s)
{
    size_t k = has_steps(s) ? mh_model_step_count(s->model, s->device) : 0;
    for (size_t j = 0; j < k; j++) {
        struct mh_step_stats st;
        if (mh_model_step(s->model, s->device, j, &st) != 0 || !in_window(h->o, st.step) ||
            st.step < h->first_step)
            continue;
        size_t col = (size_t)((st.step - h->first_step) / h->per_col);
        if (col >= h->ncols || st.peak_reserved <= h->cell[row * h->ncols + col])
            continue;
        uint64_t *c = &h->cell[row * h->ncols + col];
        *c = st.peak_reserved;
        if (st.peak_reserved > h->hi)
            h->hi = st.peak_reserved;
    }
}

/* The highest cell of row `row`, if higher than the worst so far. */
static void row_worst(struct heat *h, size_t row, const struct mh__plot_scan *s)
{
    size_t k = has_steps(s) ? mh_model_step_count(s->model, s->device) : 0;
    for (size_t j = 0; j < k; j++) {
        struct mh_step_stats st;
        if (mh_model_step(s->model, s->device, j, &st) != 0 || !in_window(h->o, st.step) ||
            st.step < h->first_step || st.peak_reserved <= h->worst_bytes)
            continue;
        h->worst_bytes = st.peak_reserved;
        h->worst_row = row;
        h->worst_col = (size_t)((st.step - h->first_step) / h->per_col);
        h->worst_step = st.step;
    }
}

/* The worst cell: the highest of the worst rank's row (its steps' peak
 * reserved), else, when that rank has no step here, the highest of all. */
static void find_worst(struct heat *h, const struct mh__plot_scan *scans, size_t worst_file)
{
    for (size_t row = 0; row < h->n; row++)
        if (h->order[row] == worst_file)
            row_worst(h, row, &scans[worst_file]);
    h->worst_own = h->worst_bytes > 0;
    for (size_t row = 0; row < h->n && !h->worst_own; row++)
        row_worst(h, row, &scans[h->order[row]]);
}

/* Builds the cells for a grid `width` pixels wide. */
static int heat_build(struct heat *h, const struct mh__plot_opts *o, const struct mh__plot_scan *scans,
                      struct mh__session *const *rd, const char *const *names, size_t n, int width)
{
    int64_t lo = 0, hi = 0;
    memset(h, 0, sizeof *h);
    h->n = n;
    h->o = o;
    if (!step_range(o, scans, n, &lo, &hi))
        return 0;
    uint64_t steps = (uint64_t)(hi - lo) + 1;
    h->per_col = (int64_t)((steps + (uint64_t)width - 1) / (uint64_t)width);
    h->ncols = (size_t)((steps + (uint64_t)h->per_col - 1) / (uint64_t)h->per_col);
    h->first_step = lo;
    h->cell = calloc(n * h->ncols, sizeof *h->cell);
    h->order = calloc(n ? n : 1, sizeof *h->order);
    if (!h->cell || !h->order || row_order(rd, names, n, h->order) < 0) {
        free(h->cell);
        free(h->order);
        h->cell = NULL;
        return MH_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        fill_row(h, i, &scans[h->order[i]]);
    h->lo = h->hi;
    for (size_t i = 0; i < n * h->ncols; i++)
        if (h->cell[i] && h->cell[i] < h->lo)
            h->lo = h->cell[i];
    return 0;
}

static int row_height(size_t n)
{
    int r = (int)(HEAT_MAX_GRID / (n ? n : 1));
    return r > HEAT_MAX_ROW ? HEAT_MAX_ROW : r < HEAT_MIN_ROW ? HEAT_MIN_ROW : r;
}

#define HEAT_MIN_AREA 190 /* the colour scale's height and its key */

int mh__plot_heatmap_height(size_t n)
{
    int grid = row_height(n) * (int)n;
    return MH__PLOT_TOP + 12 + (grid > HEAT_MIN_AREA ? grid : HEAT_MIN_AREA) + HEAT_BOTTOM;
}

static double shade(const struct heat *h, uint64_t v)
{
    return h->hi > h->lo ? (double)(v - h->lo) / (double)(h->hi - h->lo) : 1.0;
}

static void draw_cells(struct mh__canvas *c, const struct heat *h, int x, int y, int w, int rh)
{
    for (size_t i = 0; i < h->n; i++)
        for (size_t k = 0; k < h->ncols; k++) {
            int x0 = x + (int)((int64_t)k * w / (int64_t)h->ncols);
            int x1 = x + (int)((int64_t)(k + 1) * w / (int64_t)h->ncols);
            uint64_t v = h->cell[i * h->ncols + k];
            if (v)
                mh__canvas_rect(c, x0, y + (int)i * rh, x1 - x0, rh, heat_color(shade(h, v)));
            else
                mh__canvas_hatch(c, x0, y + (int)i * rh, x1 - x0, rh, 0xCCCCCCu, 4);
        }
    mh__canvas_frame(c, x - 1, y - 1, w + 2, rh * (int)h->n + 2, MH__COL_AXIS);
}

/* The worst cell: a frame of at least 9x9 pixels around it, inside white. */
static void mark_worst(struct mh__canvas *c, const struct heat *h, int x, int y, int w, int rh)
{
    int x0 = x + (int)((int64_t)h->worst_col * w / (int64_t)h->ncols);
    int x1 = x + (int)((int64_t)(h->worst_col + 1) * w / (int64_t)h->ncols);
    int y0 = y + (int)h->worst_row * rh, cx = (x0 + x1) / 2, cy = y0 + rh / 2;
    int hw = (x1 - x0) / 2 + 3, hh = rh / 2 + 3;
    hw = hw < 5 ? 5 : hw;
    hh = hh < 5 ? 5 : hh;
    mh__canvas_frame(c, cx - hw - 1, cy - hh - 1, 2 * hw + 3, 2 * hh + 3, MH__COL_BG);
    mh__canvas_frame(c, cx - hw, cy - hh, 2 * hw + 1, 2 * hh + 1, 0x000000u);
    mh__canvas_frame(c, cx - hw + 1, cy - hh + 1, 2 * hw - 1, 2 * hh - 1, 0x000000u);
}

static void rank_labels(struct mh__canvas *c, const struct heat *h, struct mh__session *const *rd,
                        const char *const *names, int y, int rh)
{
    int every = (MH__FONT_LINE + rh - 1) / rh;
    for (size_t i = 0; i < h->n; i++) {
        if (i % (size_t)every != 0 && i != h->worst_row)
            continue;
        if (i != h->worst_row &&
            (h->worst_row > i ? h->worst_row - i : i - h->worst_row) < (size_t)every)
            continue; /* the worst rank's label takes this place */
        char label[40];
        size_t f = h->order[i];
        rank_label(rd[f], names[f], f, label, sizeof label);
        uint32_t col = i == h->worst_row ? MH__COL_OOM : MH__COL_TEXT;
        int ty = y + (int)i * rh + (rh - MH__FONT_CAP) / 2;
        mh__canvas_text_fit(c, 8, ty, label, col, 1, HEAT_LEFT - 14);
    }
}

static void step_axis(struct mh__canvas *c, const struct heat *h, int x, int y, int w)
{
    int64_t steps = (int64_t)h->ncols * h->per_col;
    double every = mh__plot_nice_step((double)steps, w / 60 > 1 ? w / 60 : 1);
    int64_t e = every < 1 ? 1 : (int64_t)every;
    for (int64_t s = ((h->first_step + e - 1) / e) * e; s < h->first_step + steps; s += e) {
        double f = ((double)(s - h->first_step) + 0.5 * (double)h->per_col) / (double)steps;
        int px = x + (int)(f * w);
        char b[24];
        snprintf(b, sizeof b, "%lld", (long long)s);
        mh__canvas_vline(c, px, y, y + 3, MH__COL_AXIS);
        mh__canvas_text(c, px - mh__font_text_width(b, 1) / 2, y + 6, b, MH__COL_MUTED, 1);
    }
    char title[96];
    if (h->per_col > 1)
        snprintf(title, sizeof title, "step (each column: the largest of %lld steps)",
                 (long long)h->per_col);
    else
        snprintf(title, sizeof title, "step");
    mh__canvas_text(c, x + (w - mh__font_text_width(title, 1)) / 2, y + 22, title, MH__COL_MUTED,
                    1);
}

/* The colour scale: a vertical bar from the largest (top) to the smallest
 * cell, labelled in bytes. */
static void scale_legend(struct mh__canvas *c, const struct heat *h, int x, int y, int gh)
{
    char b[32];
    int bh = gh < HEAT_MIN_AREA - 50 ? HEAT_MIN_AREA - 50 : gh;
    mh__canvas_text(c, x, y - 14, "peak reserved", MH__COL_TEXT, 1);
    for (int k = 0; k < bh; k++)
        mh__canvas_hline(c, x, x + 14, y + k, heat_color(1.0 - (double)k / (bh - 1)));
    mh__canvas_frame(c, x - 1, y - 1, 17, bh + 2, MH__COL_AXIS);
    for (int k = 0; k <= 4; k++) {
        uint64_t v = h->hi - (uint64_t)((double)(h->hi - h->lo) * k / 4.0);
        int ty = y + (bh - 1) * k / 4;
        mh__canvas_hline(c, x + 15, x + 18, ty, MH__COL_AXIS);
        mh__canvas_text(c, x + 22, ty - MH__FONT_CAP / 2, mh__plot_bytes(v, b, sizeof b),
                        MH__COL_TEXT, 1);
        if (h->hi == h->lo)
            break;
    }
    mh__canvas_hatch(c, x, y + bh + 12, 15, 9, 0xCCCCCCu, 4);
    mh__canvas_frame(c, x - 1, y + bh + 11, 17, 11, MH__COL_AXIS);
    mh__canvas_text(c, x + 22, y + bh + 13, "no such step", MH__COL_MUTED, 1);
}

static void heat_title(struct mh__canvas *c, const struct heat *h, struct mh__session *const *rd,
                       const char *const *names, int y)
{
    char title[160], sub[256], label[40], b1[32], b2[32], b3[32];
    snprintf(title, sizeof title, "memhist heat map: peak reserved per rank and step  |  %zu ranks",
             h->n);
    mh__canvas_text_fit(c, 12, y + 10, title, MH__COL_TEXT, 2, c->width - 24);
    size_t f = h->order[h->worst_row];
    rank_label(rd[f], names[f], f, label, sizeof label);
    snprintf(sub, sizeof sub, "darker = more reserved (from %s to %s); worst cell, outlined: %s, "
             "step %lld, %s (%s)", mh__plot_bytes(h->lo, b1, sizeof b1),
             mh__plot_bytes(h->hi, b2, sizeof b2), label, (long long)h->worst_step,
             mh__plot_bytes(h->worst_bytes, b3, sizeof b3),
             h->worst_own ? "its timeline is below" : "below: the worst rank by peak reserved");
    mh__canvas_text_fit(c, 12, y + 34, sub, MH__COL_MUTED, 1, c->width - 24);
}

int mh__plot_heatmap(struct mh__canvas *c, int y, const struct mh__plot_opts *o,
                     struct mh__plot_scan *scans, struct mh__session *const *rd,
                     const char *const *names, size_t n, size_t *worst)
{
    struct heat h;
    int gx = HEAT_LEFT, gw = c->width - HEAT_LEFT - HEAT_RIGHT, rh = row_height(n);
    int rc = heat_build(&h, o, scans, rd, names, n, gw);
    if (rc < 0)
        return rc;
    if (h.cell)
        find_worst(&h, scans, *worst);
    if (!h.cell) {
        mh__canvas_text(c, 12, y + 10, o->has_steps ? "memhist heat map: no rank has these steps"
                                                    : "memhist heat map: no rank has step markers",
                        MH__COL_TEXT, 2);
        return 0;
    }
    int gy = y + MH__PLOT_TOP + 12;
    heat_title(c, &h, rd, names, y);
    draw_cells(c, &h, gx, gy, gw, rh);
    mark_worst(c, &h, gx, gy, gw, rh);
    rank_labels(c, &h, rd, names, gy, rh);
    step_axis(c, &h, gx, gy + rh * (int)n + 1, gw);
    scale_legend(c, &h, gx + gw + 24, gy + 14, rh * (int)n - 40);
    free(h.cell);
    free(h.order);
    return 0;
}
