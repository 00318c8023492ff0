/* plot_segments.c - the segment view: the allocator's layout at one moment
 * (the allocated peak, the last OOM, or a time), one bar per segment scaled
 * by its size, blocks coloured by state, rounding waste (block size minus
 * requested bytes) shown as a hatched lighter part, and a summary line (see
 * plot_int.h). The model is replayed up to the chosen event, so memory
 * is proportional to the live segments and blocks at that moment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "font.h"
#include "palette.h"
#include "plot_int.h"
#include "grow.h"

struct seg_box {
    uint64_t addr, size;
    int x, y, w;
};

struct seg_view {
    struct mh__canvas *c;
    struct seg_box *boxes;
    size_t n, cap, cur;
    int bar_h, row_h, labels;
    uint64_t bpp;  /* bytes per pixel */
    uint64_t waste;
    uint32_t blocks;
};

static int collect(void *user, const struct mh_segment_view *seg)
{
    struct seg_view *v = user;
    if (MH__GROW(v->boxes, v->n, v->cap, 64) < 0)
        return MH_ENOMEM;
    v->boxes[v->n].addr = seg->address;
    v->boxes[v->n].size = seg->size;
    v->n++;
    return 0;
}

static int box_width(const struct seg_view *v, uint64_t size)
{
    uint64_t w = (size + v->bpp - 1) / v->bpp;
    return w < 3 ? 3 : (int)(w > 1u << 20 ? 1u << 20 : w);
}

/* Flows the boxes into rows of width `row_w`; returns the rows used. */
static int flow(struct seg_view *v, int x0, int y0, int row_w)
{
    int x = 0, row = 0;
    for (size_t i = 0; i < v->n; i++) {
        int w = box_width(v, v->boxes[i].size);
        if (w > row_w)
            w = row_w;
        if (x > 0 && x + w > row_w) {
            x = 0;
            row++;
        }
        v->boxes[i].x = x0 + x;
        v->boxes[i].y = y0 + row * v->row_h;
        v->boxes[i].w = w;
        x += w + 4;
    }
    return v->n ? row + 1 : 0;
}

/* Smallest bytes-per-pixel whose layout fits `rows` rows; tries the
 * compact row height when even 3-pixel boxes do not fit. */
static void choose_scale(struct seg_view *v, uint64_t largest, int x0, int y0, int row_w,
                         int avail_h)
{
    v->bar_h = 18;
    v->row_h = 32;
    v->labels = 1;
    v->bpp = largest + 1; /* every box at its narrowest */
    if (flow(v, x0, y0, row_w) > avail_h / v->row_h) {
        v->bar_h = 5;
        v->row_h = 7;
        v->labels = 0;
    }
    uint64_t lo = largest / (uint64_t)row_w + 1, hi = largest + 1;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        v->bpp = mid;
        if (flow(v, x0, y0, row_w) <= avail_h / v->row_h)
            hi = mid;
        else
            lo = mid + 1;
    }
    v->bpp = lo;
    int rows = flow(v, x0, y0, row_w);
    if (v->labels && rows > 0) {
        /* taller bars when there is room, so a few segments fill the view */
        v->row_h = avail_h / rows > 90 ? 90 : avail_h / rows;
        v->bar_h = v->row_h - 14;
        flow(v, x0, y0, row_w);
    }
}

