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
 * With many files (MH__PLOT_HEATMAP_RANKS, or on request) the panels give
 * way to a heat map of every rank's steps (plot_heat.c) above the panel of
 * the worst rank: the image stays readable for 64 ranks.
 * Pass 1 runs on a few threads at once (each file has its own session).
 * Memory: one pass-1 result per file (a model's steps and OOMs, the stack
 * table) plus two canvases. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memhist/error.h"
#include "job_ranks.h"
#include "palette.h"
#include "plot_int.h"
#include "png_out.h"

static int drawable(const struct mh__plot_scan *s)
{
    return s->events > 0 && s->has_device && s->dev_events > 0 && s->win_last > s->win_first;
}

static int heat_view(size_t n, const struct mh__plot_opts *o)
{
    return o->ranks_view == MH__PLOT_RANKS_HEATMAP ||
           (o->ranks_view == MH__PLOT_RANKS_AUTO && n >= MH__PLOT_HEATMAP_RANKS);
}

/* Height of the whole image. */
static size_t image_height(size_t n, const struct mh__plot_opts *o, int h)
{
    return heat_view(n, o) ? (size_t)mh__plot_heatmap_height(n) + (size_t)h : (size_t)h * n;
}

static int check(size_t n, const struct mh__plot_opts *o, int *w, int *h, char *err, size_t errlen)
{
    *w = o->width ? o->width : MH__PLOT_DEFAULT_WIDTH;
    *h = o->height ? o->height : MH__PLOT_RANK_HEIGHT;
    if (n == 0 || n > MH__PLOT_MAX_RANKS) {
        snprintf(err, errlen, "%zu files: a multi-rank plot takes 1 to %d", n, MH__PLOT_MAX_RANKS);
        return MH_EINVAL;
    }
    if (o->top > MH__PLOT_MAX_TOP || (o->color != MH__PLOT_COLOR_STACK &&
                                     o->color != MH__PLOT_COLOR_CATEGORY)) {
        snprintf(err, errlen, "--top %u or colouring %d is out of range", o->top, o->color);
        return MH_EINVAL;
    }
    if (o->kind != MH__PLOT_TIMELINE) {
        snprintf(err, errlen, "the segment view draws one file; several files make a timeline");
        return MH_EINVAL;
    }
    if (*w < MH__PLOT_MIN_WIDTH || *h < MH__PLOT_MIN_HEIGHT || *w > MH__CANVAS_MAX_SIDE ||
        image_height(n, o, *h) > MH__CANVAS_MAX_SIDE) {
        snprintf(err, errlen, "%zu panels of %dx%d pixels: each must be at least %dx%d and all "
                 "together at most %d pixels tall (--ranks heatmap draws one panel)", n, *w, *h,
                 MH__PLOT_MIN_WIDTH, MH__PLOT_MIN_HEIGHT, MH__CANVAS_MAX_SIDE);
        return MH_EINVAL;
    }
    return 0;
}

/* Pass 1 over every file, a few at a time: each worker takes the next
 * file until none is left or one failed. */
struct scan_pool {
    pthread_mutex_t mu;
    struct mh__session *const *rd;
    const struct mh__plot_opts *opts;
    struct mh__plot_scan *scans;
    size_t n, next;
    int rc;
    size_t failed; /* the file of rc */
    char msg[256];
};

static void *scan_worker(void *arg)
{
    struct scan_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->rc == 0 ? p->next++ : p->n;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->n)
            return NULL;
        char msg[256] = "";
        int rc = mh__plot_scan_run(p->rd[i], &p->opts[i], &p->scans[i], msg, sizeof msg);
        pthread_mutex_lock(&p->mu);
        if (rc < 0 && (p->rc == 0 || i < p->failed)) {
            p->rc = rc;
            p->failed = i;
            snprintf(p->msg, sizeof p->msg, "%s", msg);
        }
        pthread_mutex_unlock(&p->mu);
    }
}

#define SCAN_MAX_THREADS 8

