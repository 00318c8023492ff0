/* checkpoint.c - activation-checkpointing estimates (model described in
 * layers.h), one chunk at a time (layers_int.h): per layer, pass span and
 * call (layer_calls.c) the backward start, the saved activations that
 * recomputation drops and the recompute transient, and the attribution of
 * the peak's pass span. What this does to the allocated curve is
 * ckpt_curve.c. Owns only scratch. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "layers_int.h"

static struct mh__lgroup *group_of(const struct mh__layers *ly, size_t i)
{
    return &ly->chunk.groups[ly->chunk.recs[i].group];
}

/* A forward activation freed in its step's backward, after its layer's
 * backward began, and, where threads are known, by autograd's thread: a
 * tensor the program's own thread frees after backward (a local variable of
 * a training-step function) is held by the program, which checkpointing
 * would not change. */
int mh__chunk_moves(const struct mh__layers *ly, size_t i)
{
    const struct mh__crec *h = &ly->chunk.recs[i];
    const struct mh__alloc_rec *r = &h->rec;
    if (!h->ended || r->alloc_phase != MH_PHASE_FORWARD || r->before_forward ||
        r->category != MH__CAT_ACTIVATION || r->free_step != r->alloc_step ||
        r->free_phase != MH_PHASE_BACKWARD || (ly->threaded && !r->freed_elsewhere))
        return 0;
    const struct mh__lgroup *g = group_of(ly, i);
    return g->bwd_start != MH__NEVER && r->free_index >= g->bwd_start;
}

/* Saved for backward: such an activation that is not the layer's output
 * (where the recording tags module outputs), which the next layer keeps
 * even where the layer's own backward used it too (an in-place ReLU ending
 * a ResNet block). */
int mh__chunk_is_saved(const struct mh__layers *ly, size_t i)
{
    return !ly->chunk.recs[i].output && mh__chunk_moves(ly, i);
}

static int is_forward(const struct mh__alloc_rec *r)
{
    return r->alloc_phase == MH_PHASE_FORWARD && !r->before_forward;
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

/* Largest live bytes of one group's forward allocations within its
 * forward; `it` lists them in allocation order. */
static uint64_t group_max_live(const struct mh__layers *ly, const size_t *it, size_t n,
                               struct sweep_ev *ev)
{
    const struct mh__crec *recs = ly->chunk.recs;
    uint64_t last = recs[it[n - 1]].rec.alloc_index;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const struct mh__alloc_rec *r = &recs[it[i]].rec;
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

/* The held forward records grouped by group, in allocation order. */
static size_t *forward_by_group(const struct mh__layers *ly, size_t *m)
{
    const struct mh__chunk *c = &ly->chunk;
    size_t *first = calloc(c->ngroups + 1, sizeof *first);
    size_t *it = malloc((c->nrecs ? c->nrecs : 1) * sizeof *it);
    *m = 0;
    if (!first || !it) {
        free(first);
        free(it);
        return NULL;
    }
    for (size_t i = 0; i < c->nrecs; i++)
        if (is_forward(&c->recs[i].rec))
            first[c->recs[i].group + 1]++;
    for (size_t g = 0; g < c->ngroups; g++)
        first[g + 1] += first[g];
    for (size_t i = 0; i < c->nrecs; i++) /* counting sort: allocation order within a group */
        if (is_forward(&c->recs[i].rec))
            it[first[c->recs[i].group]++] = i;
    *m = first[c->ngroups];
    free(first);
    return it;
}

static int transients(struct mh__layers *ly)
{
    const struct mh__chunk *c = &ly->chunk;
    size_t m;
    size_t *it = forward_by_group(ly, &m);
    struct sweep_ev *ev = malloc((2 * m + 1) * sizeof *ev);
    if (!it || !ev) {
        free(it);
        free(ev);
        return MH_ENOMEM;
    }
    for (size_t a = 0, b; a < m; a = b) {
        uint32_t g0 = c->recs[it[a]].group;
        for (b = a + 1; b < m && c->recs[it[b]].group == g0; b++)
            ;
        struct mh__lgroup *g = &c->groups[g0];
        uint64_t live = group_max_live(ly, it + a, b - a, ev);
        g->fwd_first = c->recs[it[a]].rec.alloc_index;
        g->transient = live > g->moved ? live - g->moved : 0;
    }
    free(it);
    free(ev);
    return 0;
}

/* What the peak's pass span tells about each layer: its forward volume,
 * saved activations, recompute transient and whether it is a candidate. */
static void attribute_peak_span(struct mh__layers *ly)
{
    const struct mh__chunk *c = &ly->chunk;
    for (size_t i = 0; i < c->nrecs; i++) {
        const struct mh__crec *h = &c->recs[i];
        if (h->span != ly->peak_span || !is_forward(&h->rec))
            continue;
        struct mh__layer_stats *st = &ly->stats[h->layer];
        st->forward_volume += h->rec.size;
        ly->forward_total += h->rec.size;
        if (mh__chunk_is_saved(ly, i)) {
            st->saved_total += h->rec.size;
            if (mh__alloc_rec_live_at(&h->rec, ly->peak_index))
                st->saved_at_peak += h->rec.size;
        }
    }
    for (size_t k = 0; k < c->ngroups; k++) {
        const struct mh__lgroup *g = &c->groups[k];
        if (g->span != ly->peak_span)
            continue;
        struct mh__layer_stats *st = &ly->stats[g->layer];
        if (g->transient > st->transient)
            st->transient = g->transient;
        st->candidate |= g->bwd_start != MH__NEVER && g->moved > 0;
    }
}

int mh__chunk_fill_groups(struct mh__layers *ly)
{
    struct mh__chunk *c = &ly->chunk;
    for (size_t i = 0; i < c->nrecs; i++) {
        const struct mh__alloc_rec *r = &c->recs[i].rec;
        if (r->alloc_phase != MH_PHASE_BACKWARD || r->alloc_step < 0)
            continue;
        struct mh__lgroup *g = group_of(ly, i);
        if (r->alloc_index < g->bwd_start)
            g->bwd_start = r->alloc_index;
    }
    for (size_t i = 0; i < c->nrecs; i++)
        if (mh__chunk_is_saved(ly, i))
            group_of(ly, i)->moved += c->recs[i].rec.size;
    int rc = transients(ly);
    if (rc == 0 && ly->peak_span >= c->span_lo && ly->peak_span <= c->span_hi)
        attribute_peak_span(ly);
    return rc;
}

