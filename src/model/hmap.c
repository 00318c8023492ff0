/* hmap.c - open-addressing hash map from uint64 keys to pointers, used by the
 * model for block addresses and driver allocations. Linear probing with
 * backward-shift deletion (no tombstones), so lookups stay short however many
 * inserts and deletes a long trace makes. Owns only its slot array. */
#include <stdlib.h>

#include "memhist/error.h"
#include "model_int.h"

static size_t slot_of(uint64_t key, size_t cap)
{
    uint64_t h = (key >> 6) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    return (size_t)h & (cap - 1);
}

void *mh__addrmap_get(const struct mh__hmap *h, uint64_t key)
{
    if (!h->cap)
        return NULL;
    for (size_t i = slot_of(key, h->cap);; i = (i + 1) & (h->cap - 1)) {
        const struct mh__hslot *s = &h->slots[i];
        if (!s->val)
            return NULL;
        if (s->key == key)
            return s->val;
    }
}

static void place(struct mh__hslot *slots, size_t cap, uint64_t key, void *val)
{
    size_t i = slot_of(key, cap);
    while (slots[i].val && slots[i].key != key)
        i = (i + 1) & (cap - 1);
    slots[i].key = key;
    slots[i].val = val;
}

static int grow(struct mh__hmap *h)
{
    size_t cap = h->cap ? h->cap * 2 : 64;
    struct mh__hslot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return MH_ENOMEM;
    for (size_t i = 0; i < h->cap; i++)
        if (h->slots[i].val)
            place(slots, cap, h->slots[i].key, h->slots[i].val);
    free(h->slots);
    h->slots = slots;
    h->cap = cap;
    return 0;
}

int mh__addrmap_put(struct mh__hmap *h, uint64_t key, void *val)
{
    if ((h->count + 1) * 4 > h->cap * 3) {
        int rc = grow(h);
        if (rc)
            return rc;
    }
    size_t i = slot_of(key, h->cap);
    while (h->slots[i].val && h->slots[i].key != key)
        i = (i + 1) & (h->cap - 1);
    if (!h->slots[i].val)
        h->count++;
    h->slots[i].key = key;
    h->slots[i].val = val;
    return 0;
}

/* Backward-shift deletion: pull later members of the probe run into the hole
 * when their home slot does not lie cyclically in (hole, j]. */
void *mh__addrmap_del(struct mh__hmap *h, uint64_t key)
{
    if (!h->cap)
        return NULL;
    size_t mask = h->cap - 1, i = slot_of(key, h->cap);
    while (h->slots[i].val && h->slots[i].key != key)
        i = (i + 1) & mask;
    void *val = h->slots[i].val;
    if (!val)
        return NULL;
    for (size_t j = (i + 1) & mask; h->slots[j].val; j = (j + 1) & mask) {
        size_t home = slot_of(h->slots[j].key, h->cap);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            h->slots[i] = h->slots[j];
            i = j;
        }
    }
    h->slots[i].val = NULL;
    h->count--;
    return val;
}

void mh__addrmap_destroy(struct mh__hmap *h)
{
    free(h->slots);
    h->slots = NULL;
    h->cap = h->count = 0;
}
