/* ckpt_curve.c - what checkpointing does to the allocated curve, one chunk
 * at a time (layers_int.h). Checkpointing a layer moves each of its saved
 * activations from its allocation to the layer's backward start, frees the
 * layer's output when the next layer's backward is done, and adds the
 * recompute spikes (the saved activations plus the transient before each
 * backward, the transient at the no-grad forward). Moving only lowers the
 * curve and every change lies within the chunk of the allocation it moves,
 * so a chunk is summarized by the points where some layer changes it: at
 * each, the curve before its event, the highest base value up to the next
 * point, the spikes and the changes, by layer. The estimated peak for a
 * set of layers is then the highest value of the summaries with the set's
 * entries applied. Each layer's own estimate is raised chunk by chunk; the
 * summaries are spooled (spool.h) for the plan, whose sets are known only
 * once every layer's estimate is. Owns the summary's arrays. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "layers_int.h"
#include "grow.h"

/* An entry before sorting: at chunk-relative event `rel`, a spike (kind 0,
 * evaluated before the event) or a change (kind 1) of `layer`. */
struct mh__citem {
    uint32_t rel;
    uint32_t kind;
    uint32_t layer;
    int64_t value;
};

void mh__csum_free(struct mh__csum *s)
{
    free(s->pts);
    free(s->ents);
    free(s->items);
    memset(s, 0, sizeof *s);
}

static int add_item(struct mh__csum *s, uint64_t rel, uint32_t kind, int32_t layer, int64_t value)
{
    if (MH__GROW(s->items, s->nitems, s->capitems, 256) < 0)
        return MH_ENOMEM;
    s->items[s->nitems++] = (struct mh__citem){(uint32_t)rel, kind, (uint32_t)layer, value};
    return 0;
}

/* The changes of each moved record and the spikes of each group. */
static int collect_items(struct mh__layers *ly)
{
    const struct mh__chunk *c = &ly->chunk;
    struct mh__csum *s = &ly->sum;
    int rc = 0;
    s->nitems = 0;
    for (size_t i = 0; i < c->nrecs && rc == 0; i++) {
        if (!mh__chunk_moves(ly, i))
            continue;
        const struct mh__crec *h = &c->recs[i];
        int64_t size = (int64_t)h->rec.size;
        uint64_t bwd = c->groups[h->group].bwd_start - c->lo;
        if (!h->output) { /* saved: recomputed at the layer's backward */
            rc = add_item(s, h->rec.alloc_index - c->lo, 1, h->layer, -size);
            if (rc == 0)
                rc = add_item(s, bwd, 1, h->layer, size);
        } else { /* the output: freed once the next layer's backward is done */
            rc = add_item(s, h->rec.free_index - c->lo, 1, h->layer, size);
            if (rc == 0)
                rc = add_item(s, bwd - 1, 1, h->layer, -size);
        }
    }
    for (size_t k = 0; k < c->ngroups && rc == 0; k++) {
        const struct mh__lgroup *g = &c->groups[k];
        if (g->bwd_start == MH__NEVER || g->moved == 0)
            continue;
        rc = add_item(s, g->bwd_start - c->lo, 0, g->layer, (int64_t)(g->moved + g->transient));
        if (rc == 0 && g->fwd_first != MH__NEVER)
            rc = add_item(s, g->fwd_first - c->lo, 0, g->layer, (int64_t)g->transient);
    }
    return rc;
}

static int by_rel_kind_layer(const void *a, const void *b)
{
    const struct mh__citem *x = a, *y = b;
    if (x->rel != y->rel)
        return x->rel < y->rel ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return (x->layer > y->layer) - (x->layer < y->layer);
}

/* Entries of the sorted items: one change per layer and point (summed), one
 * spike per layer and point (the largest: the same curve lies below it). */
static int make_entries(struct mh__csum *s)
{
    s->npts = s->nents = 0;
    for (size_t i = 0; i < s->nitems; i++) {
        const struct mh__citem *it = &s->items[i];
        int new_point = i == 0 || it->rel != s->items[i - 1].rel;
        int same = !new_point && it->kind == s->items[i - 1].kind &&
                   it->layer == s->items[i - 1].layer;
        if (new_point) {
            if (MH__GROW(s->pts, s->npts, s->cappts, 64) < 0)
                return MH_ENOMEM;
            s->pts[s->npts++] = (struct mh__cpoint){0, 0, 0, 0};
        }
        struct mh__cpoint *p = &s->pts[s->npts - 1];
        if (same) {
            struct mh__centry *e = &s->ents[s->nents - 1];
            e->value = it->kind ? e->value + it->value : (it->value > e->value ? it->value : e->value);
            continue;
        }
        if (MH__GROW(s->ents, s->nents, s->capents, 256) < 0)
            return MH_ENOMEM;
        s->ents[s->nents++] = (struct mh__centry){it->layer, it->value};
        if (it->kind)
            p->nmods++;
        else
            p->nspikes++;
    }
    return 0;
}

/* The base curve at the points: its value before each and its highest
 * value from each to the next (before the first: first_max). */
static void sample_curve(const struct mh__chunk *c, struct mh__csum *s)
{
    int64_t run = c->run0, seg = INT64_MIN;
    size_t p = 0, it = 0;
    s->first_max = INT64_MIN;
    for (size_t i = 0; i < c->nev; i++) {
        if (it < s->nitems && s->items[it].rel == i) { /* the next point begins here */
            if (p == 0)
                s->first_max = seg;
            else
                s->pts[p - 1].seg_max = seg;
            s->pts[p++].before = run;
            seg = INT64_MIN;
            while (it < s->nitems && s->items[it].rel == i)
                it++;
        }
        run += c->delta[i];
        if (run > seg)
            seg = run;
    }
    if (p == 0)
        s->first_max = seg;
    else
        s->pts[p - 1].seg_max = seg;
}

