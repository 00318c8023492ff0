/* layers.c - the layers analysis (see layers.h and layers_int.h): one more
 * pass over the file after its first, in which every allocation of the
 * device is named by its layer as it is made, the layers' live bytes are
 * followed to read the largest ones at each step's peak, and the events of
 * each step are handed to layer_chunk.c. Owns the names, the per-layer
 * tables and the lifetimes of its passes; checkpointing lives in
 * checkpoint.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "layers_int.h"
#include "analysis.h"
#include "grow.h"
#include "stacks.h"

static int add_layer(struct mh__layers *ly, const char *name)
{
    if (ly->nlayers == ly->caplayers) {
        size_t cap = ly->caplayers ? ly->caplayers * 2 : 32;
        char **p = realloc(ly->names, cap * sizeof *p);
        if (p)
            ly->names = p;
        struct mh__layer_stats *st = realloc(ly->stats, cap * sizeof *st);
        if (st)
            ly->stats = st;
        uint64_t *live = realloc(ly->live, cap * sizeof *live);
        if (live)
            ly->live = live;
        uint64_t *single = realloc(ly->single_peak, cap * sizeof *single);
        if (single)
            ly->single_peak = single;
        if (!p || !st || !live || !single)
            return MH_ENOMEM;
        ly->caplayers = cap;
    }
    if (!(ly->names[ly->nlayers] = strdup(name)))
        return MH_ENOMEM;
    memset(&ly->stats[ly->nlayers], 0, sizeof ly->stats[ly->nlayers]);
    ly->stats[ly->nlayers].name = ly->names[ly->nlayers];
    ly->live[ly->nlayers] = 0;
    /* the chunks evaluated so far held nothing of a new layer */
    ly->single_peak[ly->nlayers] = ly->plain_peak;
    ly->nlayers++;
    return 0;
}

int32_t mh__layers_name_of(struct mh__layers *ly, uint32_t str, uint32_t stack)
{
    uint64_t key = ((uint64_t)str << 32 | stack) + 1;
    uintptr_t v = (uintptr_t)mh__addrmap_get(&ly->by_key, key);
    if (v)
        return (int32_t)(v - 1);
    char name[256];
    mh__layer_name(&ly->nm, str, stack, mh__lifetimes_site_role(ly->first, str, stack), name,
                   sizeof name);
    size_t i = 0;
    while (i < ly->nlayers && strcmp(ly->names[i], name) != 0)
        i++;
    if (i == ly->nlayers && add_layer(ly, name) < 0)
        return -1;
    ly->stats[i].compiled |= mh__stack_is_compiled(ly->r, stack);
    if (mh__addrmap_put(&ly->by_key, key, (void *)(uintptr_t)(i + 1)) < 0)
        return -1;
    return (int32_t)i;
}

int32_t mh__layers_layer_of(struct mh__layers *ly, const struct mh__alloc_rec *rec)
{
    return rec->device == ly->device ? mh__layers_name_of(ly, rec->str, rec->stack) : -1;
}

/* ---- what the first pass tells ------------------------------------------------- */
/* Each step's peak: the highest of its passes' (steps the model closed). */
static int make_steps(struct mh__layers *ly, const struct mh_model *m)
{
    size_t npasses;
    const struct mh__step_span *passes = mh__lifetimes_passes(ly->first, &npasses);
    const struct mh__step_peak *pp = mh__lifetimes_pass_peaks(ly->first, ly->device);
    ly->steps = calloc(npasses ? npasses : 1, sizeof *ly->steps);
    if (!ly->steps)
        return MH_ENOMEM;
    for (size_t s = 0; pp && s < npasses; s++) {
        struct mh__layer_step *last = ly->nsteps ? &ly->steps[ly->nsteps - 1] : NULL;
        if (passes[s].step < 0)
            continue;
        if (last && last->step == passes[s].step) {
            if (pp[s].bytes > last->bytes) {
                last->index = pp[s].index;
                last->bytes = pp[s].bytes;
            }
        } else {
            ly->steps[ly->nsteps++] = (struct mh__layer_step){passes[s].step, pp[s].index, pp[s].bytes,
                                                             {SIZE_MAX, SIZE_MAX, SIZE_MAX}, {0}};
        }
    }
    /* the span after the last step marker is no step of its own */
    size_t kept = 0;
    for (size_t i = 0; i < ly->nsteps; i++) {
        struct mh_step_stats st;
        if (mh__step_find(m, ly->device, ly->steps[i].step, &st) == 0)
            ly->steps[kept++] = ly->steps[i];
    }
    ly->nsteps = kept;
    return 0;
}

