/* view_moments.c - "click a moment" in `memhist view`: the allocations live
 * at a bounded set of event indices per device (its allocated peak, each
 * OOM, the peaks of steps as the first pass found them, evenly spaced
 * samples), gathered for every device by an observer riding another
 * analysis's pass (analysis.h: mh__analysis_moments_observer), or by a
 * pass of their own, and written as the flame trees of flame.h, by module
 * path and by stack. A tree keeps
 * its largest nodes (a node is never dropped before its parent); what a
 * node holds beyond its kept children is the page's "smaller frames". */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "flame.h"
#include "grow.h"
#include "session.h"
#include "view_int.h"

enum { VM_PEAK, VM_OOM, VM_STEP_PEAK, VM_SAMPLE };
static const char *const kind_names[] = {"peak", "oom", "step_peak", "sample"};
#define VM_MAX_OOMS 16
#define VM_SAMPLES 16

struct vmoment {
    int device, kind;
    uint64_t index, time_ns, value;
    int64_t step;
    int time_known;
};

struct mh__vmoments {
    struct vmoment *m;
    size_t n, cap;
    int *devices;    /* the model's devices, and for each */
    size_t *dropped; /* the step peaks left out for the limit */
    size_t ndev;
    uint64_t *index; /* sorted unique indices of m */
    size_t nindex;
    const struct mh__lifetimes *use;
    struct mh__lifetimes *own;
    struct mh__observer ob; /* gathers into own */
    const struct mh_reader *reader;
};

static int add(struct mh__vmoments *v, struct vmoment m)
{
    if (MH__GROW(v->m, v->n, v->cap, 64) < 0)
        return MH_ENOMEM;
    v->m[v->n++] = m;
    return 0;
}

/* Each step's allocated peak: the highest of its passes (categories.h). */
static int add_step_peaks(struct mh__vmoments *v, const struct mh__analysis *a, int device,
                          size_t room, size_t *dropped)
{
    size_t np, nsteps = 0;
    mh__lifetimes_passes(a->lt, &np);
    const struct mh__step_peak *pp = mh__lifetimes_pass_peaks(a->lt, device);
    struct mh__step_peak *steps = malloc((np ? np : 1) * sizeof *steps);
    if (!steps)
        return MH_ENOMEM;
    for (size_t i = 0; pp && i < np; i++) {
        if (pp[i].step < 0 || pp[i].bytes == 0)
            continue;
        if (nsteps && steps[nsteps - 1].step == pp[i].step) {
            if (pp[i].bytes > steps[nsteps - 1].bytes)
                steps[nsteps - 1] = pp[i];
        } else {
            steps[nsteps++] = pp[i];
        }
    }
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < nsteps && k < room; k++) {
        const struct mh__step_peak *sp = &steps[nsteps <= room ? k : k * nsteps / room];
        rc = add(v, (struct vmoment){device, VM_STEP_PEAK, sp->index, 0, sp->bytes, sp->step, 0});
    }
    *dropped = nsteps > room ? nsteps - room : 0;
    free(steps);
    return rc;
}