static int draw_block(void *user, const struct mh_segment_view *seg, const struct mh_block_view *b)
{
    struct seg_view *v = user;
    while (v->cur < v->n && v->boxes[v->cur].addr != seg->address)
        v->cur++;
    if (v->cur >= v->n)
        return 0;
    const struct seg_box *box = &v->boxes[v->cur];
    double scale = (double)box->w / (double)seg->size;
    int xa = box->x + (int)((double)(b->address - seg->address) * scale);
    int xb = box->x + (int)((double)(b->address + b->size - seg->address) * scale);
    int xr = box->x + (int)((double)(b->address + b->requested - seg->address) * scale);
    if (xb <= xa)
        xb = xa + 1;
    uint32_t col = b->state == MH_BLOCK_ALLOCATED      ? MH__COL_BLOCK_ALLOC
                   : b->state == MH_BLOCK_PENDING_FREE ? MH__COL_BLOCK_PENDING
                                                       : MH__COL_BLOCK_FREE;
    if (b->state == MH_BLOCK_INACTIVE)
        return 0; /* the segment's background already shows it */
    mh__canvas_rect(v->c, xa, box->y, xb - xa, v->bar_h, col);
    if (b->state == MH_BLOCK_ALLOCATED && b->requested < b->size) {
        v->waste += b->size - b->requested;
        if (xr < xb) {
            mh__canvas_rect(v->c, xr, box->y, xb - xr, v->bar_h, MH__COL_BLOCK_WASTE);
            mh__canvas_hatch(v->c, xr, box->y, xb - xr, v->bar_h, MH__COL_BLOCK_ALLOC, 4);
        }
    }
    if (xb - xa >= 5) /* a gap between neighbouring blocks when there is room */
        mh__canvas_vline(v->c, xb - 1, box->y, box->y + v->bar_h - 1, 0xFFFFFFu);
    v->blocks++;
    return 0;
}

static void draw_boxes(struct seg_view *v)
{
    for (size_t i = 0; i < v->n; i++) {
        const struct seg_box *b = &v->boxes[i];
        mh__canvas_rect(v->c, b->x, b->y, b->w, v->bar_h, MH__COL_BLOCK_FREE);
        if (v->labels && (i == 0 || b->y != v->boxes[i - 1].y || b->w >= 60)) {
            char s[32];
            mh__plot_bytes(b->size, s, sizeof s);
            if (mh__font_text_width(s, 1) <= b->w + 4) /* only labels that fit over their box */
                mh__canvas_text(v->c, b->x, b->y - 11, s, MH__COL_MUTED, 1);
        }
    }
}

static void draw_frames(struct seg_view *v)
{
    for (size_t i = 0; i < v->n; i++)
        mh__canvas_frame(v->c, v->boxes[i].x - 1, v->boxes[i].y - 1, v->boxes[i].w + 2,
                         v->bar_h + 2, MH__COL_SEGMENT_EDGE);
}

/* Event index (0-based) of the moment to show, and its description: the
 * window's allocated peak, or the moment resolver's OOM or time (moment.h). */
static int pick_moment(struct mh__session *r, const struct mh__plot_opts *o,
                       const struct mh__plot_scan *s, uint64_t *index, char *what, size_t wlen,
                       char *err, size_t errlen)
{
    char b[32], t[32];
    struct mh__moment m;
    if (o->at == MH__MOMENT_OOM) {
        mh__moment_in_model(s->model, MH__MOMENT_OOM, s->device, &m);
        if (!m.found) {
            snprintf(err, errlen, "--at oom: device %d has no out-of-memory event", s->device);
            return MH_EINVAL;
        }
        *index = m.index;
        snprintf(what, wlen, "at the last OOM (%s, request %s)",
                 mh__plot_duration(m.time_ns - s->t0, t, sizeof t),
                 mh__plot_bytes(m.value, b, sizeof b));
        return 0;
    }
    if (o->at == MH__MOMENT_TIME) {
        uint64_t span = s->win_last > s->t0 ? s->win_last - s->t0 : 0;
        if (o->at_ns > span) {
            snprintf(err, errlen, "--at %.6g s is after the end of the run (%s)", o->at_ns / 1e9,
                     mh__plot_duration(span, t, sizeof t));
            return MH_EINVAL;
        }
        int rc = mh__moment_at_time(r, s->t0, o->at_ns, &m);
        *index = m.index;
        snprintf(what, wlen, "at %s", mh__plot_duration(o->at_ns, t, sizeof t));
        return rc;
    }
    *index = s->peak.event_index;
    snprintf(what, wlen, "at the allocated peak (%s, %s)",
             mh__plot_bytes(s->peak.value, b, sizeof b),
             mh__plot_duration(s->peak.time_ns - s->t0, t, sizeof t));
    return 0;
}

