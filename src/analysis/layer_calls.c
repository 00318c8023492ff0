/* layer_calls.c - the checkpointing groups of a chunk (layers_int.h): one
 * per layer, pass span and call of the layer's module. A module called
 * several times in a pass (a block applied in a loop, an RNN cell per time
 * step) has each call recomputed at its own backward, so each call is a
 * group: a forward allocation belongs to the call whose forward scope
 * opened last before it, a backward allocation to the call whose backward
 * scope did (backward runs the calls in reverse order). Where the scope
 * openings of a layer's module do not pair up (forward calls without
 * backward, or no scopes), the pass is one group. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "layers_int.h"
#include "grow.h"

/* Layer whose name is the module path `str`, or -1. The answer is cached
 * by string id; a miss remembers how many layers it looked at, so a layer
 * named later is still found. */
static int32_t layer_named(struct mh__layers *ly, uint32_t str, int *rc)
{
    uintptr_t v = (uintptr_t)mh__addrmap_get(&ly->by_path, str);
    if (v & 1)
        return (int32_t)(v >> 1) - 1;
    size_t from = v ? (v >> 1) - 1 : 0;
    const char *name = mh_reader_string(ly->r, str);
    int32_t l = -1;
    for (size_t i = from; name && i < ly->nlayers && l < 0; i++)
        if (strcmp(ly->names[i], name) == 0)
            l = (int32_t)i;
    v = l >= 0 ? ((uintptr_t)(l + 1) << 1 | 1) : (uintptr_t)(ly->nlayers + 1) << 1;
    if (mh__addrmap_put(&ly->by_path, str, (void *)v) < 0)
        *rc = MH_ENOMEM;
    return l;
}

struct mark {
    int32_t layer;
    uint32_t span;
    uint8_t phase;
    uint64_t index;
};

static int by_layer_span_phase_index(const void *a, const void *b)
{
    const struct mark *x = a, *y = b;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    if (x->span != y->span)
        return x->span < y->span ? -1 : 1;
    if (x->phase != y->phase)
        return x->phase < y->phase ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* The pass span of event `index` within the chunk's spans. */
static uint32_t span_at(const struct mh__layers *ly, uint64_t index)
{
    size_t n;
    const struct mh__step_span *spans = mh__lifetimes_passes(ly->lt, &n);
    size_t s = ly->chunk.span_lo;
    while (s + 1 < n && s + 1 <= ly->chunk.span_hi && spans[s + 1].first_index <= index)
        s++;
    return (uint32_t)s;
}

/* The scope openings of the layers' own modules, sorted by layer, span,
 * phase and event index. */
static struct mark *layer_marks(struct mh__layers *ly, size_t *n, int *rc)
{
    const struct mh__chunk *c = &ly->chunk;
    struct mark *m = malloc((c->nmarks ? c->nmarks : 1) * sizeof *m);
    *n = 0;
    if (!m) {
        *rc = MH_ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < c->nmarks && *rc == 0; i++) {
        int32_t l = layer_named(ly, c->marks[i].str, rc);
        if (l >= 0)
            m[(*n)++] = (struct mark){l, span_at(ly, c->marks[i].index), c->marks[i].phase,
                                      c->marks[i].index};
    }
    qsort(m, *n, sizeof *m, by_layer_span_phase_index);
    return m;
}

/* Per (layer, span) of the chunk: where its forward and backward marks
 * begin in the sorted marks, and its groups. */
struct pass_marks {
    size_t fwd, nfwd, bwd, nbwd;
    size_t base, calls; /* its groups: [base, base + calls) */
};

static uint64_t ls_key(int32_t layer, uint32_t span)
{
    return ((uint64_t)(uint32_t)layer << 32 | span) + 1;
}

/* The (layer, span) entry of `key`, made if new. */
static struct pass_marks *entry(struct mh__hmap *map, struct pass_marks **pm, size_t *n,
                                size_t *cap, uint64_t key)
{
    uintptr_t v = (uintptr_t)mh__addrmap_get(map, key);
    if (v)
        return &(*pm)[v - 1];
    if (MH__GROW(*pm, *n, *cap, 64) < 0)
        return NULL;
    memset(&(*pm)[*n], 0, sizeof **pm);
    (*n)++;
    if (mh__addrmap_put(map, key, (void *)(uintptr_t)*n) < 0)
        return NULL;
    return &(*pm)[*n - 1];
}

static int count_marks(struct mh__hmap *map, struct pass_marks **pm, size_t *n, size_t *cap,
                       const struct mark *m, size_t nm)
{
    for (size_t i = 0; i < nm; i++) {
        struct pass_marks *p = entry(map, pm, n, cap, ls_key(m[i].layer, m[i].span));
        if (!p)
            return MH_ENOMEM;
        if (m[i].phase == MH_PHASE_FORWARD) {
            if (p->nfwd++ == 0)
                p->fwd = i;
        } else if (p->nbwd++ == 0) {
            p->bwd = i;
        }
    }
    return 0;
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

/* The call of a record within its (layer, span). */
static size_t call_of(const struct mh__alloc_rec *r, const struct mark *m,
                      const struct pass_marks *p)
{
    size_t k, calls = p->calls;
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

static int make_groups(struct mh__layers *ly, struct mh__hmap *map, struct pass_marks **pm,
                       size_t *npm, size_t *cap, const struct mark *m)
{
    struct mh__chunk *c = &ly->chunk;
    for (size_t i = 0; i < c->nrecs; i++) { /* the groups of each (layer, span) held */
        struct pass_marks *p = entry(map, pm, npm, cap, ls_key(c->recs[i].layer, c->recs[i].span));
        if (!p)
            return MH_ENOMEM;
        if (p->calls)
            continue;
        p->calls = p->nfwd == p->nbwd && p->nfwd > 1 ? p->nfwd : 1;
        p->base = c->ngroups;
        for (size_t g = 0; g < p->calls; g++) {
            if (MH__GROW(c->groups, c->ngroups, c->capgroups, 64) < 0)
                return MH_ENOMEM;
            c->groups[c->ngroups++] = (struct mh__lgroup){MH__NEVER, MH__NEVER, 0, 0,
                                                          c->recs[i].span, c->recs[i].layer};
        }
    }
    for (size_t i = 0; i < c->nrecs; i++) {
        const struct pass_marks *p =
            &(*pm)[(uintptr_t)mh__addrmap_get(map, ls_key(c->recs[i].layer, c->recs[i].span)) - 1];
        c->recs[i].group = (uint32_t)(p->base + call_of(&c->recs[i].rec, m, p));
    }
    return 0;
}

int mh__chunk_groups(struct mh__layers *ly)
{
    int rc = 0;
    size_t nm, npm = 0, cap = 0;
    struct mark *m = layer_marks(ly, &nm, &rc);
    struct pass_marks *pm = NULL;
    struct mh__hmap map = {0};
    ly->chunk.ngroups = 0;
    if (rc == 0)
        rc = count_marks(&map, &pm, &npm, &cap, m, nm);
    if (rc == 0)
        rc = make_groups(ly, &map, &pm, &npm, &cap, m);
    mh__addrmap_destroy(&map);
    free(pm);
    free(m);
    return rc;
}