static int add_device(struct mh__vmoments *v, const struct mh__analysis *a, size_t limit,
                      int device, size_t *dropped)
{
    const struct mh_model *m = a->rp.model;
    struct mh_peak pa;
    size_t used = 0;
    int rc = 0;
    if (mh_model_peak_allocated(m, device, &pa) == 0 && pa.value > 0) {
        rc = add(
            v, (struct vmoment){device, VM_PEAK, pa.event_index, pa.time_ns, pa.value, pa.step, 1});
        used++;
    }
    for (size_t i = 0; rc == 0 && i < mh_model_oom_count(m) && used < 1 + VM_MAX_OOMS; i++) {
        struct mh_oom_info o;
        if (mh_model_oom(m, i, &o) == 0 && o.device == device) {
            rc = add(v, (struct vmoment){device, VM_OOM, o.event_index, o.time_ns, o.request,
                                         o.step, 1});
            used++;
        }
    }
    uint64_t events = a->rp.summary.events;
    for (size_t i = 1; rc == 0 && events > VM_SAMPLES && i <= VM_SAMPLES; i++)
        rc = add(v, (struct vmoment){device, VM_SAMPLE, i * (events - 1) / (VM_SAMPLES + 1), 0, 0,
                                     -1, 0});
    used += VM_SAMPLES;
    return rc ? rc : add_step_peaks(v, a, device, limit > used ? limit - used : 0, dropped);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int gather_indices(struct mh__vmoments *v)
{
    v->index = malloc((v->n ? v->n : 1) * sizeof *v->index);
    if (!v->index)
        return MH_ENOMEM;
    for (size_t i = 0; i < v->n; i++)
        v->index[i] = v->m[i].index;
    qsort(v->index, v->n, sizeof *v->index, cmp_u64);
    for (size_t i = 0; i < v->n; i++)
        if (v->nindex == 0 || v->index[v->nindex - 1] != v->index[i])
            v->index[v->nindex++] = v->index[i];
    return 0;
}

int mh__vmoments_new(const struct mh__analysis *a, const struct mh__view_opts *o,
                     struct mh__vmoments **out)
{
    struct mh__vmoments *v = calloc(1, sizeof *v);
    if (!v)
        return MH_ENOMEM;
    v->reader = a->rp.reader;
    v->ndev = mh_model_device_count(a->rp.model);
    v->devices = calloc(v->ndev ? v->ndev : 1, sizeof *v->devices);
    v->dropped = calloc(v->ndev ? v->ndev : 1, sizeof *v->dropped);
    int rc = v->devices && v->dropped ? 0 : MH_ENOMEM;
    for (size_t i = 0; rc == 0 && i < v->ndev; i++) {
        v->devices[i] = mh_model_device_at(a->rp.model, i);
        rc = add_device(v, a, o->max_moments, v->devices[i], &v->dropped[i]);
    }
    if (rc == 0)
        rc = gather_indices(v);
    if (rc == 0 && v->nindex)
        rc = mh__analysis_moments_observer(a, v->index, v->nindex, &v->own, &v->ob);
    if (rc < 0) {
        mh__vmoments_free(v);
        return rc;
    }
    v->use = v->own;
    *out = v;
    return 0;
}

const struct mh__observer *mh__vmoments_observer(const struct mh__vmoments *v)
{
    return v->nindex ? &v->ob : NULL;
}

int mh__vmoments_complete(const struct mh__analysis *a, struct mh__vmoments *v, int rode)
{
    if (rode || !v->nindex)
        return 0;
    mh__lifetimes_free(v->own);
    v->own = NULL;
    return mh__analysis_records_at(a, v->index, v->nindex, &v->use, &v->own);
}

void mh__vmoments_free(struct mh__vmoments *v)
{
    if (!v)
        return;
    mh__lifetimes_free(v->own);
    free(v->devices);
    free(v->dropped);
    free(v->m);
    free(v->index);
    free(v);
}

struct rank {
    uint64_t bytes;
    uint32_t depth, node;
};

static int cmp_rank(const void *a, const void *b)
{
    const struct rank *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return (x->depth > y->depth) - (x->depth < y->depth);
}

/* new index + 1 of each kept node (0: dropped); returns how many dropped. */
static size_t choose_nodes(const struct mh__flame_node *nodes, size_t n, size_t max, uint32_t *map)
{
    struct rank *r = malloc(n * sizeof *r);
    size_t kept = 0;
    memset(map, 0, n * sizeof *map);
    if (!r)
        return n; /* written as the root alone */
    for (size_t i = 0; i < n; i++)
        r[i] = (struct rank){nodes[i].bytes, nodes[i].depth, (uint32_t)i};
    qsort(r, n, sizeof *r, cmp_rank);
    for (size_t i = 0; i < n && i < max; i++)
        map[r[i].node] = 1;
    map[0] = 1;
    for (size_t i = 0; i < n; i++) /* parents come before their children */
        if (map[i] && (i == 0 || map[nodes[i].parent]))
            map[i] = (uint32_t)++kept;
        else
            map[i] = 0;
    free(r);
    return n - kept;
}

static void json_node(struct mh__json *j, struct mh__vstr *s, const struct mh__flame_node *nd,
                      const uint32_t *map)
{
    mh__json_begin_array(j);
    mh__json_uint(j, mh__vstr_id(s, nd->name));
    mh__json_int(j, nd->parent == MH__FLAME_NONE ? -1 : (int64_t)map[nd->parent] - 1);
    mh__json_uint(j, nd->bytes);
    mh__json_uint(j, nd->count);
    mh__json_int(j, mh__flame_main_category(nd));
    mh__json_int(j, nd->detail ? (int64_t)mh__vstr_id(s, nd->detail) : -1);
    mh__json_uint(j, nd->self);
    mh__json_begin_array(j);
    for (int c = 0; c < MH__CAT_COUNT; c++)
        if (nd->by_category[c]) {
            mh__json_int(j, c);
            mh__json_uint(j, nd->by_category[c]);
        }
    mh__json_end_array(j);
    mh__json_end_array(j);
}

static int json_tree(struct mh__json *j, struct mh__vstr *s, const struct mh__flame *f, size_t max)
{
    size_t n;
    const struct mh__flame_node *nodes = mh__flame_nodes(f, &n);
    uint32_t *map = malloc(n * sizeof *map);
    if (!map)
        return MH_ENOMEM;
    size_t dropped = choose_nodes(nodes, n, max, map);
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "dropped_nodes", dropped);
    mh__json_key(j, "nodes"); /* [name, parent, bytes, count, category, detail, self, [c, b...]] */
    mh__json_begin_array(j);
    for (size_t i = 0; i < n; i++)
        if (map[i])
            json_node(j, s, &nodes[i], map);
    mh__json_end_array(j);
    mh__json_end_object(j);
    free(map);
    return 0;
}

