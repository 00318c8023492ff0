/* sim_int.h - the simulator's state, shared by its source files.
 *
 * Blocks tile segments (non-expandable: one cudaMalloc; expandable: one
 * virtual reservation whose blocks are mapped or unmapped) as a doubly
 * linked list in address order. Free mapped blocks of one (stream, pool) sit
 * in a treap ordered by (size, address), the order of torch's BlockPool set;
 * unmapped blocks in a treap ordered by address. Live blocks are found by
 * address through a hash table. Device address space is handed out by a
 * first-fit range list. */
#ifndef MH_SIM_SIM_INT_H
#define MH_SIM_SIM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "sim.h"

struct mh__sim_pool;
struct mh__sim_resv;

struct mh__sim_block {
    uint64_t addr, size, requested;
    uint64_t stream;
    struct mh__sim_block *prev, *next;  /* neighbours inside the segment */
    struct mh__sim_block *left, *right; /* treap children */
    struct mh__sim_pool *pool;
    struct mh__sim_resv *resv;          /* expandable reservation, or NULL */
    uint64_t key1;                      /* treap key: size (free) or 0 (unmapped) */
    uint64_t seq;                       /* creation order of its segment (0: expandable) */
    uint64_t gc_base;                   /* pool call count when it became free */
    uint64_t ready_ns;                  /* pending free: completes at this time */
    uint64_t pending_seq;               /* order among pending frees */
    uint32_t prio;
    uint32_t stack, str, seg_stack;
    uint8_t allocated, pending, mapped, in_tree;
};

/* One (stream, small/large) pool. */
struct mh__sim_pool {
    uint64_t stream;
    int small;
    struct mh__sim_block *free_root;     /* free mapped blocks by (size, addr) */
    struct mh__sim_block *unmapped_root; /* unmapped blocks by addr */
};

struct mh__sim_resv {
    uint64_t base, size, page;
};

/* Address -> live block, open addressing with backward-shift deletion. */
struct mh__sim_map {
    uint64_t *keys;
    struct mh__sim_block **vals;
    size_t cap, n;
};

struct mh__sim_range {
    uint64_t base, size;
};

struct mh__sim {
    struct mh__sim_opts o;
    uint64_t now;
    uint64_t allowed;      /* allocation limit in bytes (UINT64_MAX none) */
    int set_fraction;
    struct mh__sim_stats st;
    struct mh__sim_pool **pools; /* sorted by (stream, small) */
    size_t npools, cap_pools;
    struct mh__sim_pool *last_pool;
    struct mh__sim_resv **resvs;
    size_t nresvs, cap_resvs;
    struct mh__sim_map live;     /* allocated and pending blocks */
    struct mh__sim_block **pending; /* pending frees in free order */
    size_t npending, cap_pending;
    uint64_t pending_seq;
    uint64_t gc_calls[2];        /* get_free_block calls per pool kind (large, small) */
    uint64_t segments_made;      /* cudaMalloc'd segments so far: the next one's seq */
    struct mh__sim_range *ranges; /* used device address ranges, sorted */
    size_t nranges, cap_ranges;
    struct mh__sim_block *spare; /* free list of block structs (linked by next) */
    void **slabs;                /* every block struct lives in one of these */
    size_t nslabs, cap_slabs;
    uint32_t local_ids;          /* interning without a writer */
    uint32_t cur_stack, cur_str; /* context of the current call */
    struct mh__sim_block *seed_at; /* seeding: the block the next seeded block goes in */
    int err;                     /* first callback/writer error */
};

/* tree.c */
void mh__tree_insert(struct mh__sim_block **root, struct mh__sim_block *b);
void mh__tree_erase(struct mh__sim_block **root, struct mh__sim_block *b);
/* Smallest node with key >= (k1, seq, k2), or NULL. */
struct mh__sim_block *mh__tree_lower_bound(struct mh__sim_block *root, uint64_t k1, uint64_t seq,
                                           uint64_t k2);
