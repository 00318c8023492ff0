/* stack_groups.c - live allocations grouped by allocation stack, the core of
 * "what was live at the peak and from where" (see device_report.h): from a
 * model's state, or at each device's allocated peak from a session observer
 * that needs no second pass. */
#include <stdlib.h>

#include "device_report.h"
#include "addrmap.h"
#include "grow.h"

struct collect {
    struct mh__stack_group *items;
    size_t n, cap;
    int error;
};

static int collect_block(void *user, const struct mh_segment_view *seg,
                         const struct mh_block_view *blk)
{
    struct collect *c = user;
    if (blk->state != MH_BLOCK_ALLOCATED)
        return 0;
    if (MH__GROW(c->items, c->n, c->cap, 256) < 0) {
        c->error = MH_ENOMEM;
        return 1;
    }
    c->items[c->n++] = (struct mh__stack_group){blk->stack, blk->size, 1};
    return 0;
}

static int by_stack(const void *a, const void *b)
{
    const struct mh__stack_group *x = a, *y = b;
    return (x->stack > y->stack) - (x->stack < y->stack);
}

static int by_bytes_desc(const void *a, const void *b)
{
    const struct mh__stack_group *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return (x->stack > y->stack) - (x->stack < y->stack);
}

/* Merges runs of equal stacks in a sorted array; returns the new length. */
static size_t merge_runs(struct mh__stack_group *g, size_t n)
{
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out > 0 && g[out - 1].stack == g[i].stack) {
            g[out - 1].bytes += g[i].bytes;
            g[out - 1].count += g[i].count;
        } else {
            if (out > 0 && g[out - 1].count == 0)
                out--; /* a group the changes since the peak emptied */
            g[out++] = g[i];
        }
    }
    if (out > 0 && g[out - 1].count == 0)
        out--;
    return out;
}

/* Sorts `c`'s items into groups by stack (dropping empty ones), largest
 * first, and hands them out. */
static int finish_groups(struct collect *c, size_t top, struct mh__stack_group **out, size_t *nout,
                         uint64_t *total_bytes, uint64_t *total_count)
{
    if (c->error) {
        free(c->items);
        return c->error;
    }
    *total_bytes = *total_count = 0;
    for (size_t i = 0; i < c->n; i++) {
        *total_bytes += c->items[i].bytes;
        *total_count += c->items[i].count;
    }
    size_t n = 0;
    if (c->n > 0) {
        qsort(c->items, c->n, sizeof *c->items, by_stack);
        n = merge_runs(c->items, c->n);
        qsort(c->items, n, sizeof *c->items, by_bytes_desc);
    }
    *out = c->items;
    *nout = top && n > top ? top : n;
    return 0;
}

int mh__report_group_live(const struct mh_model *m, int device, size_t top,
                          struct mh__stack_group **out, size_t *nout, uint64_t *total_bytes,
                          uint64_t *total_count)
{
    struct collect c = {0};
    mh_model_foreach_block(m, device, collect_block, &c);
    return finish_groups(&c, top, out, nout, total_bytes, total_count);
}

/* ---- the live groups at the allocated peak, in the same pass ------------------- */
/* Each device keeps, per stack, what was allocated and freed since its
 * latest allocated peak; at the end, the groups live at the peak are those
 * live at the end minus what changed since. Memory follows the stacks, not
 * the events after the peak. */
struct peak_dev {
    int device;
    struct mh__stack_group *since; /* per stack: bytes and count as unsigned deltas */
    size_t n, cap;
    struct mh__hmap by_stack;     /* stack + 1 -> index + 1 in since */
};

struct mh__peak_groups {
    struct peak_dev *dev;
    size_t ndev, cap;
    struct mh__observer obs;
};

static struct peak_dev *dev_of(struct mh__peak_groups *pg, int device)
{
    for (size_t i = 0; i < pg->ndev; i++)
        if (pg->dev[i].device == device)
            return &pg->dev[i];
    if (MH__GROW(pg->dev, pg->ndev, pg->cap, 4) < 0)
        return NULL;
    pg->dev[pg->ndev] = (struct peak_dev){device, NULL, 0, 0, {0}};
    return &pg->dev[pg->ndev++];
}

