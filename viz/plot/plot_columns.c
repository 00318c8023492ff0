/* plot_columns.c - pass 2 of the timeline: streams the file into one column
 * per pixel (see plot_int.h).
 *
 * Each column keeps the maxima of allocated, reserved and driver bytes over
 * its time slice, plus the bytes of every group at the moment the allocated
 * maximum was reached, so the stacked areas add up exactly to the allocated
 * curve. A column with no event holds the state carried over from the left.
 * Cost per event: a few additions and, on a new column maximum, a copy of
 * ngroups + 1 counters. Coloured by category, the breakdown comes from
 * plot_category.c instead, fed from here with each column's moment. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "plot_int.h"

struct state {
    uint64_t alloc, reserved, driver;
    uint64_t groups[MH__PLOT_MAX_TOP + 1];
};

struct pass {
    const struct mh__plot_scan *s;
    struct mh__plot_cols *c;
    struct mh_model *model;
    struct state now;
    int last;      /* last column filled, -1 before the window */
    int done;      /* the window is behind us */
    uint64_t ord;  /* ordinal of the event being applied */
    uint64_t seen; /* events seen so far */
    struct mh__plot_catacc *cat; /* by category, else NULL */
    struct mh__hmap live;        /* live blocks' sites (plot_sites.c) */
    int error;
};

static void set_column(struct pass *p, int col)
{
    struct mh__plot_cols *c = p->c;
    unsigned ng = c->ngroups + 1;
    c->alloc[col] = p->now.alloc;
    c->reserved[col] = p->now.reserved;
    c->driver[col] = p->now.driver;
    if (p->cat)
        p->cat->moment[col] = (int64_t)p->ord - 1;
    else
        memcpy(c->groups + (size_t)col * ng, p->now.groups, ng * sizeof p->now.groups[0]);
}

static void raise_column(struct pass *p, int col)
{
    struct mh__plot_cols *c = p->c;
    if (p->now.alloc > c->alloc[col]) {
        c->alloc[col] = p->now.alloc;
        if (p->cat) {
            p->cat->moment[col] = (int64_t)p->ord;
            mh__plot_cat_moved(p->cat);
        } else {
            memcpy(c->groups + (size_t)col * (c->ngroups + 1), p->now.groups,
                   (c->ngroups + 1) * sizeof p->now.groups[0]);
        }
    }
    if (p->now.reserved > c->reserved[col])
        c->reserved[col] = p->now.reserved;
    if (p->now.driver > c->driver[col])
        c->driver[col] = p->now.driver;
}

/* Fills columns up to `col` with the current state (the state before the
 * event about to be applied). */
static void carry_to(struct pass *p, int col)
{
    if (p->cat && p->last < col)
        mh__plot_cat_close(p->cat);
    while (p->last < col)
        set_column(p, ++p->last);
    if (p->cat && !p->done)
        p->cat->open = p->last;
}

static void apply_deltas(struct pass *p, const struct mh_event *ev, const struct mh_apply_result *res)
{
    const struct mh__plot_scan *s = p->s;
    p->now.alloc += (uint64_t)res->allocated_delta;
    p->now.reserved += (uint64_t)res->reserved_delta;
    if (res->block_size && res->allocated_delta) {
        unsigned g = p->c->ngroups;
        uint32_t site = p->cat ? UINT32_MAX
                               : mh__plot_site_find(&s->sites, &p->live, p->model, ev, res);
        if (site < s->nstacks && s->stacks[site].seen)
            g = (unsigned)s->stacks[site].group;
        p->now.groups[g] += (uint64_t)res->allocated_delta;
    }
    if (ev->kind == MH_EV_DRIVER_ALLOC || ev->kind == MH_EV_DRIVER_FREE) {
        struct mh_mem_stats st;
        if (mh_model_stats(p->model, s->device, &st) == 0)
            p->now.driver = st.driver_outside;
    }
}

static int column_of(const struct mh__plot_cols *c, uint64_t t)
{
    if (t <= c->t_begin)
        return 0;
    double b = mh__plot_warp(c->warp, c->t0, c->t_begin);
    double span = mh__plot_warp(c->warp, c->t0, c->t_end) - b;
    uint64_t col = (uint64_t)((mh__plot_warp(c->warp, c->t0, t) - b) / span * c->n);
    return col >= (uint64_t)c->n ? c->n - 1 : (int)col;
}

