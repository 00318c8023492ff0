/* checkpoint.c - activation-checkpointing estimates (model described in
 * layers.h): per layer, pass and call (layer_calls.c) the backward start, the saved
 * activations that recomputation drops and the recompute transient; the
 * allocated curve re-evaluated with a set of layers checkpointed; the ranked
 * plan. Works on the tables of layers.c and owns only scratch. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "layers_int.h"

static struct mh__lgroup *group_of(const struct mh_layers *ly, size_t rec)
{
    return &ly->groups[ly->group_of[rec]];
}

/* A forward activation freed in its step's backward, after its layer's
 * backward began, and, where threads are known, by autograd's thread: a
 * tensor the program's own thread frees after backward (a local variable of
 * a training-step function) is held by the program, which checkpointing
 * would not change. */
static int freed_in_layer_backward(const struct mh_layers *ly, size_t i)
{
    size_t n;
    const struct mh_alloc_rec *r = &mh__lifetimes_records(ly->lt, &n)[i];
    if (ly->layer_of[i] < 0 || r->alloc_phase != MH_PHASE_FORWARD || r->before_forward ||
        r->category != MH_CAT_ACTIVATION || r->free_index == MH_NEVER ||
        r->free_step != r->alloc_step || r->free_phase != MH_PHASE_BACKWARD ||
        (mh__lifetimes_threaded(ly->lt) && !r->freed_elsewhere))
        return 0;
    const struct mh__lgroup *g = group_of(ly, i);
    return g->bwd_start != MH_NEVER && r->free_index >= g->bwd_start;
}

/* Saved for backward: such an activation that is not the layer's output
 * (where the recording tags module outputs), which the next layer keeps
 * even where the layer's own backward used it too (an in-place ReLU ending
 * a ResNet block). */
int mh__layers_is_saved(const struct mh_layers *ly, size_t i)
{
    return !ly->output[i] && freed_in_layer_backward(ly, i);
}

/* Forward allocation of a layer's call, for the working-set sweep. */
struct fwd_item {
    uint32_t group;
    uint64_t rec;
};

static int by_group(const void *a, const void *b)
{
    const struct fwd_item *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return (x->rec > y->rec) - (x->rec < y->rec);
}

struct sweep_ev {
    uint64_t index;
    int64_t delta;
};

static int by_index(const void *a, const void *b)
{
    const struct sweep_ev *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* Largest live bytes of one group's forward allocations within its forward. */
static uint64_t group_max_live(const struct mh_alloc_rec *recs, const struct fwd_item *it,
                               size_t n, struct sweep_ev *ev)
{
    uint64_t last = recs[it[n - 1].rec].alloc_index;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const struct mh_alloc_rec *r = &recs[it[i].rec];
        ev[m++] = (struct sweep_ev){r->alloc_index, (int64_t)r->size};
        if (r->free_index <= last)
            ev[m++] = (struct sweep_ev){r->free_index, -(int64_t)r->size};
    }
    qsort(ev, m, sizeof *ev, by_index);
    int64_t run = 0, best = 0;
    for (size_t i = 0; i < m; i++) {
        run += ev[i].delta;
        if (run > best)
            best = run;
    }
    return (uint64_t)best;
}