/* Largest node with key < (k1, seq, k2), or NULL. */
struct mh__sim_block *mh__tree_before(struct mh__sim_block *root, uint64_t k1, uint64_t seq,
                                      uint64_t k2);
struct mh__sim_block *mh__tree_next(struct mh__sim_block *root, const struct mh__sim_block *b);
struct mh__sim_block *mh__tree_max(struct mh__sim_block *root);
/* Appends the nodes in order to arr (grown with realloc); returns count or -1. */
long mh__tree_collect(struct mh__sim_block *root, struct mh__sim_block ***arr, size_t *cap,
                      size_t n);

/* map.c */
int mh__map_put(struct mh__sim_map *m, uint64_t key, struct mh__sim_block *b);
struct mh__sim_block *mh__map_get(const struct mh__sim_map *m, uint64_t key);
void mh__map_del(struct mh__sim_map *m, uint64_t key);
void mh__map_free(struct mh__sim_map *m);

/* space.c: device address ranges (cudaMalloc and reservations). */
int mh__space_take(struct mh__sim *s, uint64_t size, uint64_t want, uint64_t *addr);
void mh__space_give(struct mh__sim *s, uint64_t addr);
/* The range at addr ends after `size` bytes (a smaller size only). */
void mh__space_shrink(struct mh__sim *s, uint64_t addr, uint64_t size);

/* core.c */
struct mh__sim_block *mh__block_new(struct mh__sim *s);
void mh__block_drop(struct mh__sim *s, struct mh__sim_block *b);
struct mh__sim_pool *mh__pool_get(struct mh__sim *s, uint64_t stream, int small);
/* Hands an event to the writer and the callback; the first error sticks. */
int mh__deliver(struct mh__sim *s, const struct mh_event *ev);
int mh__emit_alloc_event(struct mh__sim *s, int kind, uint64_t addr, uint64_t size,
                         uint64_t stream, uint32_t stack, uint32_t str, uint8_t flags);
uint8_t mh__pool_flags(const struct mh__sim_pool *p, int expandable);
void mh__insert_free(struct mh__sim *s, struct mh__sim_block *b);
void mh__remove_free(struct mh__sim_block *b);
void mh__try_merge(struct mh__sim *s, struct mh__sim_block *dst, struct mh__sim_block *src);
void mh__free_block(struct mh__sim *s, struct mh__sim_block *b, uint32_t stack);

/* malloc.c: a freed block waits for its stream's event (completes at
 * ready_ns, UINT64_MAX = when marked ready). Returns 0 or MH_ENOMEM. */
int mh__pending_add(struct mh__sim *s, struct mh__sim_block *b, uint64_t ready_ns);

/* release.c */
int mh__release_block(struct mh__sim *s, struct mh__sim_block *b);
int mh__release_available(struct mh__sim *s, struct mh__sim_pool *p, uint64_t size);
int mh__release_cached(struct mh__sim *s);
void mh__garbage_collect(struct mh__sim *s);
void mh__process_events(struct mh__sim *s, int all);

/* expand.c */
struct mh__sim_block *mh__alloc_expandable(struct mh__sim *s, struct mh__sim_pool *p,
                                           uint64_t size);
void mh__unmap_block(struct mh__sim *s, struct mh__sim_block *b);
/* Maps [addr, addr + size) of the pool's reservation holding addr, made
 * at addr when there is none (seeding, seed.c): the mapped block, free, or
 * NULL when the range does not fit the reservation's unmapped space. */
struct mh__sim_block *mh__expandable_seed(struct mh__sim *s, struct mh__sim_pool *p,
                                          uint64_t addr, uint64_t size);
/* Best-fit successor rule for expandable blocks (see expand.c). */
struct mh__sim_block *mh__expandable_best(struct mh__sim_pool *p, struct mh__sim_block *it);

#endif