/* Forgets the changes: the state now is the peak's. */
static void since_clear(struct peak_dev *d)
{
    for (size_t i = 0; i < d->n; i++)
        mh__addrmap_del(&d->by_stack, (uint64_t)d->since[i].stack + 1);
    d->n = 0;
}

static int since_add(struct peak_dev *d, uint32_t stack, uint64_t bytes, uint64_t count)
{
    uintptr_t i = (uintptr_t)mh__addrmap_get(&d->by_stack, (uint64_t)stack + 1);
    if (!i) {
        if (MH__GROW(d->since, d->n, d->cap, 256) < 0)
            return MH_ENOMEM;
        d->since[d->n++] = (struct mh__stack_group){stack, 0, 0};
        i = d->n;
        if (mh__addrmap_put(&d->by_stack, (uint64_t)stack + 1, (void *)i) < 0)
            return MH_ENOMEM;
    }
    d->since[i - 1].bytes += bytes;
    d->since[i - 1].count += count;
    return 0;
}

static int peak_begin(void *user, struct mh__session *s)
{
    struct mh__peak_groups *pg = user;
    (void)s;
    for (size_t i = 0; i < pg->ndev; i++)
        since_clear(&pg->dev[i]);
    return 0;
}

static int peak_event(void *user, struct mh__session *s, const struct mh_event *ev,
                      const struct mh_apply_result *res)
{
    int block = ev->kind == MH_EV_ALLOC || ev->kind == MH_EV_FREE_REQUESTED ||
                ev->kind == MH_EV_FREE_COMPLETED;
    if (!block || res->allocated_delta == 0)
        return 0;
    struct peak_dev *d = dev_of(user, ev->device);
    if (!d)
        return MH_ENOMEM;
    int up = res->allocated_delta > 0;
    struct mh_peak p;
    if (up && mh_model_peak_allocated(mh__session_model(s), ev->device, &p) == 0 &&
        p.event_index == mh__session_index(s)) {
        since_clear(d); /* the state after this event is the peak's */
        return 0;
    }
    return since_add(d, res->block_stack, up ? res->block_size : 0 - res->block_size,
                     up ? 1 : UINT64_MAX);
}

int mh__peak_groups_new(struct mh__peak_groups **out)
{
    struct mh__peak_groups *pg = calloc(1, sizeof *pg);
    if (!pg)
        return MH_ENOMEM;
    pg->obs = (struct mh__observer){"peak-groups", pg, peak_begin, peak_event, NULL};
    *out = pg;
    return 0;
}

void mh__peak_groups_free(struct mh__peak_groups *pg)
{
    for (size_t i = 0; pg && i < pg->ndev; i++) {
        free(pg->dev[i].since);
        mh__addrmap_destroy(&pg->dev[i].by_stack);
    }
    if (pg)
        free(pg->dev);
    free(pg);
}

const struct mh__observer *mh__peak_groups_observer(struct mh__peak_groups *pg)
{
    return &pg->obs;
}

int mh__peak_groups_get(const struct mh__peak_groups *pg, const struct mh_model *end, int device,
                        size_t top, struct mh__stack_group **out, size_t *nout,
                        uint64_t *total_bytes, uint64_t *total_count)
{
    struct collect c = {0};
    mh_model_foreach_block(end, device, collect_block, &c);
    const struct peak_dev *d = NULL;
    for (size_t i = 0; i < pg->ndev; i++)
        if (pg->dev[i].device == device)
            d = &pg->dev[i];
    for (size_t i = 0; d && i < d->n && !c.error; i++) {
        if (MH__GROW(c.items, c.n, c.cap, 256) < 0) {
            c.error = MH_ENOMEM;
            break;
        }
        const struct mh__stack_group *g = &d->since[i];
        c.items[c.n++] = (struct mh__stack_group){g->stack, 0 - g->bytes, 0 - g->count};
    }
    return finish_groups(&c, top, out, nout, total_bytes, total_count);
}
