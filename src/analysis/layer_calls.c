/* layer_calls.c - the checkpointing groups of layers.c: one per layer,
 * pass and call of the layer's module. A module called several times in a
 * pass (a block applied in a loop, an RNN cell per time step) has each call
 * recomputed at its own backward, so each call is a group: a forward
 * allocation belongs to the call whose forward scope opened last before it,
 * a backward allocation to the call whose backward scope did (backward runs
 * the calls in reverse order). Where the scope openings of a layer's module
 * do not pair up (forward calls without backward, or no scopes), the pass
 * is one group as before. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "addrmap.h"
#include "layers_int.h"

struct mark {
    int32_t layer;
    uint8_t phase;
    uint64_t index;
};

static int by_layer_phase_index(const void *a, const void *b)
{
    const struct mark *x = a, *y = b;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    if (x->phase != y->phase)
        return x->phase < y->phase ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Layer whose name is the module path `str`, or -1 (cached in `cache`). */
static int32_t layer_named(const struct mh_layers *ly, const struct mh_reader *r,
                           struct mh__hmap *cache, uint32_t str, int *rc)
{
    uintptr_t v = (uintptr_t)mh__addrmap_get(cache, str);
    if (v)
        return (int32_t)v - 2;
    const char *name = mh_reader_string(r, str);
    int32_t l = -1;
    for (size_t i = 0; name && i < ly->nlayers && l < 0; i++)
        if (strcmp(ly->names[i], name) == 0)
            l = (int32_t)i;
    if (mh__addrmap_put(cache, str, (void *)(uintptr_t)(l + 2)) < 0)
        *rc = MH_ENOMEM;
    return l;
}

/* The scope openings of the layers' own modules, sorted by layer, phase
 * and event index. */
static struct mark *layer_marks(const struct mh_layers *ly, const struct mh_reader *r, size_t *n,
                                int *rc)
{
    size_t nm;
    const struct mh_scope_mark *sm = mh__lifetimes_scope_marks(ly->lt, &nm);
    struct mark *m = malloc((nm ? nm : 1) * sizeof *m);
    struct mh__hmap cache = {0};
    *n = 0;
    if (!m)
        *rc = MH_ENOMEM;
    for (size_t i = 0; m && i < nm && *rc == 0; i++) {
        int32_t l = layer_named(ly, r, &cache, sm[i].str, rc);
        if (l >= 0)
            m[(*n)++] = (struct mark){l, sm[i].phase, sm[i].index};
    }
    mh__addrmap_destroy(&cache);
    if (m)
        qsort(m, *n, sizeof *m, by_layer_phase_index);
    return m;
}

/* Number of marks in m[lo..hi) at or before event `index` (sorted by index). */
static size_t count_upto(const struct mark *m, size_t lo, size_t hi, uint64_t index)
{
    size_t a = lo, b = hi;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (m[mid].index <= index)
            a = mid + 1;
        else
            b = mid;
    }
    return a - lo;
}

/* Per (layer, pass): where its forward and backward marks begin in `m`. */
struct pass_marks {
    size_t fwd, nfwd, bwd, nbwd;
};

static void index_marks(const struct mh_layers *ly, const struct mark *m, size_t n,
                        struct pass_marks *pm)
{
    size_t nspans;
    const struct mh_step_span *spans = mh__lifetimes_passes(ly->lt, &nspans);
    size_t s = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && (m[i].layer != m[i - 1].layer || m[i].phase != m[i - 1].phase))
            s = 0; /* marks of one layer and phase come in event order */
        while (s + 1 < nspans && spans[s + 1].first_index <= m[i].index)
            s++;
        struct pass_marks *p = &pm[(size_t)m[i].layer * ly->nspans + s];
        if (m[i].phase == MH_PHASE_FORWARD) {
            if (p->nfwd++ == 0)
                p->fwd = i;
        } else if (p->nbwd++ == 0) {
            p->bwd = i;
        }
    }
}

/* The call of record i within its (layer, pass), of `calls`. */
static size_t call_of(const struct mh_alloc_rec *r, const struct mark *m,
                      const struct pass_marks *p, size_t calls)
{
    size_t k;
    if (calls < 2)
        return 0;
    if (r->alloc_phase == MH_PHASE_FORWARD) {
        k = count_upto(m, p->fwd, p->fwd + p->nfwd, r->alloc_index);
        return k ? k - 1 : 0;
    }
    if (r->alloc_phase == MH_PHASE_BACKWARD) {
        k = count_upto(m, p->bwd, p->bwd + p->nbwd, r->alloc_index);
        return k ? calls - k : calls - 1;
    }
    return 0;
}

/* Fills groups, first_group, ngroups and group_of from the calls. */
static int make_groups(struct mh_layers *ly, const struct mark *m, const struct pass_marks *pm)
{
    size_t n, nls = ly->nlayers * ly->nspans;
    const struct mh_alloc_rec *recs = mh__lifetimes_records(ly->lt, &n);
    size_t *base = malloc((nls + 1) * sizeof *base);
    ly->first_group = malloc((ly->nlayers + 1) * sizeof *ly->first_group);
    ly->group_of = malloc((n ? n : 1) * sizeof *ly->group_of);
    if (!base || !ly->first_group || !ly->group_of) {
        free(base);
        return MH_ENOMEM;
    }
    base[0] = 0;
    for (size_t i = 0; i < nls; i++) {
        const struct pass_marks *p = &pm[i];
        size_t calls = p->nfwd == p->nbwd && p->nfwd > 1 ? p->nfwd : 1;
        base[i + 1] = base[i] + calls;
        if (i % ly->nspans == 0)
            ly->first_group[i / ly->nspans] = base[i];
    }
    ly->first_group[ly->nlayers] = ly->ngroups = base[nls];
    ly->groups = malloc((ly->ngroups ? ly->ngroups : 1) * sizeof *ly->groups);
    if (!ly->groups) {
        free(base);
        return MH_ENOMEM;
    }
    for (size_t i = 0; i < nls; i++)
        for (size_t g = base[i]; g < base[i + 1]; g++)
            ly->groups[g] =
                (struct mh__lgroup){MH_NEVER, MH_NEVER, 0, 0, (uint32_t)(i % ly->nspans)};
    for (size_t i = 0; i < n; i++) {
        int32_t l = ly->layer_of[i];
        ly->group_of[i] = 0; /* another device's: never read */
        if (l < 0)
            continue;
        size_t ls = (size_t)l * ly->nspans + ly->span_of[i];
        ly->group_of[i] =
            (uint32_t)(base[ls] + call_of(&recs[i], m, &pm[ls], base[ls + 1] - base[ls]));
    }
    free(base);
    return 0;
}

int mh__layers_calls(struct mh_layers *ly, const struct mh_reader *r)
{
    int rc = 0;
    size_t n;
    struct mark *m = layer_marks(ly, r, &n, &rc);
    struct pass_marks *pm = calloc(ly->nlayers * ly->nspans + 1, sizeof *pm);
    if (rc == 0 && !pm)
        rc = MH_ENOMEM;
    if (rc == 0) {
        index_marks(ly, m, n, pm);
        rc = make_groups(ly, m, pm);
    }
    free(m);
    free(pm);
    return rc;
}
