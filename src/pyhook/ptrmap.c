/* ptrmap.c - the address map of libmemhist_pyhook (ptrmap.h): linear
 * probing over a power-of-two table, keys hashed by a multiply. */
#include "ptrmap.h"

#include <stdlib.h>

static size_t slot_of(const struct mh__ptrmap *m, uintptr_t key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 32) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

uint32_t mh__ptrmap_get(const struct mh__ptrmap *m, uintptr_t key)
{
    if (!m->cap)
        return 0;
    size_t i = slot_of(m, key);
    return m->keys[i] ? m->vals[i] : 0;
}

static int grow(struct mh__ptrmap *m)
{
    struct mh__ptrmap bigger = {.cap = m->cap ? 2 * m->cap : 1024, .n = m->n};
    bigger.keys = calloc(bigger.cap, sizeof *bigger.keys);
    bigger.vals = calloc(bigger.cap, sizeof *bigger.vals);
    if (!bigger.keys || !bigger.vals) {
        free(bigger.keys);
        free(bigger.vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t s = slot_of(&bigger, m->keys[i]);
            bigger.keys[s] = m->keys[i];
            bigger.vals[s] = m->vals[i];
        }
    mh__ptrmap_free(m);
    *m = bigger;
    return 0;
}

int mh__ptrmap_put(struct mh__ptrmap *m, uintptr_t key, uint32_t val)
{
    if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
        return -1;
    size_t i = slot_of(m, key);
    if (!m->keys[i]) {
        m->keys[i] = key;
        m->n++;
    }
    m->vals[i] = val;
    return 0;
}

void mh__ptrmap_free(struct mh__ptrmap *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}
