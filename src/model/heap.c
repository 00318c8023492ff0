/* heap.c - a device's inactive blocks in an indexed binary max-heap by size.
 * It answers "largest free block" in O(1) at every moment the step statistics
 * need it, and its array doubles as the list of free blocks that filtered
 * queries (per stream and pool) scan. Each block records its own position.
 * Owns only the pointer array; the blocks belong to the model's slab. */
#include <stdlib.h>

#include "memhist/error.h"
#include "model_int.h"

static void set(struct mh__heap *h, size_t i, struct mh__block *b)
{
    h->v[i] = b;
    b->heap_idx = (uint32_t)i;
}

static void sift_up(struct mh__heap *h, size_t i)
{
    struct mh__block *b = h->v[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h->v[p]->size >= b->size)
            break;
        set(h, i, h->v[p]);
        i = p;
    }
    set(h, i, b);
}

static void sift_down(struct mh__heap *h, size_t i)
{
    struct mh__block *b = h->v[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->v[c + 1]->size > h->v[c]->size)
            c++;
        if (h->v[c]->size <= b->size)
            break;
        set(h, i, h->v[c]);
        i = c;
    }
    set(h, i, b);
}

int mh__fheap_reserve(struct mh__heap *h, size_t n)
{
    if (n > h->cap) {
        size_t cap = h->cap ? h->cap : 64;
        while (cap < n)
            cap *= 2;
        struct mh__block **v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return MH_ENOMEM;
        h->v = v;
        h->cap = cap;
    }
    return 0;
}

int mh__fheap_push(struct mh__heap *h, struct mh__block *b)
{
    if (h->n == h->cap && mh__fheap_reserve(h, h->n + 1))
        return MH_ENOMEM;
    set(h, h->n++, b);
    sift_up(h, h->n - 1);
    return 0;
}

void mh__fheap_remove(struct mh__heap *h, struct mh__block *b)
{
    size_t i = b->heap_idx;
    if (i >= h->n || h->v[i] != b)
        return;
    struct mh__block *last = h->v[--h->n];
    if (last == b)
        return;
    set(h, i, last);
    sift_up(h, i);
    sift_down(h, last->heap_idx);
}

void mh__fheap_update(struct mh__heap *h, struct mh__block *b)
{
    size_t i = b->heap_idx;
    if (i >= h->n || h->v[i] != b)
        return;
    sift_up(h, i);
    sift_down(h, b->heap_idx);
}

uint64_t mh__fheap_max(const struct mh__heap *h)
{
    return h->n ? h->v[0]->size : 0;
}