static int transients(struct mh_layers *ly, const struct mh_alloc_rec *recs, size_t n)
{
    struct fwd_item *it = malloc((n ? n : 1) * sizeof *it);
    struct sweep_ev *ev = malloc((2 * n + 1) * sizeof *ev);
    size_t m = 0;
    if (!it || !ev) {
        free(it);
        free(ev);
        return MH_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        if (ly->layer_of[i] >= 0 && recs[i].alloc_phase == MH_PHASE_FORWARD && !recs[i].before_forward)
            it[m++] = (struct fwd_item){ly->group_of[i], i};
    qsort(it, m, sizeof *it, by_group);
    for (size_t a = 0, b; a < m; a = b) {
        for (b = a + 1; b < m && it[b].group == it[a].group; b++)
            ;
        struct mh__lgroup *g = group_of(ly, it[a].rec);
        uint64_t live = group_max_live(recs, it + a, b - a, ev);
        g->fwd_first = recs[it[a].rec].alloc_index;
        g->transient = live > g->moved ? live - g->moved : 0;
    }
    free(it);
    free(ev);
    return 0;
}

int mh__layers_groups(struct mh_layers *ly)
{
    size_t n;
    const struct mh_alloc_rec *recs = mh__lifetimes_records(ly->lt, &n);
    for (size_t i = 0; i < n; i++) {
        if (ly->layer_of[i] < 0 || recs[i].alloc_phase != MH_PHASE_BACKWARD || recs[i].alloc_step < 0)
            continue;
        struct mh__lgroup *g = group_of(ly, i);
        if (recs[i].alloc_index < g->bwd_start)
            g->bwd_start = recs[i].alloc_index;
    }
    for (size_t i = 0; i < n; i++)
        if (mh__layers_is_saved(ly, i))
            group_of(ly, i)->moved += recs[i].size;
    return transients(ly, recs, n);
}

struct spike {
    uint64_t index;
    uint64_t extra;
};

static int by_spike(const void *a, const void *b)
{
    const struct spike *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* Spikes of the checkpointed groups: the recompute before each backward
 * (saved activations plus the transient) and the no-grad forward. */
static size_t make_spikes(const struct mh_layers *ly, const uint8_t *in, struct spike *sp)
{
    size_t m = 0;
    for (size_t l = 0; l < ly->nlayers; l++) {
        if (!in[l])
            continue;
        for (size_t k = ly->first_group[l]; k < ly->first_group[l + 1]; k++) {
            const struct mh__lgroup *g = &ly->groups[k];
            if (g->bwd_start == MH_NEVER || g->moved == 0)
                continue;
            sp[m++] = (struct spike){g->bwd_start, g->moved + g->transient};
            if (g->fwd_first != MH_NEVER)
                sp[m++] = (struct spike){g->fwd_first, g->transient};
        }
    }
    qsort(sp, m, sizeof *sp, by_spike);
    return m;
}

static uint64_t curve_peak(const struct mh_layers *ly, const int64_t *d, const struct spike *sp,
                           size_t nsp)
{
    int64_t run = 0, best = 0;
    size_t k = 0;
    for (uint64_t e = 0; e < ly->nevents; e++) {
        for (; k < nsp && sp[k].index == e; k++)
            if (run + (int64_t)sp[k].extra > best)
                best = run + (int64_t)sp[k].extra;
        run += d[e];
        if (run > best)
            best = run;
    }
    return (uint64_t)best;
}

int mh__layers_estimate(const struct mh_layers *ly, const size_t *layers, size_t n, uint64_t *peak,
                        double *recompute_share)
{
    size_t nrec;
    const struct mh_alloc_rec *recs = mh__lifetimes_records(ly->lt, &nrec);
    uint8_t *in = calloc(ly->nlayers ? ly->nlayers : 1, 1);
    int64_t *d = malloc((ly->nevents + 1) * sizeof *d);
    struct spike *sp = malloc((2 * ly->ngroups + 1) * sizeof *sp);
    if (!in || !d || !sp) {
        free(in);
        free(d);
        free(sp);
        return MH_ENOMEM;
    }
    uint64_t volume = 0;
    for (size_t i = 0; i < n; i++)
        if (layers[i] < ly->nlayers && !in[layers[i]]) {
            in[layers[i]] = 1;
            volume += ly->stats[layers[i]].forward_volume;
        }
    memcpy(d, ly->delta, (ly->nevents + 1) * sizeof *d);
    for (size_t i = 0; i < nrec; i++) {
        if (ly->layer_of[i] < 0 || !in[ly->layer_of[i]] || !freed_in_layer_backward(ly, i))
            continue;
        int64_t size = (int64_t)recs[i].size;
        uint64_t bwd_start = group_of(ly, i)->bwd_start;
        if (!ly->output[i]) { /* saved: recomputed at the layer's backward */
            d[recs[i].alloc_index] -= size;
            d[bwd_start] += size;
        } else { /* the layer's output: the layer's backward no longer keeps it, so it is
                  * freed once the next layer's backward is done, before the recompute */
            d[recs[i].free_index] += size;
            d[bwd_start - 1] -= size;
        }
    }
    size_t nsp = make_spikes(ly, in, sp);
    *peak = curve_peak(ly, d, sp, nsp);
    if (recompute_share)
        *recompute_share = ly->forward_total ? (double)volume / (double)ly->forward_total : 0.0;
    free(in);
    free(d);
    free(sp);
    return 0;
}

int mh__layers_reductions(struct mh_layers *ly)
{
    for (size_t l = 0; l < ly->nlayers; l++) {
        struct mh_layer_stats *st = &ly->stats[l];
        if (!st->candidate)
            continue;
        uint64_t p;
        int rc = mh__layers_estimate(ly, &l, 1, &p, NULL);
        if (rc < 0)
            return rc;
        st->reduction = ly->peak > p ? ly->peak - p : 0;
    }
    return 0;
}

/* Sort key of a candidate (no global context, so the library stays reentrant). */
struct rank {
    uint64_t reduction, saved;
    size_t layer;
};

static int by_rank(const void *a, const void *b)
{
    const struct rank *x = a, *y = b;
    if (x->reduction != y->reduction)
        return x->reduction < y->reduction ? 1 : -1;
    if (x->saved != y->saved)
        return x->saved < y->saved ? 1 : -1;
    return (x->layer > y->layer) - (x->layer < y->layer);
}

static int rank_candidates(const struct mh_layers *ly, size_t *order, size_t *m)
{
    struct rank *rk = malloc((ly->nlayers ? ly->nlayers : 1) * sizeof *rk);
    if (!rk)
        return MH_ENOMEM;
    *m = 0;
    for (size_t l = 0; l < ly->nlayers; l++)
        if (ly->stats[l].candidate && ly->stats[l].reduction > 0)
            rk[(*m)++] = (struct rank){ly->stats[l].reduction, ly->stats[l].saved_at_peak, l};
    qsort(rk, *m, sizeof *rk, by_rank);
    for (size_t i = 0; i < *m; i++)
        order[i] = rk[i].layer;
    free(rk);
    return 0;
}

int mh__layers_plan(const struct mh_layers *ly, size_t **order, uint64_t **peak_after, size_t *n,
                    size_t *best)
{
    size_t m = 0;
    *order = malloc((ly->nlayers ? ly->nlayers : 1) * sizeof **order);
    *peak_after = malloc((ly->nlayers ? ly->nlayers : 1) * sizeof **peak_after);
    *n = *best = 0;
    if (!*order || !*peak_after)
        return MH_ENOMEM;
    int rc = rank_candidates(ly, *order, &m);
    if (rc < 0)
        return rc;
    uint64_t lowest = ly->peak;
    for (size_t k = 0; k < m; k++) {
        rc = mh__layers_estimate(ly, *order, k + 1, &(*peak_after)[k], NULL);
        if (rc < 0)
            return rc;
        if ((*peak_after)[k] < lowest)
            lowest = (*peak_after)[k];
    }
    *n = m;
    uint64_t most = ly->peak - lowest;
    if ((double)most < MH__PLAN_MIN_SHARE * (double)ly->peak)
        most = 0; /* not worth a recompute */
    for (size_t k = 0; k < m && most > 0; k++)
        if ((double)(ly->peak - (*peak_after)[k]) >= 0.95 * (double)most) {
            *best = k + 1;
            break;
        }
    return 0;
}
