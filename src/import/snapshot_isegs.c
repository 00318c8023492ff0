/* snapshot_isegs.c - the set of live segments of one device during snapshot
 * import's backwards replay (snapshot_ireplay.c): segments keyed by start
 * address in a treap (a binary search tree kept balanced by random
 * priorities), so that inserting, removing and finding the segment holding
 * an address take O(log n) whatever order a snapshot's entries come in. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "snapshot_import_int.h"

/* Node 0 is the empty tree; free nodes chain through `l`. */
struct mh__isnode {
    struct mh__iseg g;
    uint32_t l, r, prio;
    uint8_t live;
};

static uint32_t next_prio(struct mh__isegset *s)
{
    uint64_t x = s->rng ? s->rng : 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s->rng = x;
    return (uint32_t)(x >> 32) | 1u;
}

/* Splits tree t into nodes below `addr` (*a) and the others (*b). Recursion
 * depth is the tree's height: O(log n) expected for random priorities. */
static void split(struct mh__isnode *n, uint32_t t, uint64_t addr, uint32_t *a, uint32_t *b)
{
    if (!t) {
        *a = *b = 0;
    } else if (n[t].g.address < addr) {
        split(n, n[t].r, addr, &n[t].r, b);
        *a = t;
    } else {
        split(n, n[t].l, addr, a, &n[t].l);
        *b = t;
    }
}

/* Joins a and b, every key of a below every key of b. */
static uint32_t merge(struct mh__isnode *n, uint32_t a, uint32_t b)
{
    if (!a || !b)
        return a ? a : b;
    if (n[a].prio > n[b].prio) {
        n[a].r = merge(n, n[a].r, b);
        return a;
    }
    n[b].l = merge(n, a, n[b].l);
    return b;
}

/* The node with the greatest address <= addr (below = 0) or < addr
 * (below = 1); 0 if none. */
static uint32_t floor_node(const struct mh__isegset *s, uint64_t addr, int below)
{
    uint32_t t = s->root, best = 0;
    while (t) {
        uint64_t a = s->n[t].g.address;
        if (a < addr || (!below && a == addr)) {
            best = t;
            t = s->n[t].r;
        } else {
            t = s->n[t].l;
        }
    }
    return best;
}

/* The node with the least address >= addr; 0 if none. */
static uint32_t ceil_node(const struct mh__isegset *s, uint64_t addr)
{
    uint32_t t = s->root, best = 0;
    while (t) {
        if (s->n[t].g.address >= addr) {
            best = t;
            t = s->n[t].l;
        } else {
            t = s->n[t].r;
        }
    }
    return best;
}

struct mh__iseg *mh__isegset_find(struct mh__isegset *s, uint64_t addr)
{
    uint32_t t = floor_node(s, addr, 0);
    if (!t || addr - s->n[t].g.address >= s->n[t].g.size)
        return NULL;
    return &s->n[t].g;
}

static uint32_t new_node(struct mh__isegset *s)
{
    if (s->free) {
        uint32_t t = s->free;
        s->free = s->n[t].l;
        return t;
    }
    if (s->used + 1 >= s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        if (cap > UINT32_MAX)
            return 0;
        struct mh__isnode *p = realloc(s->n, cap * sizeof *p);
        if (!p)
            return 0;
        s->n = p;
        s->cap = cap;
    }
    if (!s->used)
        s->used = 1; /* node 0 is the empty tree */
    return (uint32_t)s->used++;
}

int mh__isegset_insert(struct mh__isegset *s, const struct mh__iseg *g)
{
    if (!g->size || g->address + g->size < g->address)
        return 1; /* empty or wrapping: not a segment */
    uint32_t p = floor_node(s, g->address, 1), q = ceil_node(s, g->address);
    if ((p && s->n[p].g.address + s->n[p].g.size > g->address) ||
        (q && s->n[q].g.address < g->address + g->size))
        return 1; /* overlap */
    uint32_t t = new_node(s);
    if (!t)
        return MH_ENOMEM;
    memset(&s->n[t], 0, sizeof s->n[t]);
    s->n[t].g = *g;
    s->n[t].prio = next_prio(s);
    s->n[t].live = 1;
    uint32_t a, b;
    split(s->n, s->root, g->address, &a, &b);
    s->root = merge(s->n, merge(s->n, a, t), b);
    s->count++;
    return 0;
}

void mh__isegset_remove(struct mh__isegset *s, uint64_t address)
{
    uint32_t a, b, m, c;
    split(s->n, s->root, address, &a, &b);
    split(s->n, b, address + 1, &m, &c);
    s->root = merge(s->n, a, c);
    if (m) { /* addresses are unique: m is one node */
        s->n[m].live = 0;
        s->n[m].l = s->free;
        s->free = m;
        s->count--;
    }
}

static int cmp_addr(const void *a, const void *b)
{
    const struct mh__iseg *x = a, *y = b;
    return x->address < y->address ? -1 : x->address > y->address;
}

int mh__isegset_sorted(const struct mh__isegset *s, struct mh__iseg **out, size_t *n)
{
    *out = malloc((s->count ? s->count : 1) * sizeof **out);
    if (!*out)
        return MH_ENOMEM;
    size_t k = 0;
    for (size_t t = 1; t < s->used; t++)
        if (s->n[t].live)
            (*out)[k++] = s->n[t].g;
    if (k)
        qsort(*out, k, sizeof **out, cmp_addr);
    *n = k;
    return 0;
}

void mh__isegset_free(struct mh__isegset *s)
{
    free(s->n);
    memset(s, 0, sizeof *s);
}