static int namer_of(struct mh__layers *ly)
{
    size_t n;
    const uint32_t *strs = mh__lifetimes_strings(ly->first, &n);
    int rc = 0;
    mh__layer_namer_init(&ly->nm, ly->r);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = mh__layer_namer_add(&ly->nm, strs[i]);
    return rc == 0 ? mh__layer_namer_ready(&ly->nm) : rc;
}

/* ---- the pass ----------------------------------------------------------------- */
static void top3(const struct mh__layers *ly, struct mh__layer_step *st)
{
    for (size_t l = 0; l < ly->nlayers; l++)
        for (int k = 0; k < 3; k++)
            if (ly->live[l] > st->top_bytes[k]) {
                for (int j = 2; j > k; j--) {
                    st->top_bytes[j] = st->top_bytes[j - 1];
                    st->top[j] = st->top[j - 1];
                }
                st->top_bytes[k] = ly->live[l];
                st->top[k] = l;
                break;
            }
}

/* Follows the layers' live bytes and reads the largest at each step's peak. */
static int follow_live(struct mh__layers *ly, const struct mh__life_change *ch, uint64_t index)
{
    const struct mh__alloc_rec *r = ch->began ? ch->began : ch->ended;
    if (r && r->device == ly->device && r->user[0]) /* named by mh__chunk_event */
        ly->live[r->user[0] - 1] += ch->began ? r->size : 0 - r->size;
    for (; ly->next_step < ly->nsteps && ly->steps[ly->next_step].index <= index; ly->next_step++)
        if (ly->steps[ly->next_step].index == index)
            top3(ly, &ly->steps[ly->next_step]);
    return 0;
}

static int pass_begin(void *user, struct mh__session *s)
{
    struct mh__layers *ly = user;
    (void)s;
    mh__lifetimes_free(ly->lt);
    ly->lt = NULL;
    int rc = mh__lifetimes_new_after(ly->first, &ly->lt);
    for (size_t i = 0; i < ly->nkeep && rc == 0; i++)
        rc = mh__lifetimes_keep_at(ly->lt, ly->keep[i]);
    if (rc == 0 && ly->peak)
        rc = mh__lifetimes_keep_at(ly->lt, ly->peak_index);
    for (size_t l = 0; l < ly->nlayers; l++)
        ly->live[l] = 0;
    ly->next_step = 0;
    ly->run = 0;
    mh__chunk_free(&ly->chunk);
    memset(&ly->chunk, 0, sizeof ly->chunk);
    mh__spool_free(&ly->spool);
    ly->nsummaries = 0;
    return rc;
}

static int pass_event(void *user, struct mh__session *s, const struct mh_event *ev,
                      const struct mh_apply_result *res)
{
    struct mh__layers *ly = user;
    const struct mh_model *m = mh__session_model(s);
    uint64_t index = mh__session_index(s);
    size_t steps_before, steps_after;
    struct mh__life_change ch;
    mh__lifetimes_steps(ly->lt, &steps_before);
    int rc = mh__lifetimes_observe(ly->lt, m, ev, res, &ch);
    mh__lifetimes_steps(ly->lt, &steps_after);
    if (rc == 0 && steps_after != steps_before && index > ly->chunk.lo && mh__chunk_over(ly, m))
        rc = mh__chunk_close(ly, index);
    if (rc == 0)
        rc = mh__chunk_event(ly, m, ev, &ch, index);
    return rc < 0 ? rc : follow_live(ly, &ch, index);
}

static int pass_end(void *user, struct mh__session *s)
{
    struct mh__layers *ly = user;
    (void)s;
    int rc = mh__chunk_close(ly, mh__lifetimes_event_count(ly->lt));
    return rc < 0 ? rc : mh__lifetimes_finish(ly->lt, NULL, NULL);
}

