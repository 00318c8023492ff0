/* map.c - the simulator's address -> live block table (open addressing,
 * linear probing, backward-shift deletion; address 0 is never a key since
 * device addresses start far above it). Owns its arrays, not the blocks. */
#include <stdlib.h>

#include "memhist/error.h"
#include "sim_int.h"

static size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

static int grow(struct mh__sim_map *m)
{
    size_t nc = m->cap ? m->cap * 2 : 1024;
    uint64_t *nk = calloc(nc, sizeof *nk);
    struct mh__sim_block **nv = calloc(nc, sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return MH_ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = slot_of(m->keys[i], nc);
        while (nk[j])
            j = (j + 1) & (nc - 1);
        nk[j] = m->keys[i];
        nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = nc;
    return 0;
}

int mh__map_put(struct mh__sim_map *m, uint64_t key, struct mh__sim_block *b)
{
    if ((m->n + 1) * 2 > m->cap) {
        int rc = grow(m);
        if (rc)
            return rc;
    }
    size_t i = slot_of(key, m->cap);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->keys[i])
        m->n++;
    m->keys[i] = key;
    m->vals[i] = b;
    return 0;
}

struct mh__sim_block *mh__map_get(const struct mh__sim_map *m, uint64_t key)
{
    if (!m->cap || !key)
        return NULL;
    size_t i = slot_of(key, m->cap);
    while (m->keys[i]) {
        if (m->keys[i] == key)
            return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return NULL;
}

void mh__map_del(struct mh__sim_map *m, uint64_t key)
{
    if (!m->cap || !key)
        return;
    size_t i = slot_of(key, m->cap);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->keys[i])
        return;
    m->n--;
    /* backward shift: move later entries of the probe run into the hole */
    size_t hole = i;
    for (size_t j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
        size_t home = slot_of(m->keys[j], m->cap);
        int movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
        if (movable) {
            m->keys[hole] = m->keys[j];
            m->vals[hole] = m->vals[j];
            hole = j;
        }
    }
    m->keys[hole] = 0;
    m->vals[hole] = NULL;
}

void mh__map_free(struct mh__sim_map *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}
