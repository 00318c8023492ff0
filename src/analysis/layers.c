/* layers.c - layer naming and peak attribution (see
 * layers.h): assigns each allocation of one device to a layer,
 * builds the allocated curve from the lifetimes, finds the run's and each
 * step's allocated peak and sums what each layer holds at the peak. Owns the
 * names, per-record tables and the curve; checkpointing lives in
 * checkpoint.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "layers_int.h"
#include "addrmap.h"
#include "layer_names.h"
#include "stacks.h"

/* Interns layer names per (metadata, stack) pair. */
static int32_t layer_id(struct mh_layers *ly, struct mh__hmap *cache,
                        const struct mh__layer_namer *nm, const struct mh_alloc_rec *rec)
{
    uint64_t key = ((uint64_t)rec->str << 32 | rec->stack) + 1;
    uintptr_t v = (uintptr_t)mh__addrmap_get(cache, key);
    if (v)
        return (int32_t)(v - 1);
    char name[256];
    mh__layer_name(nm, rec->str, rec->stack, name, sizeof name);
    size_t i = 0;
    while (i < ly->nlayers && strcmp(ly->names[i], name) != 0)
        i++;
    if (i == ly->nlayers) {
        char **p = realloc(ly->names, (ly->nlayers + 1) * sizeof *p);
        if (p)
            ly->names = p;
        uint8_t *c = realloc(ly->compiled, ly->nlayers + 1);
        if (c)
            ly->compiled = c;
        if (!p || !c || !(p[i] = strdup(name)))
            return -1;
        c[i] = 0;
        ly->nlayers++;
    }
    ly->compiled[i] |= (uint8_t)mh__stack_is_compiled(nm->r, rec->stack);
    if (mh__addrmap_put(cache, key, (void *)(uintptr_t)(i + 1)) < 0)
        return -1;
    return (int32_t)i;
}

/* Whether module `path` is the layer `name` or one of its ancestors: what
 * it returned left the layer. */
static int leaves_layer(const char *path, const char *name)
{
    size_t n = path ? strlen(path) : 0;
    return n && strncmp(name, path, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

static int assign_layers(struct mh_layers *ly, const struct mh_reader *r)
{
    size_t n;
    const struct mh_alloc_rec *recs = mh__lifetimes_records(ly->lt, &n);
    const struct mh_step_span *spans = mh__lifetimes_passes(ly->lt, &ly->nspans);
    struct mh__hmap cache = {0};
    struct mh__layer_namer nm;
    if (ly->nspans == 0)
        ly->nspans = 1; /* no step markers: the whole recording is one span */
    ly->layer_of = malloc((n ? n : 1) * sizeof *ly->layer_of);
    ly->span_of = malloc((n ? n : 1) * sizeof *ly->span_of);
    ly->output = calloc(n ? n : 1, 1);
    if (!ly->layer_of || !ly->span_of || !ly->output)
        return MH_ENOMEM;
    int rc = 0;
    mh__layer_namer_init(&nm, r);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = mh__layer_namer_add(&nm, recs[i].str);
    if (rc == 0)
        rc = mh__layer_namer_ready(&nm);
    size_t span = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        while (span + 1 < ly->nspans && spans[span + 1].first_index <= recs[i].alloc_index)
            span++;
        ly->span_of[i] = (uint32_t)span;
        ly->layer_of[i] = -1;
        if (recs[i].device == ly->device && (ly->layer_of[i] = layer_id(ly, &cache, &nm, &recs[i])) < 0)
            rc = MH_ENOMEM;
        else if (ly->layer_of[i] >= 0 && recs[i].out_str)
            ly->output[i] = (uint8_t)leaves_layer(mh_reader_string(r, recs[i].out_str),
                                                  ly->names[ly->layer_of[i]]);
    }
    mh__addrmap_destroy(&cache);
    mh__layer_namer_free(&nm);
    return rc;
}

/* The allocated curve as deltas per event index; the run's and each step's peak. */
static int build_curve(struct mh_layers *ly)
{
    size_t n, nspans;
    const struct mh_alloc_rec *recs = mh__lifetimes_records(ly->lt, &n);
    const struct mh_step_span *spans = mh__lifetimes_passes(ly->lt, &nspans);
    ly->nevents = mh__lifetimes_event_count(ly->lt);
    ly->delta = calloc(ly->nevents + 1, sizeof *ly->delta);
    ly->step_peaks = calloc(nspans ? nspans : 1, sizeof *ly->step_peaks);
    if (!ly->delta || !ly->step_peaks)
        return MH_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (ly->layer_of[i] < 0)
            continue;
        ly->delta[recs[i].alloc_index] += (int64_t)recs[i].size;
        if (recs[i].free_index != MH_NEVER)
            ly->delta[recs[i].free_index] -= (int64_t)recs[i].size;
    }
    for (size_t s = 0; s < nspans; s++)
        ly->step_peaks[s] = (struct mh_step_peak){spans[s].step, spans[s].first_index, 0};
    int64_t run = 0;
    size_t span = 0;
    for (uint64_t e = 0; e < ly->nevents; e++) {
        while (span + 1 < nspans && spans[span + 1].first_index <= e)
            span++;
        run += ly->delta[e];
        uint64_t v = run > 0 ? (uint64_t)run : 0;
        if (v > ly->peak) {
            ly->peak = v;
            ly->peak_index = e;
            ly->peak_span = span;
            ly->peak_step = nspans ? spans[span].step : -1;
        }
        if (nspans && v > ly->step_peaks[span].bytes) {
            ly->step_peaks[span].index = e;
            ly->step_peaks[span].bytes = v;
        }
    }
    /* one peak per step: the highest of its passes */
    for (size_t s = 0; s < nspans; s++) {
        struct mh_step_peak *last = ly->nstep_peaks ? &ly->step_peaks[ly->nstep_peaks - 1] : NULL;
        if (spans[s].step < 0)
            continue;
        if (last && last->step == spans[s].step) {
            if (ly->step_peaks[s].bytes > last->bytes)
                *last = ly->step_peaks[s];
        } else {
            ly->step_peaks[ly->nstep_peaks++] = ly->step_peaks[s];
        }
    }
    return 0;
}