/* The pass over the file. */
static int evaluate(struct mh__layers *ly)
{
    const struct mh__observer obs = {"layers", ly, pass_begin, pass_event, pass_end};
    return mh__session_pass(ly->session, &obs);
}

/* ---- after the first evaluation pass ---------------------------------------------- */
static void attribute_peak(struct mh__layers *ly)
{
    size_t n;
    const struct mh__alloc_rec *recs = mh__lifetimes_records(ly->lt, &n);
    memset(ly->category_at_peak, 0, sizeof ly->category_at_peak);
    for (size_t i = 0; i < n && ly->peak; i++) {
        const struct mh__alloc_rec *r = &recs[i];
        if (r->device != ly->device || !mh__alloc_rec_live_at(r, ly->peak_index))
            continue;
        int32_t l = mh__layers_name_of(ly, r->str, r->stack);
        ly->category_at_peak[r->category] += r->size;
        if (l < 0)
            continue;
        ly->stats[l].live_at_peak += r->size;
        ly->stats[l].by_category[r->category] += r->size;
    }
    for (size_t l = 0; l < ly->nlayers; l++) {
        struct mh__layer_stats *st = &ly->stats[l];
        if (st->candidate)
            st->reduction = ly->peak > ly->single_peak[l] ? ly->peak - ly->single_peak[l] : 0;
    }
}

int mh__layers_analyze(const struct mh__analysis *a, int device, const uint64_t *keep,
                       size_t nkeep, struct mh__layers **out)
{
    struct mh__session *s = a->session;
    const struct mh__lifetimes *first = a->lt;
    struct mh__layers *ly = calloc(1, sizeof *ly);
    *out = NULL;
    if (!ly)
        return MH_ENOMEM;
    mh__spool_init(&ly->spool);
    struct mh__life_curve c;
    mh__lifetimes_curve(first, device, &c);
    size_t npasses;
    const struct mh__step_span *passes = mh__lifetimes_passes(first, &npasses);
    ly->session = s;
    ly->first = first;
    ly->r = mh__session_reader(s);
    ly->device = device;
    ly->peak = c.peak;
    ly->peak_index = c.peak_index;
    ly->peak_span = c.peak_pass;
    ly->peak_step = npasses ? passes[c.peak_pass].step : -1;
    ly->threaded = mh__lifetimes_threaded(first);
    int rc = nkeep && !(ly->keep = malloc(nkeep * sizeof *keep)) ? MH_ENOMEM : 0;
    if (rc == 0) {
        if (nkeep)
            memcpy(ly->keep, keep, nkeep * sizeof *keep);
        ly->nkeep = nkeep;
        rc = namer_of(ly);
    }
    if (rc == 0)
        rc = make_steps(ly, a->rp.model);
    if (rc == 0)
        rc = evaluate(ly);
    if (rc == 0)
        attribute_peak(ly);
    if (rc < 0) {
        mh__layers_free(ly);
        return rc;
    }
    *out = ly;
    return 0;
}

void mh__layers_free(struct mh__layers *ly)
{
    if (!ly)
        return;
    for (size_t i = 0; i < ly->nlayers; i++)
        free(ly->names[i]);
    free(ly->names);
    free(ly->stats);
    free(ly->live);
    free(ly->steps);
    free(ly->keep);
    free(ly->single_peak);
    free(ly->plan_order);
    mh__csum_free(&ly->sum);
    mh__spool_free(&ly->spool);
    free(ly->plan_after);
    mh__chunk_free(&ly->chunk);
    mh__lifetimes_free(ly->lt);
    mh__addrmap_destroy(&ly->by_key);
    mh__addrmap_destroy(&ly->by_path);
    mh__layer_namer_free(&ly->nm);
    free(ly);
}

uint64_t mh__layers_peak(const struct mh__layers *ly, uint64_t *index, int64_t *step)
{
    if (index)
        *index = ly->peak_index;
    if (step)
        *step = ly->peak_step;
    return ly->peak;
}

