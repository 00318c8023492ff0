/* plot.c - entry point of the PNG plots: checks the options, runs the passes
 * over the file, chooses the layout and writes the PNG (see plot.h). Empty
 * input (no events, no memory events on the device, a single moment) gives
 * an image with a message rather than an error, so a pipeline that plots
 * every run never breaks on a short one. */
#include <stdio.h>
#include <string.h>

#include "memhist/error.h"
#include "font.h"
#include "palette.h"
#include "plot_int.h"
#include "png_out.h"

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int mh__plot_title(struct mh__canvas *c, struct mh__session *r, const struct mh__plot_opts *o,
                   int device, const char *what, const char *subtitle)
{
    char title[512], part[192];
    snprintf(title, sizeof title, "%s%s%s%s%s", what, o->name ? ": " : "",
             o->name ? base_name(o->name) : "", o->note ? "  " : "", o->note ? o->note : "");
    if (device >= 0) {
        const char *dname = "";
        struct mh_device_info di;
        for (size_t i = 0; i < mh_reader_device_count(mh__session_reader(r)); i++)
            if (mh_reader_device(mh__session_reader(r), i, &di) == 0 && di.device == device && di.name)
                dname = di.name;
        snprintf(part, sizeof part, "  |  device %d%s%s%s", device, *dname ? " (" : "", dname,
                 *dname ? ")" : "");
        strncat(title, part, sizeof title - strlen(title) - 1);
    }
    const char *torch = mh_reader_meta(mh__session_reader(r), "torch_version");
    if (torch && *torch) {
        snprintf(part, sizeof part, "  |  torch %s", torch);
        strncat(title, part, sizeof title - strlen(title) - 1);
    }
    mh__canvas_text_fit(c, 12, 10, title, MH__COL_TEXT, 2, c->width - 24);
    if (subtitle)
        mh__canvas_text_fit(c, 12, 34, subtitle, MH__COL_MUTED, 1, c->width - 24);
    return 52;
}

int mh__plot_message(struct mh__canvas *c, struct mh__session *r, const struct mh__plot_opts *o,
                     int device, const char *message)
{
    mh__plot_title(c, r, o, device, "memhist", NULL);
    int w = mh__font_text_width(message, 2);
    int x = (c->width - w) / 2;
    mh__canvas_frame(c, 12, 52, c->width - 24, c->height - 64, MH__COL_GRID);
    mh__canvas_text_fit(c, x > 20 ? x : 20, c->height / 2 - 9, message, MH__COL_TEXT, 2,
                        c->width - 40);
    return 0;
}

static int check_opts(const struct mh__plot_opts *o, int *w, int *h, char *err, size_t errlen)
{
    *w = o->width ? o->width : MH__PLOT_DEFAULT_WIDTH;
    *h = o->height ? o->height : MH__PLOT_DEFAULT_HEIGHT;
    if (*w < MH__PLOT_MIN_WIDTH || *h < MH__PLOT_MIN_HEIGHT || *w > MH__CANVAS_MAX_SIDE ||
        *h > MH__CANVAS_MAX_SIDE) {
        snprintf(err, errlen, "image size %dx%d is outside %dx%d .. %dx%d pixels", *w, *h,
                 MH__PLOT_MIN_WIDTH, MH__PLOT_MIN_HEIGHT, MH__CANVAS_MAX_SIDE, MH__CANVAS_MAX_SIDE);
        return MH_EINVAL;
    }
    if (o->top > MH__PLOT_MAX_TOP) {
        snprintf(err, errlen, "--top %u is more than %d groups", o->top, MH__PLOT_MAX_TOP);
        return MH_EINVAL;
    }
    if (o->kind != MH__PLOT_TIMELINE && o->kind != MH__PLOT_SEGMENTS) {
        snprintf(err, errlen, "unknown plot kind %d", o->kind);
        return MH_EINVAL;
    }
    if (o->x_axis < MH__PLOT_X_COMPRESSED || o->x_axis > MH__PLOT_X_STEPS) {
        snprintf(err, errlen, "unknown x axis %d", o->x_axis);
        return MH_EINVAL;
    }
    if (o->color != MH__PLOT_COLOR_STACK && o->color != MH__PLOT_COLOR_CATEGORY) {
        snprintf(err, errlen, "unknown colouring %d", o->color);
        return MH_EINVAL;
    }
    return 0;
}

