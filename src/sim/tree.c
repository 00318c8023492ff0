/* tree.c - the simulator's ordered block sets: a treap keyed by (key1, seq,
 * address). Free blocks use key1 = size, giving the (size, segment age,
 * address) order in which torch's best fit searches (torch 2.15 breaks ties
 * between equal sizes by the age of the segment, then by address); unmapped
 * expandable blocks use key1 = 0 and seq = 0, giving address order. Nodes are the blocks themselves (intrusive); the
 * priority is a hash of the address, so shapes are deterministic. Owns
 * nothing. */
#include <stdlib.h>

#include "sim_int.h"

struct key {
    uint64_t k1, seq, addr;
};

static struct key key_of(const struct mh__sim_block *b)
{
    return (struct key){b->key1, b->seq, b->addr};
}

static int key_less(struct key a, struct key b)
{
    if (a.k1 != b.k1)
        return a.k1 < b.k1;
    if (a.seq != b.seq)
        return a.seq < b.seq;
    return a.addr < b.addr;
}

/* Splits t into keys < k and keys >= k. */
static void split(struct mh__sim_block *t, struct key k, struct mh__sim_block **l,
                  struct mh__sim_block **r)
{
    while (t) {
        if (key_less(key_of(t), k)) {
            *l = t;
            l = &t->right;
            t = t->right;
        } else {
            *r = t;
            r = &t->left;
            t = t->left;
        }
    }
    *l = NULL;
    *r = NULL;
}

static struct mh__sim_block *merge(struct mh__sim_block *a, struct mh__sim_block *b)
{
    struct mh__sim_block *root = NULL, **slot = &root;
    while (a && b) {
        if (a->prio > b->prio) {
            *slot = a;
            slot = &a->right;
            a = a->right;
        } else {
            *slot = b;
            slot = &b->left;
            b = b->left;
        }
    }
    *slot = a ? a : b;
    return root;
}

void mh__tree_insert(struct mh__sim_block **root, struct mh__sim_block *b)
{
    struct mh__sim_block **slot = root;
    while (*slot && (*slot)->prio >= b->prio)
        slot = key_less(key_of(b), key_of(*slot)) ? &(*slot)->left : &(*slot)->right;
    split(*slot, key_of(b), &b->left, &b->right);
    *slot = b;
}

void mh__tree_erase(struct mh__sim_block **root, struct mh__sim_block *b)
{
    struct mh__sim_block **slot = root;
    while (*slot && *slot != b)
        slot = key_less(key_of(b), key_of(*slot)) ? &(*slot)->left : &(*slot)->right;
    if (*slot)
        *slot = merge(b->left, b->right);
    b->left = b->right = NULL;
}

struct mh__sim_block *mh__tree_lower_bound(struct mh__sim_block *t, uint64_t k1, uint64_t seq,
                                           uint64_t k2)
{
    struct mh__sim_block *best = NULL;
    struct key k = {k1, seq, k2};
    while (t) {
        if (key_less(key_of(t), k)) {
            t = t->right;
        } else {
            best = t;
            t = t->left;
        }
    }
    return best;
}

struct mh__sim_block *mh__tree_before(struct mh__sim_block *t, uint64_t k1, uint64_t seq,
                                      uint64_t k2)
{
    struct mh__sim_block *best = NULL;
    struct key k = {k1, seq, k2};
    while (t) {
        if (key_less(key_of(t), k)) {
            best = t;
            t = t->right;
        } else {
            t = t->left;
        }
    }
    return best;
}

struct mh__sim_block *mh__tree_next(struct mh__sim_block *root, const struct mh__sim_block *b)
{
    if (b->addr == UINT64_MAX)
        return mh__tree_lower_bound(root, b->key1, b->seq + 1, 0);
    return mh__tree_lower_bound(root, b->key1, b->seq, b->addr + 1);
}

struct mh__sim_block *mh__tree_max(struct mh__sim_block *t)
{
    while (t && t->right)
        t = t->right;
    return t;
}

static long collect(struct mh__sim_block *t, struct mh__sim_block ***arr, size_t *cap, size_t n)
{
    while (t) {
        long r = collect(t->left, arr, cap, n);
        if (r < 0)
            return r;
        n = (size_t)r;
        if (n == *cap) {
            size_t nc = *cap ? *cap * 2 : 64;
            struct mh__sim_block **na = realloc(*arr, nc * sizeof *na);
            if (!na)
                return -1;
            *arr = na;
            *cap = nc;
        }
        (*arr)[n++] = t;
        t = t->right;
    }
    return (long)n;
}

long mh__tree_collect(struct mh__sim_block *root, struct mh__sim_block ***arr, size_t *cap,
                      size_t n)
{
    return collect(root, arr, cap, n);
}
