/* plot_category.c - the timeline coloured by memory category (`memhist plot
 * --color category`), pass 2's bookkeeping (see plot_int.h).
 *
 * The rule: an allocation's category is the one `memhist report` gives it
 * (src/analysis/categories.h: from its lifetime and the step and phase it was
 * allocated and freed in), computed exactly, not guessed per site.
 * Categories are known only when an allocation's life ends, so pass 2 runs
 * mh__livecat (memory bounded by the live allocations) and books every
 * allocation at its end into the columns it was live in: column j shows the
 * state right after event moment[j] (the moment of its allocated maximum,
 * or of the last event before it), and an allocation made at event a and
 * ended at event f is live there when a <= moment[j] < f. Closed columns have
 * increasing moments, so they take a difference array update (a binary
 * search for the first one); the open column's moment can still move to a
 * later event, so what ends in it waits in `pending` and is dropped if the
 * moment moves. Allocations alive at the end are booked by
 * mh__livecat_finish. The stacked areas then add up exactly to the
 * allocated curve, and the legend's bytes at the peak equal `memhist
 * report`'s category_at_peak. Cost per event: O(1) plus a binary search
 * over the columns per freed allocation; memory: columns x categories plus
 * the live allocations. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "palette.h"
#include "plot_int.h"

_Static_assert(MH__PALETTE_CATEGORIES == MH__CAT_COUNT, "a fill colour for every category");

int mh__plot_cat_init(struct mh__plot_catacc *a, int ncols, int device, int64_t peak)
{
    memset(a, 0, sizeof *a);
    a->device = device;
    a->n = ncols;
    a->open = -1;
    a->peak = peak;
    a->moment = malloc((size_t)ncols * sizeof *a->moment);
    a->diff = calloc(((size_t)ncols + 1) * MH__CAT_COUNT, sizeof *a->diff);
    if (!a->moment || !a->diff)
        return MH_ENOMEM;
    for (int i = 0; i < ncols; i++)
        a->moment[i] = -1;
    return mh__livecat_new(&a->lc);
}

void mh__plot_cat_release(struct mh__plot_catacc *a)
{
    mh__livecat_free(a->lc);
    free(a->moment);
    free(a->diff);
    memset(a, 0, sizeof *a);
}

int mh__plot_cat_observe(struct mh__plot_catacc *a, const struct mh_model *m,
                         const struct mh_event *ev, const struct mh_apply_result *res,
                         uint64_t ord, struct mh__livecat_end *end)
{
    int rc = mh__livecat_observe(a->lc, m, ev, res, ord, end);
    if (rc < 0)
        return rc;
    return rc == 1 && end->ended && end->device == a->device;
}

/* Adds `size` bytes of category `cat` to columns [from, to). */
static void add_range(struct mh__plot_catacc *a, int from, int to, int cat, uint64_t size)
{
    if (from >= to)
        return;
    a->diff[(size_t)from * MH__CAT_COUNT + (size_t)cat] += (int64_t)size;
    a->diff[(size_t)to * MH__CAT_COUNT + (size_t)cat] -= (int64_t)size;
}

/* First of the columns [0, n) whose moment is at least `ord`. */
static int first_at_or_after(const struct mh__plot_catacc *a, int n, int64_t ord)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (a->moment[mid] < ord)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void mh__plot_cat_end(struct mh__plot_catacc *a, const struct mh__livecat_end *end, int64_t ord)
{
    int64_t born = (int64_t)end->tag;
    int cat = end->category < MH__CAT_COUNT ? end->category : MH__CAT_UNKNOWN;
    int closed = a->open >= 0 ? a->open : a->n;
    if (a->open < 0 && a->moment[a->n - 1] < 0)
        closed = 0; /* the window has not started: no column yet */
    add_range(a, first_at_or_after(a, closed, born), closed, cat, end->size);
    if (a->open >= 0 && a->moment[a->open] >= born)
        a->pending[cat] += end->size;
    if (a->peak >= 0 && born <= a->peak && a->peak < ord)
        a->at_peak[cat] += end->size;
}

void mh__plot_cat_close(struct mh__plot_catacc *a)
{
    if (a->open < 0)
        return;
    for (int k = 0; k < MH__CAT_COUNT; k++)
        add_range(a, a->open, a->open + 1, k, a->pending[k]);
    memset(a->pending, 0, sizeof a->pending);
    a->open = -1;
}

void mh__plot_cat_moved(struct mh__plot_catacc *a)
{
    memset(a->pending, 0, sizeof a->pending);
}

static int book_live(void *user, const struct mh__livecat_end *end)
{
    struct mh__plot_catacc *a = user;
    if (end->device == a->device)
        mh__plot_cat_end(a, end, INT64_MAX);
    return 0;
}

int mh__plot_cat_finish(struct mh__plot_catacc *a, struct mh__plot_cols *c)
{
    mh__plot_cat_close(a);
    int rc = mh__livecat_finish(a->lc, book_live, a);
    if (rc < 0)
        return rc;
    int64_t run[MH__CAT_COUNT] = {0};
    for (int i = 0; i < c->n; i++)
        for (int k = 0; k < MH__CAT_COUNT; k++) {
            run[k] += a->diff[(size_t)i * MH__CAT_COUNT + (size_t)k];
            c->groups[(size_t)i * MH__CAT_COUNT + (size_t)k] = run[k] > 0 ? (uint64_t)run[k] : 0;
        }
    memcpy(c->cat_peak, a->at_peak, sizeof c->cat_peak);
    return 0;
}

