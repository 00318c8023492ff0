/* plot_multi.c - several runs (one per rank) in one PNG: a timeline panel
 * per file, stacked top to bottom (see plot.h, mh__plot_render_ranks).
 *
 * Pass 1 runs over every file first, so the panels can agree before any is
 * drawn: when all windows share an instant (ranks of one job), every panel
 * uses the union of the windows as its time axis and shows times since the
 * earliest first event, so a moment lines up vertically across ranks;
 * otherwise (unrelated runs) each keeps its own axis. The run with the
 * highest reserved peak gets a note in its title. Each panel is drawn by the
 * single-file code into a canvas of its own and copied into the image, so
 * a panel looks exactly like `memhist plot` of that file at that size.
 * Memory: one pass-1 result per file (a model's steps and OOMs, the stack
 * table) plus two canvases. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "palette.h"
#include "plot_internal.h"
#include "png_out.h"

static int drawable(const struct mh__plot_scan *s)
{
    return s->events > 0 && s->has_device && s->dev_events > 0 && s->win_last > s->win_first;
}

static int check(size_t n, const struct mh_plot_opts *o, int *w, int *h, char *err, size_t errlen)
{
    *w = o->width ? o->width : MH_PLOT_DEFAULT_WIDTH;
    *h = o->height ? o->height : MH_PLOT_RANK_HEIGHT;
    if (n == 0 || n > MH_PLOT_MAX_RANKS) {
        snprintf(err, errlen, "%zu files: a multi-rank plot takes 1 to %d", n, MH_PLOT_MAX_RANKS);
        return MH_EINVAL;
    }
    if (o->top > MH_PLOT_MAX_TOP || (o->color != MH_PLOT_COLOR_STACK &&
                                     o->color != MH_PLOT_COLOR_CATEGORY)) {
        snprintf(err, errlen, "--top %u or colouring %d is out of range", o->top, o->color);
        return MH_EINVAL;
    }
    if (o->kind != MH_PLOT_TIMELINE) {
        snprintf(err, errlen, "the segment view draws one file; several files make a timeline");
        return MH_EINVAL;
    }
    if (*w < MH_PLOT_MIN_WIDTH || *h < MH_PLOT_MIN_HEIGHT || *w > MH_CANVAS_MAX_SIDE ||
        (size_t)*h * n > MH_CANVAS_MAX_SIDE) {
        snprintf(err, errlen, "%zu panels of %dx%d pixels: each must be at least %dx%d and all "
                 "together at most %d pixels tall", n, *w, *h, MH_PLOT_MIN_WIDTH,
                 MH_PLOT_MIN_HEIGHT, MH_CANVAS_MAX_SIDE);
        return MH_EINVAL;
    }
    return 0;
}

/* Pass 1 over every file. On MH_EINVAL the message names the file. */
static int scan_all(struct mh_session *const *rd, const char *const *names, size_t n,
                    const struct mh_plot_opts *opts, struct mh__plot_scan *scans, char *err,
                    size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        char msg[256] = "";
        int rc = mh__plot_scan_run(rd[i], &opts[i], &scans[i], msg, sizeof msg);
        if (rc == MH_EINVAL)
            snprintf(err, errlen, "%s: %s", names[i] ? names[i] : "?", msg);
        if (rc < 0)
            return rc;
    }
    return 0;
}

struct axis_plan {
    int shared;
    uint64_t t0, begin, end;
    size_t worst;     /* index of the highest reserved peak, n if none */
};

static void plan(struct mh__plot_scan *scans, size_t n, struct axis_plan *p)
{
    uint64_t latest_first = 0, earliest_last = UINT64_MAX, best = 0;
    size_t valid = 0;
    memset(p, 0, sizeof *p);
    p->worst = n;
    p->t0 = p->begin = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        const struct mh__plot_scan *s = &scans[i];
        if (!drawable(s))
            continue;
        valid++;
        latest_first = s->win_first > latest_first ? s->win_first : latest_first;
        earliest_last = s->win_last < earliest_last ? s->win_last : earliest_last;
        p->t0 = s->t0 < p->t0 ? s->t0 : p->t0;
        p->begin = s->win_first < p->begin ? s->win_first : p->begin;
        p->end = s->win_last > p->end ? s->win_last : p->end;
        if (p->worst == n || s->max_reserved > best) {
            best = s->max_reserved;
            p->worst = i;
        }
    }
    p->shared = valid > 1 && latest_first <= earliest_last;
    for (size_t i = 0; i < n; i++) /* events and steps axes are each run's own */
        if (drawable(&scans[i]) && scans[i].warp.nk > 0)
            p->shared = 0;
    if (p->shared)
        for (size_t i = 0; i < n; i++)
            if (drawable(&scans[i]))
                scans[i].t0 = p->t0;
}