static int json_trees(const struct mh__vmoments *v, const struct vmoment *m, struct mh__json *j,
                      struct mh__vstr *s, size_t max)
{
    struct mh__flame *f = NULL;
    int used,
        rc = mh__flame_live(v->use, v->reader, m->device, m->index, MH__FLAME_BY_AUTO, &f, &used);
    mh__json_key(j, "trees");
    mh__json_begin_object(j);
    if (rc == 0 && used == MH__FLAME_BY_MODULE) {
        mh__json_key(j, "module");
        rc = json_tree(j, s, f, max);
        mh__flame_free(f);
        f = NULL;
        rc = rc ? rc
                : mh__flame_live(v->use, v->reader, m->device, m->index, MH__FLAME_BY_STACK, &f,
                                 &used);
    }
    if (rc == 0) {
        mh__json_key(j, "stack");
        rc = json_tree(j, s, f, max);
    }
    mh__flame_free(f);
    mh__json_end_object(j);
    return rc;
}

int mh__vmoments_json(const struct mh__vmoments *v, int device, struct mh__json *j,
                      struct mh__vstr *s, const struct mh__view_opts *o)
{
    int rc = 0;
    size_t dropped = 0;
    for (size_t i = 0; i < v->ndev; i++)
        dropped = v->devices[i] == device ? v->dropped[i] : dropped;
    mh__json_kv_uint(j, "step_moments_dropped", dropped);
    mh__json_key(j, "moments");
    mh__json_begin_array(j);
    for (size_t i = 0; i < v->n && rc == 0; i++) {
        const struct vmoment *m = &v->m[i];
        if (m->device != device)
            continue;
        mh__json_begin_object(j);
        mh__json_kv_string(j, "kind", kind_names[m->kind]);
        mh__json_kv_uint(j, "index", m->index);
        mh__json_kv_int(j, "step", m->step);
        if (m->time_known)
            mh__json_kv_uint(j, "time_ns", m->time_ns);
        mh__json_kv_uint(j, "value", m->value);
        rc = json_trees(v, m, j, s, o->max_tree_nodes);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
    return rc;
}