void mh__plot_layout(int width, int height, int top, struct mh__plot_frame *f)
{
    memset(f, 0, sizeof *f);
    f->legend_w = width >= 1000 ? 330 : width / 3;
    f->x = 78;
    f->y = top + 18;
    f->w = width - f->x - f->legend_w - 16;
    f->strip_h = height >= 600 ? 46 : 30;
    f->strip_gap = 6;
    /* below the panel: tick labels (20), strip label room, two strips, axis title */
    f->h = height - f->y - 26 - 2 * f->strip_h - f->strip_gap - 26;
    f->strip_y = f->y + f->h + 26;
    f->legend_x = f->x + f->w + 24;
    f->legend_y = f->y;
}

/* Groups of the stacked areas: the top sites at the peak, or the
 * categories (their bytes at the peak come from pass 2). */
static int choose_groups(struct mh__session *r, const struct mh__plot_opts *o,
                         struct mh__plot_scan *s)
{
    if (o->color != MH__PLOT_COLOR_CATEGORY)
        return mh__plot_scan_rank(r, s, o->top ? o->top : MH__PLOT_DEFAULT_TOP);
    s->by_category = 1;
    s->ngroups = MH__CAT_COUNT - 1;
    return 0;
}

int mh__plot_timeline_panel(struct mh__canvas *c, struct mh__session *r,
                            const struct mh__plot_opts *o, struct mh__plot_scan *s,
                            uint64_t t_begin, uint64_t t_end)
{
    if (s->events == 0)
        return mh__plot_message(c, r, o, s->device, "This file holds no events.");
    if (!s->has_device || s->dev_events == 0)
        return mh__plot_message(c, r, o, s->device, "No allocator memory events to plot.");
    if (s->win_last <= s->win_first)
        return mh__plot_message(c, r, o, s->device,
                                "All events happen at one moment: nothing to draw over time.");
    int rc = choose_groups(r, o, s);
    if (rc < 0)
        return rc;
    struct mh__plot_frame f;
    mh__plot_layout(c->width, c->height, MH__PLOT_TOP, &f);
    struct mh__plot_cols cols;
    rc = mh__plot_cols_run(r, o, s, f.w, t_begin, t_end, &cols);
    if (rc == 0 && s->by_category)
        memcpy(s->group_peak, cols.cat_peak, sizeof cols.cat_peak);
    if (rc == 0) {
        f.tx.v0 = mh__plot_warp(&s->warp, s->t0, t_begin);
        f.tx.v1 = mh__plot_warp(&s->warp, s->t0, t_end);
        f.tx.warp = &s->warp;
        f.tx.t0 = s->t0;
        f.tx.p0 = f.x;
        f.tx.p1 = f.x + f.w;
        rc = mh__plot_timeline(c, r, o, s, &cols, &f);
    }
    mh__plot_cols_free(&cols);
    return rc;
}

int mh__plot_render(struct mh__session *r, const struct mh__plot_opts *o, struct mh__sink *out,
                    struct mh__plot_result *res, char *err, size_t errlen)
{
    int w, h;
    if (errlen)
        err[0] = '\0';
    int rc = check_opts(o, &w, &h, err, errlen);
    if (rc < 0)
        return rc;
    struct mh__plot_scan s;
    struct mh__canvas c;
    memset(&c, 0, sizeof c);
    rc = mh__plot_scan_run(r, o, &s, err, errlen);
    if (rc == 0)
        rc = mh__canvas_init(&c, w, h, MH__COL_BG);
    if (rc == 0 && o->kind == MH__PLOT_SEGMENTS)
        rc = mh__plot_segments(&c, r, o, &s, err, errlen);
    else if (rc == 0)
        rc = mh__plot_timeline_panel(&c, r, o, &s, s.win_first, s.win_last);
    if (rc == 0)
        rc = mh__png_write(out, &c);
    if (res) {
        memset(res, 0, sizeof *res);
        res->device = s.has_device ? s.device : -1;
        res->events = s.events;
        res->read_error = s.read_error;
        /* a segment view of a moment needs no time span (an imported bare
         * segment list has all its events at one time) */
        res->empty = s.events == 0 || s.dev_events == 0 ||
                     (o->kind != MH__PLOT_SEGMENTS && s.win_last <= s.win_first);
    }
    mh__canvas_release(&c);
    mh__plot_scan_free(&s);
    return rc;
}
