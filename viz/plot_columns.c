/* plot_columns.c - pass 2 of the timeline: streams the file into one column
 * per pixel (see plot_internal.h).
 *
 * Each column keeps the maxima of allocated, reserved and driver bytes over
 * its time slice, plus the bytes of every group at the moment the allocated
 * maximum was reached, so the stacked areas add up exactly to the allocated
 * curve. A column with no event holds the state carried over from the left.
 * Cost per event: a few additions and, on a new column maximum, a copy of
 * ngroups + 1 counters. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "viz/plot_internal.h"

struct state {
    uint64_t alloc, reserved, driver;
    uint64_t groups[MH_PLOT_MAX_TOP + 1];
};

struct pass {
    const struct mh__plot_scan *s;
    struct mh__plot_cols *c;
    struct mh_model *model;
    struct state now;
    int last;      /* last column filled, -1 before the window */
    int done;      /* the window is behind us */
};

static void set_column(struct pass *p, int col)
{
    struct mh__plot_cols *c = p->c;
    unsigned ng = c->ngroups + 1;
    c->alloc[col] = p->now.alloc;
    c->reserved[col] = p->now.reserved;
    c->driver[col] = p->now.driver;
    memcpy(c->groups + (size_t)col * ng, p->now.groups, ng * sizeof p->now.groups[0]);
}

static void raise_column(struct pass *p, int col)
{
    struct mh__plot_cols *c = p->c;
    if (p->now.alloc > c->alloc[col]) {
        c->alloc[col] = p->now.alloc;
        memcpy(c->groups + (size_t)col * (c->ngroups + 1), p->now.groups,
               (c->ngroups + 1) * sizeof p->now.groups[0]);
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
    while (p->last < col)
        set_column(p, ++p->last);
}

static void apply_deltas(struct pass *p, const struct mh_event *ev, const struct mh_apply_result *res)
{
    const struct mh__plot_scan *s = p->s;
    p->now.alloc += (uint64_t)res->allocated_delta;
    p->now.reserved += (uint64_t)res->reserved_delta;
    if (res->block_size && res->allocated_delta) {
        unsigned g = p->c->ngroups;
        if (res->block_stack < s->nstacks && s->stacks[res->block_stack].seen)
            g = (unsigned)s->stacks[res->block_stack].group;
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
    uint64_t span = c->t_end - c->t_begin;
    uint64_t col = (uint64_t)((double)(t - c->t_begin) / (double)span * c->n);
    return col >= (uint64_t)c->n ? c->n - 1 : (int)col;
}

static void on_event(struct pass *p, const struct mh_event *ev, const struct mh_apply_result *res)
{
    const struct mh__plot_cols *c = p->c;
    int changes = res->allocated_delta || res->reserved_delta || ev->kind == MH_EV_DRIVER_ALLOC ||
                  ev->kind == MH_EV_DRIVER_FREE;
    if (ev->device != p->s->device || !changes)
        return;
    if (p->done || ev->time_ns < c->t_begin) {
        apply_deltas(p, ev, res);
        return;
    }
    if (ev->time_ns > c->t_end) {
        carry_to(p, c->n - 1);
        p->done = 1;
        apply_deltas(p, ev, res);
        return;
    }
    int col = column_of(c, ev->time_ns);
    if (col < p->last)
        col = p->last; /* out-of-order time: count it where we are */
    carry_to(p, col);
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

int mh__plot_cols_run(struct mh_reader *r, const struct mh_plot_opts *o,
                      const struct mh__plot_scan *s, int ncols, uint64_t t_begin, uint64_t t_end,
                      struct mh__plot_cols *c)
{
    int rc = alloc_cols(c, ncols, s->ngroups);
    if (rc < 0)
        return rc;
    c->t_begin = t_begin;
    c->t_end = t_end > t_begin ? t_end : t_begin + 1;
    struct pass p;
    memset(&p, 0, sizeof p);
    p.s = s;
    p.c = c;
    p.last = -1;
    if ((rc = mh_reader_rewind(r)) < 0 || (rc = mh_model_new(&o->model, &p.model)) < 0)
        return rc;
    struct mh_event ev;
    struct mh_apply_result res;
    while ((rc = mh_reader_next(r, &ev)) == 1) {
        memset(&res, 0, sizeof res);
        if ((rc = mh_model_apply(p.model, &ev, &res)) < 0)
            break;
        on_event(&p, &ev, &res);
    }
    mh_model_free(p.model);
    if (rc == MH_ENOMEM)
        return rc;
    carry_to(&p, c->n - 1);
    return 0;
}

void mh__plot_cols_free(struct mh__plot_cols *c)
{
    free(c->alloc);
    free(c->reserved);
    free(c->driver);
    free(c->groups);
    memset(c, 0, sizeof *c);
}