/* The highest value of a summary with the layers `in` checkpointed. */
static uint64_t summary_peak(const struct mh__csum *s, const uint8_t *in)
{
    int64_t best = s->first_max > 0 ? s->first_max : 0, moved = 0;
    const struct mh__centry *e = s->ents;
    for (size_t p = 0; p < s->npts; p++) {
        const struct mh__cpoint *pt = &s->pts[p];
        for (uint32_t k = 0; k < pt->nspikes; k++, e++)
            if (in[e->layer] && pt->before + moved + e->value > best)
                best = pt->before + moved + e->value;
        for (uint32_t k = 0; k < pt->nmods; k++, e++)
            if (in[e->layer])
                moved += e->value;
        if (pt->seg_max != INT64_MIN && pt->seg_max + moved > best)
            best = pt->seg_max + moved;
    }
    return (uint64_t)best;
}

static uint64_t plain_peak(const struct mh__csum *s)
{
    int64_t best = s->first_max > 0 ? s->first_max : 0;
    for (size_t p = 0; p < s->npts; p++)
        if (s->pts[p].seg_max > best)
            best = s->pts[p].seg_max;
    return (uint64_t)best;
}

/* Each layer alone; a layer with no entry in the chunk keeps its plain
 * curve. */
static int raise_singles(struct mh__layers *ly)
{
    const struct mh__csum *s = &ly->sum;
    uint8_t *in = calloc(2 * ly->nlayers + 1, 1), *touched = in + ly->nlayers;
    if (!in)
        return MH_ENOMEM;
    for (size_t k = 0; k < s->nents; k++)
        touched[s->ents[k].layer] = 1;
    uint64_t plain = plain_peak(s);
    for (size_t l = 0; l < ly->nlayers; l++) {
        uint64_t v = plain;
        if (touched[l]) {
            in[l] = 1;
            v = summary_peak(s, in);
            in[l] = 0;
        }
        if (v > ly->single_peak[l])
            ly->single_peak[l] = v;
    }
    if (plain > ly->plain_peak)
        ly->plain_peak = plain;
    free(in);
    return 0;
}

static int spool_summary(struct mh__layers *ly)
{
    const struct mh__csum *s = &ly->sum;
    struct mh__spool *sp = &ly->spool;
    uint64_t head[3] = {s->npts, s->nents, (uint64_t)s->first_max};
    int rc = mh__spool_write(sp, head, sizeof head);
    if (rc == 0 && s->npts)
        rc = mh__spool_write(sp, s->pts, s->npts * sizeof *s->pts);
    if (rc == 0 && s->nents)
        rc = mh__spool_write(sp, s->ents, s->nents * sizeof *s->ents);
    ly->nsummaries += rc == 0;
    return rc;
}

int mh__chunk_summarize(struct mh__layers *ly)
{
    struct mh__csum *s = &ly->sum;
    int rc = collect_items(ly);
    if (rc < 0)
        return rc;
    if (s->nitems)
        qsort(s->items, s->nitems, sizeof *s->items, by_rel_kind_layer);
    if ((rc = make_entries(s)) < 0)
        return rc;
    sample_curve(&ly->chunk, s);
    if ((rc = raise_singles(ly)) < 0)
        return rc;
    return spool_summary(ly);
}

/* Reads the next spooled summary into `s`; 1 at the end. */
static int read_summary(struct mh__spool *sp, struct mh__csum *s)
{
    uint64_t head[3];
    int rc = mh__spool_read(sp, head, sizeof head);
    if (rc)
        return rc;
    s->npts = s->nents = 0;
    if (mh__grow(&s->pts, &s->cappts, (size_t)head[0], sizeof *s->pts, 64) < 0 ||
        mh__grow(&s->ents, &s->capents, (size_t)head[1], sizeof *s->ents, 256) < 0)
        return MH_ENOMEM;
    s->npts = (size_t)head[0];
    s->nents = (size_t)head[1];
    s->first_max = (int64_t)head[2];
    if (s->npts && (rc = mh__spool_read(sp, s->pts, s->npts * sizeof *s->pts)) != 0)
        return rc < 0 ? rc : MH_EIO;
    if (s->nents && (rc = mh__spool_read(sp, s->ents, s->nents * sizeof *s->ents)) != 0)
        return rc < 0 ? rc : MH_EIO;
    return 0;
}

int mh__layers_prefix_peaks(struct mh__layers *ly, const size_t *order, size_t n, uint64_t *peak)
{
    uint8_t *in = calloc(ly->nlayers + 1, 1);
    int rc = in ? mh__spool_rewind(&ly->spool) : MH_ENOMEM;
    memset(peak, 0, n * sizeof *peak);
    for (uint64_t c = 0; rc == 0 && c < ly->nsummaries; c++) {
        if ((rc = read_summary(&ly->spool, &ly->sum)) != 0)
            break;
        memset(in, 0, ly->nlayers);
        for (size_t k = 0; k < n; k++) {
            in[order[k]] = 1;
            uint64_t v = summary_peak(&ly->sum, in);
            if (v > peak[k])
                peak[k] = v;
        }
    }
    free(in);
    return rc > 0 ? MH_EIO : rc;
}
