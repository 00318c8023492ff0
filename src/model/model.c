/* model.c - the replay model's life cycle and event dispatch. mh_model_apply
 * checks an event's device and ranges, lets steps.c see its time, hands it to
 * the allocator (apply.c, expand.c) or driver (driver.c) replay, and updates
 * peaks and step statistics. Owns the devices, the slabs, the OOM list and
 * the anomaly counters. Queries are in query.c. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "model_int.h"

int mh_model_new(const struct mh_model_opts *opts, struct mh_model **out)
{
    if (!out)
        return MH_EINVAL;
    *out = NULL;
    struct mh_model *m = calloc(1, sizeof *m);
    if (!m)
        return MH_ENOMEM;
    if (opts)
        m->conf = opts->conf;
    m->block_slab.objsize = sizeof(struct mh__block);
    m->seg_slab.objsize = sizeof(struct mh__segment);
    m->cur_step = -1;
    m->step_state = MH__STEPS_SETUP;
    *out = m;
    return 0;
}

static void device_free(struct mh__device *d)
{
    mh__addrmap_destroy(&d->blocks);
    mh__driver_destroy(d);
    free(d->free_heap.v);
    free(d->steps);
    free(d);
}

void mh_model_free(struct mh_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->ndev; i++)
        device_free(m->dev[m->devlist[i]]);
    mh__mslab_destroy(&m->block_slab);
    mh__mslab_destroy(&m->seg_slab);
    free(m->ooms);
    mh__scopes_free(m->scopes);
    free(m);
}

static struct mh__device *device_get(struct mh_model *m, int index)
{
    if (m->dev[index])
        return m->dev[index];
    struct mh__device *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->index = index;
    size_t i = m->ndev;
    while (i > 0 && m->devlist[i - 1] > index) {
        m->devlist[i] = m->devlist[i - 1];
        i--;
    }
    m->devlist[i] = index;
    m->ndev++;
    m->dev[index] = d;
    mh__steps_device_init(m, d);
    return d;
}

void mh__model_anomaly(struct mh_model *m, struct mh_apply_result *res, int anomaly)
{
    m->anomalies[anomaly]++;
    if (!res->anomaly)
        res->anomaly = anomaly;
}

int mh__oom_record(struct mh_model *m, struct mh__device *d, const struct mh_event *ev)
{
    if (m->nooms == m->capooms) {
        size_t cap = m->capooms ? m->capooms * 2 : 8;
        struct mh_oom_info *v = realloc(m->ooms, cap * sizeof *v);
        if (!v)
            return MH_ENOMEM;
        m->ooms = v;
        m->capooms = cap;
    }
    struct mh_oom_info *o = &m->ooms[m->nooms++];
    memset(o, 0, sizeof *o);
    o->time_ns = ev->time_ns;
    o->device = d->index;
    o->stream = ev->stream;
    o->request = ev->size;
    o->device_free = ev->addr;
    o->allocated = d->stats.allocated;
    o->reserved = d->stats.reserved;
    o->largest_free_same_stream =
        mh_model_largest_free(m, d->index, ev->stream, mh_is_small_size(ev->size));
    o->largest_free_any = mh__fheap_max(&d->free_heap);
    o->step = mh__device_step(m, d);
    o->stack = ev->stack;
    o->event_index = m->nevents - 1;
    d->stats.ooms++;
    d->acc.s.ooms++;
    return 0;
}

static int is_allocator_kind(unsigned kind)
{
    return kind <= MH_EV_OOM;
}

/* Ranges that would wrap past 2^64, and empty segment ranges. */
static int bad_range(const struct mh_event *ev)
{
    switch (ev->kind) {
    case MH_EV_SEGMENT_ALLOC:
    case MH_EV_SEGMENT_MAP:
    case MH_EV_SEGMENT_UNMAP:
        return ev->size == 0 || ev->addr + ev->size < ev->addr;
    case MH_EV_ALLOC:
    case MH_EV_DRIVER_ALLOC:
        return ev->addr + ev->size < ev->addr;
    default:
        return 0;
    }
}

static int apply_device_event(struct mh_model *m, const struct mh_event *ev,
                              struct mh_apply_result *res, uint64_t idx)
{
    if (!is_allocator_kind(ev->kind) && !mh__driver_tracked(ev))
        return 0; /* host memory (pinned, pageable): no device's */
    if (ev->device < 0 || ev->device >= MH__MAX_DEVICES) {
        mh__model_anomaly(m, res, MH_ANOM_BAD_DEVICE);
        return 0;
    }
    if (bad_range(ev)) {
        mh__model_anomaly(m, res, MH_ANOM_BAD_SIZE);
        return 0;
    }
    struct mh__device *d = device_get(m, ev->device);
    if (!d)
        return MH_ENOMEM;
    if (!is_allocator_kind(ev->kind))
        return mh__apply_driver(m, d, ev);
    mh__steps_retry_check(d, ev->kind);
    int rc = mh__apply_allocator(m, d, ev, res);
    mh__steps_observe(m, d, ev, idx);
    return rc;
}

/* A STEP_END for every device, or (MH_EVF_DEVICE_STEP) for the one it names. */
static int step_end(struct mh_model *m, const struct mh_event *ev, struct mh_apply_result *res)
{
    if (!(ev->flags & MH_EVF_DEVICE_STEP) || ev->device < 0)
        return mh__steps_marker(m, ev);
    if (ev->device >= MH__MAX_DEVICES) {
        mh__model_anomaly(m, res, MH_ANOM_BAD_DEVICE);
        return 0;
    }
    struct mh__device *d = device_get(m, ev->device);
    return d ? mh__steps_device_end(m, d, ev) : MH_ENOMEM;
}

int mh_model_apply(struct mh_model *m, const struct mh_event *ev, struct mh_apply_result *res)
{
    struct mh_apply_result local;
    if (!res)
        res = &local;
    memset(res, 0, sizeof *res);
    if (!m || !ev)
        return MH_EINVAL;
    uint64_t idx = m->nevents++;
    mh__steps_event(m, ev);
    switch (ev->kind) {
    case MH_EV_STEP_BEGIN:
    case MH_EV_PHASE:
        return mh__steps_marker(m, ev);
    case MH_EV_STEP_END:
        return step_end(m, ev, res);
    case MH_EV_SNAPSHOT:
        return 0;
    case MH_EV_SCOPE_ENTER:
    case MH_EV_SCOPE_EXIT:
        return mh__scopes_apply(m, ev);
    case MH_EV_DRIVER_ALLOC:
    case MH_EV_DRIVER_FREE:
        return apply_device_event(m, ev, res, idx);
    default:
        return is_allocator_kind(ev->kind) ? apply_device_event(m, ev, res, idx) : 0;
    }
}

void mh_model_finish(struct mh_model *m)
{
    if (m)
        mh__steps_finish(m);
}