static void book(struct pass *p, int ended, const struct mh__livecat_end *end)
{
    if (ended)
        mh__plot_cat_end(p->cat, end, (int64_t)p->ord);
}

static void on_event(struct pass *p, const struct mh_event *ev, const struct mh_apply_result *res)
{
    const struct mh__plot_cols *c = p->c;
    struct mh__livecat_end end;
    int ended = 0;
    if (p->cat) {
        ended = mh__plot_cat_observe(p->cat, p->model, ev, res, p->ord, &end);
        if (ended < 0)
            p->error = ended;
    }
    int changes = res->allocated_delta || res->reserved_delta || ev->kind == MH_EV_DRIVER_ALLOC ||
                  ev->kind == MH_EV_DRIVER_FREE;
    if (ev->device != p->s->device || !changes) {
        book(p, ended > 0, &end);
        return;
    }
    if (p->done || ev->time_ns < c->t_begin) {
        book(p, ended > 0, &end);
        apply_deltas(p, ev, res);
        return;
    }
    if (ev->time_ns > c->t_end) {
        carry_to(p, c->n - 1);
        p->done = 1;
        if (p->cat)
            mh__plot_cat_close(p->cat);
        book(p, ended > 0, &end);
        apply_deltas(p, ev, res);
        return;
    }
    int col = column_of(c, ev->time_ns);
    if (col < p->last)
        col = p->last; /* out-of-order time: count it where we are */
    carry_to(p, col);
    book(p, ended > 0, &end);
    apply_deltas(p, ev, res);
    raise_column(p, col);
}

static int alloc_cols(struct mh__plot_cols *c, int ncols, unsigned ngroups)
{
    memset(c, 0, sizeof *c);
    c->n = ncols;
    c->ngroups = ngroups;
    c->alloc = calloc((size_t)ncols, sizeof *c->alloc);
    c->reserved = calloc((size_t)ncols, sizeof *c->reserved);
    c->driver = calloc((size_t)ncols, sizeof *c->driver);
    c->groups = calloc((size_t)ncols * (ngroups + 1), sizeof *c->groups);
    return c->alloc && c->reserved && c->driver && c->groups ? 0 : MH_ENOMEM;
}

/* Pass 2, an observer of the session's pass. */
static int cols_event(void *user, struct mh__session *ses, const struct mh_event *ev,
                      const struct mh_apply_result *res)
{
    struct pass *p = user;
    p->model = mh__session_model(ses);
    p->ord = mh__session_index(ses);
    on_event(p, ev, res);
    p->seen = p->ord + 1;
    return p->error;
}

int mh__plot_cols_run(struct mh__session *r, const struct mh__plot_opts *o,
                      const struct mh__plot_scan *s, int ncols, uint64_t t_begin, uint64_t t_end,
                      struct mh__plot_cols *c)
{
    int by_cat = o->color == MH__PLOT_COLOR_CATEGORY;
    int rc = alloc_cols(c, ncols, by_cat ? MH__CAT_COUNT - 1 : s->ngroups);
    if (rc < 0)
        return rc;
    c->by_category = by_cat;
    c->t_begin = t_begin;
    c->warp = &s->warp;
    c->t0 = s->t0;
    c->t_end = t_end > t_begin ? t_end : t_begin + 1;
    struct pass p;
    struct mh__plot_catacc cat;
    memset(&p, 0, sizeof p);
    memset(&cat, 0, sizeof cat);
    p.s = s;
    p.c = c;
    p.last = -1;
    if (by_cat) {
        rc = mh__plot_cat_init(&cat, ncols, s->device,
                               s->has_peak ? (int64_t)s->peak.event_index : -1);
        p.cat = &cat;
    }
    const struct mh__observer obs = {"plot-columns", &p, NULL, cols_event, NULL};
    if (rc == 0)
        rc = mh__session_pass(r, &obs);
    p.ord = p.seen; /* past the last event */
    if (rc == 0)
        carry_to(&p, c->n - 1);
    if (rc == 0 && by_cat)
        rc = mh__plot_cat_finish(&cat, c);
    mh__plot_cat_release(&cat);
    mh__addrmap_destroy(&p.live);
    return rc;
}

void mh__plot_cols_free(struct mh__plot_cols *c)
{
    free(c->alloc);
    free(c->reserved);
    free(c->driver);
    free(c->groups);
    memset(c, 0, sizeof *c);
}