static void attribute(struct mh_layers *ly)
{
    size_t n;
    const struct mh_alloc_rec *recs = mh__lifetimes_records(ly->lt, &n);
    for (size_t i = 0; i < n; i++) {
        int32_t l = ly->layer_of[i];
        if (l < 0)
            continue;
        struct mh_layer_stats *st = &ly->stats[l];
        const struct mh_alloc_rec *r = &recs[i];
        int live = mh_alloc_rec_live_at(r, ly->peak_index);
        if (live) {
            st->live_at_peak += r->size;
            st->by_category[r->category] += r->size;
        }
        if (ly->span_of[i] != ly->peak_span || r->alloc_phase != MH_PHASE_FORWARD || r->before_forward)
            continue;
        st->forward_volume += r->size;
        ly->forward_total += r->size;
        if (mh__layers_is_saved(ly, i)) {
            st->saved_total += r->size;
            if (live)
                st->saved_at_peak += r->size;
        }
    }
    for (size_t l = 0; l < ly->nlayers; l++) {
        struct mh_layer_stats *st = &ly->stats[l];
        st->name = ly->names[l];
        st->compiled = ly->compiled[l];
        for (size_t k = ly->first_group[l]; k < ly->first_group[l + 1]; k++) {
            const struct mh__lgroup *g = &ly->groups[k];
            if (g->span != ly->peak_span)
                continue;
            if (g->transient > st->transient)
                st->transient = g->transient;
            st->candidate |= g->bwd_start != MH_NEVER && g->moved > 0;
        }
    }
}

int mh__layers_analyze(const struct mh_lifetimes *lt, const struct mh_reader *r, int device,
                       struct mh_layers **out)
{
    struct mh_layers *ly = calloc(1, sizeof *ly);
    *out = NULL;
    if (!ly)
        return MH_ENOMEM;
    ly->lt = lt;
    ly->device = device;
    ly->peak_step = -1;
    int rc = assign_layers(ly, r);
    if (rc == 0)
        rc = build_curve(ly);
    if (rc == 0 && !(ly->stats = calloc(ly->nlayers ? ly->nlayers : 1, sizeof *ly->stats)))
        rc = MH_ENOMEM;
    if (rc == 0)
        rc = mh__layers_calls(ly, r);
    if (rc == 0)
        rc = mh__layers_groups(ly);
    if (rc == 0) {
        attribute(ly);
        rc = mh__layers_reductions(ly);
    }
    if (rc < 0) {
        mh__layers_free(ly);
        return rc;
    }
    *out = ly;
    return 0;
}

void mh__layers_free(struct mh_layers *ly)
{
    if (!ly)
        return;
    for (size_t i = 0; i < ly->nlayers; i++)
        free(ly->names[i]);
    free(ly->names);
    free(ly->compiled);
    free(ly->stats);
    free(ly->layer_of);
    free(ly->span_of);
    free(ly->output);
    free(ly->groups);
    free(ly->first_group);
    free(ly->group_of);
    free(ly->delta);
    free(ly->step_peaks);
    free(ly);
}

uint64_t mh__layers_peak(const struct mh_layers *ly, uint64_t *index, int64_t *step)
{
    if (index)
        *index = ly->peak_index;
    if (step)
        *step = ly->peak_step;
    return ly->peak;
}

const struct mh_layer_stats *mh__layers_list(const struct mh_layers *ly, size_t *n)
{
    *n = ly->nlayers;
    return ly->stats;
}

const int32_t *mh__layers_of_records(const struct mh_layers *ly)
{
    return ly->layer_of;
}

const struct mh_step_peak *mh__layers_step_peaks(const struct mh_layers *ly, size_t *n)
{
    *n = ly->nstep_peaks;
    return ly->step_peaks;
}