/* On MH_EINVAL the message names the file. */
static int scan_all(struct mh__session *const *rd, const char *const *names, size_t n,
                    const struct mh__plot_opts *opts, struct mh__plot_scan *scans, char *err,
                    size_t errlen)
{
    struct scan_pool p = {.rd = rd, .opts = opts, .scans = scans, .n = n};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t want = cpus > 1 ? (size_t)cpus : 1, started = 0;
    pthread_t tid[SCAN_MAX_THREADS];
    want = want < SCAN_MAX_THREADS ? want : SCAN_MAX_THREADS;
    want = want < n ? want : n;
    if (pthread_mutex_init(&p.mu, NULL) != 0)
        return MH_ENOMEM;
    while (want > 1 && started < want && pthread_create(&tid[started], NULL, scan_worker, &p) == 0)
        started++;
    if (started == 0)
        scan_worker(&p);
    for (size_t i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    pthread_mutex_destroy(&p.mu);
    if (p.rc == MH_EINVAL)
        snprintf(err, errlen, "%s: %s", names[p.failed] ? names[p.failed] : "?", p.msg);
    return p.rc;
}

struct axis_plan {
    int shared;
    uint64_t t0, begin, end;
    size_t worst;     /* index of the highest reserved peak, n if none */
};

/* The worst rank by the job's one rule (job_ranks.h) over the files drawn:
 * the largest reserved peak in the window, helpers left out. */
static size_t worst_file(struct mh__session *const *rd, const struct mh__plot_scan *scans, size_t n)
{
    uint64_t *reserved = calloc(n ? n : 1, sizeof *reserved);
    uint8_t *helper = calloc(n ? n : 1, 1);
    size_t *file = calloc(n ? n : 1, sizeof *file), m = 0, worst = n;
    for (size_t i = 0; reserved && helper && file && i < n; i++)
        if (drawable(&scans[i])) {
            reserved[m] = scans[i].max_reserved;
            helper[m] = (uint8_t)mh__rank_is_helper(mh__session_reader(rd[i]));
            file[m++] = i;
        }
    if (m)
        worst = file[mh__job_worst(reserved, helper, m)];
    free(reserved);
    free(helper);
    free(file);
    return worst;
}

static void plan(struct mh__session *const *rd, struct mh__plot_scan *scans, size_t n,
                 struct axis_plan *p)
{
    uint64_t latest_first = 0, earliest_last = UINT64_MAX;
    size_t valid = 0;
    memset(p, 0, sizeof *p);
    p->worst = worst_file(rd, scans, n);
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

/* Draws a panel (h pixels tall) into its own canvas and copies it into
 * the image at pixel row y. */
static int draw_panel(struct mh__canvas *img, int y, int h, struct mh__session *r,
                      const struct mh__plot_opts *o, struct mh__plot_scan *s,
                      const struct axis_plan *p)
{
    struct mh__canvas panel;
    int rc = mh__canvas_init(&panel, img->width, h, MH__COL_BG);
    if (rc < 0)
        return rc;
    uint64_t begin = p->shared && drawable(s) ? p->begin : s->win_first;
    uint64_t end = p->shared && drawable(s) ? p->end : s->win_last;
    rc = mh__plot_timeline_panel(&panel, r, o, s, begin, end);
    if (rc == 0) {
        size_t row = (size_t)img->width * 3;
        memcpy(img->px + (size_t)y * row, panel.px, (size_t)h * row);
        if (y > 0) /* a rule between ranks */
            mh__canvas_hline(img, 0, img->width - 1, y, MH__COL_AXIS);
    }
    mh__canvas_release(&panel);
    return rc;
}

static void fill_results(const struct mh__plot_scan *scans, size_t n, size_t worst,
                         struct mh__plot_result *res)
{
    for (size_t i = 0; res && i < n; i++) {
        const struct mh__plot_scan *s = &scans[i];
        memset(&res[i], 0, sizeof res[i]);
        res[i].device = s->has_device ? s->device : -1;
        res[i].events = s->events;
        res[i].read_error = s->read_error;
        res[i].empty = !drawable(s);
        res[i].has_peak = s->has_peak;
        res[i].peak_allocated = s->peak.value;
        res[i].peak_since_ns = s->peak.time_ns > s->t0 ? s->peak.time_ns - s->t0 : 0;
        res[i].worst = i == worst;
    }
}

/* Panel i with the worst rank's note in its title. */
static int worst_panel(struct mh__canvas *img, int y, int h, size_t i, size_t n, int worst,
                       struct mh__session *r, struct mh__plot_opts *o, struct mh__plot_scan *s,
                       const struct axis_plan *p)
{
    char note[96], b[32];
    if (worst && n > 1) {
        snprintf(note, sizeof note, "[worst rank: reserved peak %s]",
                 mh__plot_bytes(s->max_reserved, b, sizeof b));
        o->note = note;
    }
    int rc = draw_panel(img, y, h, r, o, s, p);
    o->note = NULL;
    return rc;
}

static int draw_all(struct mh__session *const *rd, const char *const *names, size_t n,
                    struct mh__plot_opts *opts, struct mh__plot_scan *scans, int w, int h,
                    struct mh__sink *out, size_t *worst_out)
{
    struct axis_plan p;
    plan(rd, scans, n, &p);
    *worst_out = p.worst;
    struct mh__canvas img;
    int heat = heat_view(n, opts);
    int rc = mh__canvas_init(&img, w, (int)image_height(n, opts, h), MH__COL_BG);
    if (rc == 0 && heat) {
        size_t worst = p.worst < n ? p.worst : 0;
        int hy = mh__plot_heatmap_height(n);
        rc = mh__plot_heatmap(&img, 0, &opts[0], scans, rd, names, n, &worst);
        *worst_out = worst;
        p.shared = 0; /* one panel: its own window */
        if (rc == 0)
            rc = worst_panel(&img, hy, h, worst, n, 1, rd[worst], &opts[worst], &scans[worst], &p);
    }
    for (size_t i = 0; rc == 0 && !heat && i < n; i++)
        rc = worst_panel(&img, (int)i * h, h, i, n, i == p.worst, rd[i], &opts[i], &scans[i], &p);
    if (rc == 0)
        rc = mh__png_write(out, &img);
    mh__canvas_release(&img);
    return rc;
}

int mh__plot_render_ranks(struct mh__session *const *sessions, const char *const *names, size_t n,
                          const struct mh__plot_opts *opts, struct mh__sink *out,
                          struct mh__plot_result *res, char *err, size_t errlen)
{
    int w, h;
    if (errlen)
        err[0] = '\0';
    int rc = check(n, opts, &w, &h, err, errlen);
    if (rc < 0)
        return rc;
    struct mh__plot_scan *scans = calloc(n, sizeof *scans);
    struct mh__plot_opts *each = calloc(n, sizeof *each); /* per file: name, settings */
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
    size_t worst = n;
    rc = scan_all(sessions, names, n, each, scans, err, errlen);
    if (rc == 0)
        rc = draw_all(sessions, names, n, each, scans, w, h, out, &worst);
    fill_results(scans, n, worst, res);
    for (size_t i = 0; i < n; i++)
        mh__plot_scan_free(&scans[i]);
    free(scans);
    free(each);
    return rc;
}