const struct mh__layer_stats *mh__layers_list(const struct mh__layers *ly, size_t *n)
{
    *n = ly->nlayers;
    return ly->stats;
}

const struct mh__alloc_rec *mh__layers_records(const struct mh__layers *ly, size_t *n)
{
    return mh__lifetimes_records(ly->lt, n);
}

const uint64_t *mh__layers_category_at_peak(const struct mh__layers *ly)
{
    return ly->category_at_peak;
}

const struct mh__layer_step *mh__layers_steps(const struct mh__layers *ly, size_t *n)
{
    *n = ly->nsteps;
    return ly->steps;
}

/* ---- the plan ------------------------------------------------------------------- */
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

static int rank_candidates(struct mh__layers *ly)
{
    struct rank *rk = malloc((ly->nlayers ? ly->nlayers : 1) * sizeof *rk);
    ly->plan_order = malloc((ly->nlayers ? ly->nlayers : 1) * sizeof *ly->plan_order);
    if (!rk || !ly->plan_order) {
        free(rk);
        return MH_ENOMEM;
    }
    size_t m = 0;
    for (size_t l = 0; l < ly->nlayers; l++)
        if (ly->stats[l].candidate && ly->stats[l].reduction > 0)
            rk[m++] = (struct rank){ly->stats[l].reduction, ly->stats[l].saved_at_peak, l};
    qsort(rk, m, sizeof *rk, by_rank);
    for (size_t i = 0; i < m; i++)
        ly->plan_order[i] = rk[i].layer;
    ly->nplan = m;
    free(rk);
    return 0;
}

static int make_plan(struct mh__layers *ly)
{
    int rc = rank_candidates(ly);
    if (rc == 0 && !(ly->plan_after = malloc((ly->nplan ? ly->nplan : 1) * sizeof *ly->plan_after)))
        rc = MH_ENOMEM;
    if (rc == 0 && ly->nplan)
        rc = mh__layers_prefix_peaks(ly, ly->plan_order, ly->nplan, ly->plan_after);
    if (rc < 0)
        return rc;
    uint64_t lowest = ly->peak;
    for (size_t k = 0; k < ly->nplan; k++)
        if (ly->plan_after[k] < lowest)
            lowest = ly->plan_after[k];
    uint64_t most = ly->peak - lowest;
    if ((double)most < MH__PLAN_MIN_SHARE * (double)ly->peak)
        most = 0; /* not worth a recompute */
    for (size_t k = 0; k < ly->nplan && most > 0; k++)
        if ((double)(ly->peak - ly->plan_after[k]) >= 0.95 * (double)most) {
            ly->plan_best = k + 1;
            break;
        }
    return 0;
}

int mh__layers_plan(struct mh__layers *ly, const size_t **order, const uint64_t **peak_after,
                    size_t *n, size_t *best)
{
    int rc = 0;
    if (!ly->planned && (rc = make_plan(ly)) == 0)
        ly->planned = 1;
    *order = ly->plan_order;
    *peak_after = ly->plan_after;
    *n = rc == 0 ? ly->nplan : 0;
    *best = rc == 0 ? ly->plan_best : 0;
    return rc;
}

int mh__layers_estimate(struct mh__layers *ly, const size_t *layers, size_t n, uint64_t *peak)
{
    *peak = ly->peak;
    if (n == 0)
        return 0;
    uint64_t *all = malloc(n * sizeof *all);
    int rc = all ? mh__layers_prefix_peaks(ly, layers, n, all) : MH_ENOMEM;
    if (rc == 0)
        *peak = all[n - 1];
    free(all);
    return rc;
}

double mh__layers_recompute_share(const struct mh__layers *ly, const size_t *layers, size_t n)
{
    uint64_t volume = 0;
    uint8_t *in = calloc(ly->nlayers ? ly->nlayers : 1, 1);
    if (!in)
        return 0.0;
    for (size_t i = 0; i < n; i++)
        if (layers[i] < ly->nlayers && !in[layers[i]]) {
            in[layers[i]] = 1;
            volume += ly->stats[layers[i]].forward_volume;
        }
    free(in);
    return ly->forward_total ? (double)volume / (double)ly->forward_total : 0.0;
}