/* Draws panel `i` (h pixels tall) into its own canvas and copies it into
 * the image at row i * h. */
static int draw_panel(struct mh_canvas *img, size_t i, int h, struct mh_session *r,
                      const struct mh_plot_opts *o, struct mh__plot_scan *s,
                      const struct axis_plan *p)
{
    struct mh_canvas panel;
    int rc = mh__canvas_init(&panel, img->width, h, MH_COL_BG);
    if (rc < 0)
        return rc;
    uint64_t begin = p->shared && drawable(s) ? p->begin : s->win_first;
    uint64_t end = p->shared && drawable(s) ? p->end : s->win_last;
    rc = mh__plot_timeline_panel(&panel, r, o, s, begin, end);
    if (rc == 0) {
        size_t row = (size_t)img->width * 3;
        memcpy(img->px + i * (size_t)h * row, panel.px, (size_t)h * row);
        if (i > 0) /* a rule between ranks */
            mh__canvas_hline(img, 0, img->width - 1, (int)i * h, MH_COL_AXIS);
    }
    mh__canvas_release(&panel);
    return rc;
}

static void fill_results(const struct mh__plot_scan *scans, size_t n, struct mh_plot_result *res)
{
    for (size_t i = 0; res && i < n; i++) {
        const struct mh__plot_scan *s = &scans[i];
        memset(&res[i], 0, sizeof res[i]);
        res[i].device = s->has_device ? s->device : -1;
        res[i].events = s->events;
        res[i].read_error = s->read_error;
        res[i].empty = !drawable(s);
    }
}

static int draw_all(struct mh_session *const *rd, size_t n, struct mh_plot_opts *opts,
                    struct mh__plot_scan *scans, int w, int h, struct mh_sink *out)
{
    struct axis_plan p;
    plan(scans, n, &p);
    struct mh_canvas img;
    int rc = mh__canvas_init(&img, w, h * (int)n, MH_COL_BG);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char note[96], b[32];
        if (i == p.worst && n > 1) {
            snprintf(note, sizeof note, "[worst rank: reserved peak %s]",
                     mh__plot_bytes(scans[i].max_reserved, b, sizeof b));
            opts[i].note = note;
        }
        rc = draw_panel(&img, i, h, rd[i], &opts[i], &scans[i], &p);
        opts[i].note = NULL;
    }
    if (rc == 0)
        rc = mh__png_write(out, &img);
    mh__canvas_release(&img);
    return rc;
}

int mh__plot_render_ranks(struct mh_session *const *sessions, const char *const *names, size_t n,
                          const struct mh_plot_opts *opts, struct mh_sink *out,
                          struct mh_plot_result *res, char *err, size_t errlen)
{
    int w, h;
    if (errlen)
        err[0] = '\0';
    int rc = check(n, opts, &w, &h, err, errlen);
    if (rc < 0)
        return rc;
    struct mh__plot_scan *scans = calloc(n, sizeof *scans);
    struct mh_plot_opts *each = calloc(n, sizeof *each); /* per file: name, settings */
    if (!scans || !each) {
        free(scans);
        free(each);
        return MH_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        each[i] = *opts;
        each[i].name = names[i];
        each[i].height = h;
        each[i].note = NULL;
    }
    rc = scan_all(sessions, names, n, each, scans, err, errlen);
    if (rc == 0)
        rc = draw_all(sessions, n, each, scans, w, h, out);
    fill_results(scans, n, res);
    for (size_t i = 0; i < n; i++)
        mh__plot_scan_free(&scans[i]);
    free(scans);
    free(each);
    return rc;
}
