/* stack_groups.c - live allocations grouped by allocation stack, the core of
 * "what was live at the peak and from where" (see device_report.h). */
#include <stdlib.h>

#include "device_report.h"

struct collect {
    struct mh_stack_group *items;
    size_t n, cap;
    int error;
};

static int collect_block(void *user, const struct mh_segment_view *seg,
                         const struct mh_block_view *blk)
{
    struct collect *c = user;
    if (blk->state != MH_BLOCK_ALLOCATED)
        return 0;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        struct mh_stack_group *p = realloc(c->items, cap * sizeof *p);
        if (!p) {
            c->error = MH_ENOMEM;
            return 1;
        }
        c->items = p;
        c->cap = cap;
    }
    c->items[c->n++] = (struct mh_stack_group){blk->stack, blk->size, 1};
    return 0;
}

static int by_stack(const void *a, const void *b)
{
    const struct mh_stack_group *x = a, *y = b;
    return (x->stack > y->stack) - (x->stack < y->stack);
}

static int by_bytes_desc(const void *a, const void *b)
{
    const struct mh_stack_group *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return (x->stack > y->stack) - (x->stack < y->stack);
}

/* Merges runs of equal stacks in a sorted array; returns the new length. */
static size_t merge_runs(struct mh_stack_group *g, size_t n)
{
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out > 0 && g[out - 1].stack == g[i].stack) {
            g[out - 1].bytes += g[i].bytes;
            g[out - 1].count += g[i].count;
        } else {
            g[out++] = g[i];
        }
    }
    return out;
}

int mh__report_group_live(const struct mh_model *m, int device, size_t top,
                          struct mh_stack_group **out, size_t *nout, uint64_t *total_bytes,
                          uint64_t *total_count)
{
    struct collect c = {0};
    mh_model_foreach_block(m, device, collect_block, &c);
    if (c.error) {
        free(c.items);
        return c.error;
    }
    *total_bytes = *total_count = 0;
    for (size_t i = 0; i < c.n; i++) {
        *total_bytes += c.items[i].bytes;
        (*total_count)++;
    }
    size_t n = 0;
    if (c.n > 0) {
        qsort(c.items, c.n, sizeof *c.items, by_stack);
        n = merge_runs(c.items, c.n);
        qsort(c.items, n, sizeof *c.items, by_bytes_desc);
    }
    *out = c.items;
    *nout = top && n > top ? top : n;
    return 0;
}
