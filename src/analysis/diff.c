/* diff.c - the answer of `memhist diff` (see diff.h): the two runs' peaks,
 * their common steps, and the bytes at the peak of every layer and stack
 * name in either run, matched through a hash of the name, sorted by the
 * size of the change. Owns the answer's arrays. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "addrmap.h"
#include "analysis.h"
#include "diff.h"
#include "grow.h"
#include "stacks.h"

/* Names with their bytes in A and B, found by name. */
struct delta_list {
    struct mh__named_delta *items;
    size_t n, cap;
    struct mh__hmap by_name; /* hash (rehashed on a collision) -> index + 1 */
};

static uint64_t name_hash(const char *s)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

static int delta_add(struct delta_list *l, const char *name, uint64_t bytes, int which)
{
    char cut[sizeof l->items->name];
    snprintf(cut, sizeof cut, "%s", name); /* names compare as stored */
    for (uint64_t key = name_hash(cut);; key = key * 31 + 7) {
        uintptr_t i = (uintptr_t)mh__addrmap_get(&l->by_name, key);
        if (i && strcmp(l->items[i - 1].name, cut) == 0) {
            *(which ? &l->items[i - 1].b : &l->items[i - 1].a) += bytes;
            return 0;
        }
        if (i)
            continue; /* another name with this hash */
        if (MH__GROW(l->items, l->n, l->cap, 64) < 0)
            return MH_ENOMEM;
        struct mh__named_delta *d = &l->items[l->n++];
        memset(d, 0, sizeof *d);
        memcpy(d->name, cut, sizeof cut);
        *(which ? &d->b : &d->a) = bytes;
        return mh__addrmap_put(&l->by_name, key, (void *)(uintptr_t)l->n);
    }
}

static int by_abs_delta(const void *x, const void *y)
{
    const struct mh__named_delta *p = x, *q = y;
    int64_t dp = (int64_t)p->b - (int64_t)p->a, dq = (int64_t)q->b - (int64_t)q->a;
    uint64_t ap = dp < 0 ? (uint64_t)-dp : (uint64_t)dp, aq = dq < 0 ? (uint64_t)-dq : (uint64_t)dq;
    if (ap != aq)
        return ap < aq ? 1 : -1;
    return strcmp(p->name, q->name);
}

static void list_done(struct delta_list *l, struct mh__named_delta **items, size_t *n)
{
    if (l->n)
        qsort(l->items, l->n, sizeof *l->items, by_abs_delta);
    mh__addrmap_destroy(&l->by_name);
    *items = l->items;
    *n = l->n;
}

static int layers_side(const struct mh__analysis *a, int device, int which, struct delta_list *l)
{
    struct mh__layers *ly;
    size_t n;
    int rc = mh__layers_analyze(a, device, NULL, 0, &ly);
    if (rc < 0)
        return rc;
    const struct mh__layer_stats *st = mh__layers_list(ly, &n);
    for (size_t i = 0; i < n && rc == 0; i++)
        if (st[i].live_at_peak)
            rc = delta_add(l, st[i].name, st[i].live_at_peak, which);
    mh__layers_free(ly);
    return rc;
}

static int stacks_side(const struct mh__analysis *a, int device, const struct mh_peak *peak,
                       int which, struct delta_list *l)
{
    struct mh__stack_group *g = NULL;
    size_t n = 0;
    uint64_t tb, tc;
    if (peak->value == 0)
        return 0;
    int rc = mh__peak_groups_get(a->peaks, a->rp.model, device, 0, &g, &n, &tb, &tc);
    char label[512];
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = delta_add(l, mh__stack_label(a->rp.reader, g[i].stack, label, sizeof label),
                       g[i].bytes, which);
    free(g);
    return rc;
}

static int common_steps(const struct mh__analysis *run[2], struct mh__diff *d)
{
    const struct mh_model *ma = run[0]->rp.model, *mb = run[1]->rp.model;
    size_t n = d->steps_a = mh_model_step_count(ma, d->device[0]);
    if (!(d->steps = calloc(n ? n : 1, sizeof *d->steps)))
        return MH_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct mh_step_stats a, b;
        if (mh_model_step(ma, d->device[0], i, &a) != 0 ||
            mh__step_find(mb, d->device[1], a.step, &b) != 0)
            continue;
        d->steps[d->nsteps++] = (struct mh__diff_step){a.step, a.peak_allocated, b.peak_allocated,
                                                      a.peak_reserved, b.peak_reserved};
    }
    return 0;
}

int mh__diff_runs(const struct mh__analysis *run[2], const int dev[2], struct mh__diff *out)
{
    struct delta_list layers = {0}, stacks = {0};
    int rc = 0;
    memset(out, 0, sizeof *out);
    for (int s = 0; s < 2; s++) {
        const struct mh_model *m = run[s]->rp.model;
        out->device[s] = dev[s] >= 0 ? dev[s] : mh_model_device_count(m) ? mh_model_device_at(m, 0) : 0;
        mh_model_peak_allocated(m, out->device[s], &out->allocated[s]);
        mh_model_peak_reserved(m, out->device[s], &out->reserved[s]);
    }
    rc = common_steps(run, out);
    for (int s = 0; s < 2 && rc == 0; s++) {
        rc = layers_side(run[s], out->device[s], s, &layers);
        if (rc == 0)
            rc = stacks_side(run[s], out->device[s], &out->allocated[s], s, &stacks);
    }
    list_done(&layers, &out->layers, &out->nlayers);
    list_done(&stacks, &out->stacks, &out->nstacks);
    if (rc < 0)
        mh__diff_free(out);
    return rc;
}

void mh__diff_free(struct mh__diff *d)
{
    free(d->steps);
    free(d->layers);
    free(d->stacks);
    memset(d, 0, sizeof *d);
}
