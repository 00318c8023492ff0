/* stacktrie.c - the stack trie: every captured stack is a path from the
 * root, one node per frame, outermost first, so a stack is named by its
 * innermost node and a repeated stack costs a few hash probes and no
 * allocation.
 *
 * Written by the allocating threads (stackcap.c), read by the drain thread
 * at resolution. Lock-free: a new node is filled, then published by a
 * compare-and-swap into an open-addressing table keyed by (parent, frame);
 * a thread that loses the race uses the winner's node. Nodes are never
 * removed; the arrays are allocated once, when capture is readied, and
 * the table's pages mapped then (8 MiB, probed at random), so that no
 * allocating thread takes a page fault in it. */
#include <stdatomic.h>
#include <stdlib.h>

#include "prefault.h"
#include "pystack.h"

#define TRIE_BITS 21
#define TRIE_SLOTS (1u << TRIE_BITS)
#define TRIE_CAP (TRIE_SLOTS / 2)

struct node {
    uint32_t parent, code;
    uint64_t pos;
};

static struct node *_Atomic nodes;
static _Atomic uint32_t *_Atomic table;
static _Atomic uint32_t count;

static uint32_t hash_key(uint32_t parent, const struct mh__fkey *k)
{
    uint64_t h = ((uint64_t)parent << 32 | k->code) * 0x9E3779B97F4A7C15ull;
    h ^= k->pos * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    return (uint32_t)(h * 0xBF58476D1CE4E5B9ull >> (64 - TRIE_BITS));
}

/* Allocates the arrays once; racing threads free their losing copies. */
static int ready(void)
{
    if (atomic_load_explicit(&table, memory_order_acquire))
        return 1;
    struct node *n = calloc(TRIE_CAP + 1, sizeof *n);
    _Atomic uint32_t *t = calloc(TRIE_SLOTS, sizeof *t);
    if (t) /* probed at random: every page at once (nodes fill in order) */
        mh__prefault((void *)t, TRIE_SLOTS * sizeof *t, 1);
    struct node *nexp = NULL;
    if (!n || !atomic_compare_exchange_strong(&nodes, &nexp, n))
        free(n);
    _Atomic uint32_t *texp = NULL;
    if (!t || !atomic_load(&nodes) || !atomic_compare_exchange_strong(&table, &texp, t))
        free(t);
    return atomic_load_explicit(&table, memory_order_acquire) != NULL;
}

int mh__trie_reserve(void)
{
    return ready() ? 0 : -1;
}

static int same(const struct node *n, uint32_t parent, const struct mh__fkey *k)
{
    return n->parent == parent && n->code == k->code && n->pos == k->pos;
}

uint32_t mh__trie_child(uint32_t parent, const struct mh__fkey *key)
{
    if (!ready())
        return 0;
    struct node *ns = atomic_load_explicit(&nodes, memory_order_relaxed);
    _Atomic uint32_t *t = atomic_load_explicit(&table, memory_order_relaxed);
    uint32_t h = hash_key(parent, key), fresh = 0;
    for (uint32_t probe = 0; probe < TRIE_SLOTS; probe++, h = (h + 1) & (TRIE_SLOTS - 1)) {
        uint32_t id = atomic_load_explicit(&t[h], memory_order_acquire);
        if (id == 0) {
            if (!fresh) {
                fresh = atomic_fetch_add_explicit(&count, 1, memory_order_relaxed) + 1;
                if (fresh > TRIE_CAP)
                    return 0;
                ns[fresh] = (struct node){parent, key->code, key->pos};
            }
            if (atomic_compare_exchange_strong_explicit(&t[h], &id, fresh, memory_order_release,
                                                        memory_order_acquire))
                return fresh;
        }
        if (same(&ns[id], parent, key))
            return id;
    }
    return 0;
}

int mh__trie_node(uint32_t node, uint32_t *parent, struct mh__fkey *key)
{
    struct node *ns = atomic_load_explicit(&nodes, memory_order_acquire);
    if (!ns || node == 0 || node > TRIE_CAP || node > atomic_load(&count))
        return -1;
    *parent = ns[node].parent;
    key->code = ns[node].code;
    key->pos = ns[node].pos;
    return 0;
}

uint32_t mh__trie_count(void)
{
    uint32_t n = atomic_load(&count);
    return n > TRIE_CAP ? TRIE_CAP : n;
}