static void legend_row(struct mh__canvas *c, int y)
{
    int x = 12;
    static const struct { uint32_t col; int hatch; const char *text; } items[] = {
        {MH__COL_BLOCK_ALLOC, 0, "allocated block"},
        {MH__COL_BLOCK_WASTE, 1, "rounding waste (block size - requested)"},
        {MH__COL_BLOCK_PENDING, 0, "freed, waiting for its stream"},
        {MH__COL_BLOCK_FREE, 0, "inactive (cached, free)"},
    };
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        mh__canvas_rect(c, x, y, 14, 10, items[i].col);
        if (items[i].hatch)
            mh__canvas_hatch(c, x, y, 14, 10, MH__COL_BLOCK_ALLOC, 4);
        mh__canvas_frame(c, x - 1, y - 1, 16, 12, MH__COL_SEGMENT_EDGE);
        x += 20 + mh__canvas_text(c, x + 20, y + 1, items[i].text, MH__COL_TEXT, 1) + 24;
    }
}

static void summary(struct mh__canvas *c, struct mh_model *m, int device, const struct seg_view *v,
                    int y)
{
    struct mh_mem_stats st;
    memset(&st, 0, sizeof st);
    mh_model_stats(m, device, &st);
    uint64_t largest = mh_model_largest_free(m, device, UINT64_MAX, -1);
    char a[32], b[32], l[32], w[32], text[256];
    double frag = st.reserved ? 1.0 - (double)st.allocated / (double)st.reserved : 0;
    snprintf(text, sizeof text,
             "reserved %s  |  allocated %s  |  largest free block %s  |  fragmentation %.1f%%"
             "  |  rounding waste %s  |  %zu segment%s",
             mh__plot_bytes(st.reserved, a, sizeof a), mh__plot_bytes(st.allocated, b, sizeof b),
             mh__plot_bytes(largest, l, sizeof l), frag * 100,
             mh__plot_bytes(v->waste, w, sizeof w), v->n, v->n == 1 ? "" : "s");
    mh__canvas_text_fit(c, 12, y, text, MH__COL_TEXT, 1, c->width - 24);
}

static int draw_layout(struct mh__canvas *c, struct mh_model *m, int device, const char *what,
                       struct mh__session *r, const struct mh__plot_opts *o)
{
    struct seg_view v;
    memset(&v, 0, sizeof v);
    v.c = c;
    int rc = mh_model_foreach_segment(m, device, collect, &v);
    uint64_t largest = 1;
    for (size_t i = 0; i < v.n; i++)
        largest = v.boxes[i].size > largest ? v.boxes[i].size : largest;
    mh__plot_title(c, r, o, device, "memhist segments", what);
    if (rc == 0 && v.n == 0)
        mh__canvas_text(c, 12, 90, "No segments are reserved at this moment.", MH__COL_TEXT, 2);
    if (rc == 0 && v.n > 0) {
        int y0 = 100;
        choose_scale(&v, largest, 12, y0, c->width - 24, c->height - y0 - 8);
        draw_boxes(&v);
        rc = mh_model_foreach_block(m, device, draw_block, &v);
        draw_frames(&v);
    }
    summary(c, m, device, &v, 54);
    legend_row(c, 72);
    free(v.boxes);
    return rc;
}

int mh__plot_segments(struct mh__canvas *c, struct mh__session *r, const struct mh__plot_opts *o,
                      const struct mh__plot_scan *s, char *err, size_t errlen)
{
    if (s->events == 0)
        return mh__plot_message(c, r, o, s->device, "This file holds no events.");
    if (!s->has_device || !s->has_peak)
        return mh__plot_message(c, r, o, s->device, "No allocator memory events to plot.");
    uint64_t index;
    char what[160];
    int rc = pick_moment(r, o, s, &index, what, sizeof what, err, errlen);
    if (rc < 0)
        return rc;
    struct mh_model *m = NULL;
    rc = mh__session_state_at(r, index + 1, &m);
    if (rc == 0)
        rc = draw_layout(c, m, s->device, what, r, o);
    mh_model_free(m);
    return rc;
}
