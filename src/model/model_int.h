/* model_int.h - internal structures of the replay model (src/model).
 *
 * Ownership: a model owns its devices; a device owns its segments (an AVL
 * tree ordered by address), the blocks that tile them (an address-ordered
 * doubly linked list per segment), an address -> block hash map, a max-heap
 * of its inactive blocks (for "largest free" in O(1)), its driver-level
 * allocations and its per-step statistics. Blocks and segments come from
 * slab free lists owned by the model, so memory is bounded by the largest
 * live state, not by the number of events. */
#ifndef MH_MODEL_MODEL_INT_H
#define MH_MODEL_MODEL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/model.h"
#include "addrmap.h"

#define MH__MAX_DEVICES 256

/* ---- sizing rules (rules.c) ----------------------------------------------- */
/* Divisions configured for the size class of `size` (0 or 1 = none). */
unsigned mh__conf_divisions(const struct mh_alloc_conf *conf, uint64_t size);
/* torch's roundup_power2_next_division: 1200 with 4 divisions -> 1280. */
uint64_t mh__roundup_power2_division(uint64_t size, unsigned divisions);

/* ---- blocks and segments -------------------------------------------------- */
struct mh__segment;

struct mh__block {
    uint64_t addr, size;
    uint64_t requested;
    struct mh__block *prev, *next; /* address order within the segment */
    struct mh__segment *seg;
    uint64_t alloc_time_ns;
    int64_t alloc_step;
    uint64_t stream;
    uint32_t stack, str;
    uint32_t heap_idx; /* position in the device's free heap while inactive */
    uint8_t state;     /* enum mh_block_state */
    uint8_t phase;
    uint32_t words[MH_BLOCK_WORDS]; /* the observers', zeroed at allocation */
};

struct mh__segment {
    uint64_t addr, size;
    uint64_t stream;
    uint32_t pool[2];
    uint32_t stack;
    uint8_t small_pool, expandable;
    uint32_t nblocks;
    uint64_t allocated, active, requested;
    struct mh__block *first, *last;
    struct mh__segment *left, *right; /* AVL links, keyed by addr */
    int height;
};

/* ---- segment tree (segtree.c) ---------------------------------------------- */
void mh__segtree_insert(struct mh__segment **root, struct mh__segment *s);
void mh__segtree_remove(struct mh__segment **root, struct mh__segment *s);
/* Segment with the largest addr <= key / smallest addr >= key, or NULL. */
struct mh__segment *mh__segtree_floor(struct mh__segment *root, uint64_t key);
struct mh__segment *mh__segtree_ceil(struct mh__segment *root, uint64_t key);
/* In-order walk; stops at and returns the first non-zero callback result. */
int mh__segtree_walk(struct mh__segment *root, int (*fn)(void *, struct mh__segment *), void *user);

/* ---- free heap (heap.c): inactive blocks, max size on top ------------------ */
struct mh__heap {
    struct mh__block **v;
    size_t n, cap;
};
int mh__fheap_reserve(struct mh__heap *h, size_t n); /* room for n blocks */
int mh__fheap_push(struct mh__heap *h, struct mh__block *b);
void mh__fheap_remove(struct mh__heap *h, struct mh__block *b);
void mh__fheap_update(struct mh__heap *h, struct mh__block *b); /* after a size change */
uint64_t mh__fheap_max(const struct mh__heap *h);

/* ---- per device ------------------------------------------------------------- */
struct mh__step_acc {
    int open;
    struct mh_step_stats s;
};

struct mh__device {
    int index;
    struct mh_mem_stats stats;
    struct mh__segment *root;
    struct mh__hmap blocks;  /* block address -> struct mh__block */
    struct mh__hmap drivers; /* driver allocation address -> struct mh__driver_alloc */
    struct mh__heap free_heap;
    struct mh_peak peak_allocated, peak_reserved;
    struct mh__step_acc acc;
    struct mh_step_stats *steps;
    size_t nsteps, capsteps;
    struct mh_step_stats setup; /* the set-up before a STEP_BEGIN, when has_setup */
    int has_setup;
    struct mh_step_stats tail; /* after the last complete step, when has_tail */
    int has_tail;
    int own_steps;    /* steps come from markers naming this device (steps.c) */
    int64_t own_step; /* with own_steps: the step the device's next event belongs to */
    int release_burst; /* the last allocator event released cached memory */
};

/* Slab free list for fixed-size objects (blocks and segments). */
struct mh__slab {
    size_t objsize;
    void *free_list;
    void **chunks;
    size_t nchunks, capchunks;
};
void *mh__mslab_get(struct mh__slab *s);
void mh__mslab_put(struct mh__slab *s, void *p);
void mh__mslab_destroy(struct mh__slab *s);

enum mh__step_state {
    MH__STEPS_SETUP = 0, /* before any step marker: step -1 */
    MH__STEPS_OPEN = 1,  /* a step is open */
    MH__STEPS_PENDING = 2 /* after STEP_END(N): N+1 opens with the next timed event */
};

struct mh_model {
    struct mh_alloc_conf conf;
    int saw_expandable; /* an expandable segment was seen: the run had them on */
    struct mh__device *dev[MH__MAX_DEVICES];
    int devlist[MH__MAX_DEVICES];
    size_t ndev;
    struct mh__slab block_slab, seg_slab;
    int step_state;
    int any_step;          /* a step was opened or closed */
    int saw_end;           /* a STEP_END was seen: what is open at the end is a tail */
    int step_closed;       /* a listed step was closed */
    int64_t cur_step;      /* step the next event belongs to */
    uint64_t period_begin_ns;
    uint64_t last_time_ns;
    int phase;
    struct mh_oom_info *ooms;
    size_t nooms, capooms;
    uint64_t anomalies[MH_ANOM_COUNT];
    uint64_t nevents;
    struct mh__scopes *scopes; /* scopes.c, created at the first scope event */
};

/* ---- scopes.c: module scopes per thread ---- */
struct mh__scopes;
int mh__scopes_apply(struct mh_model *m, const struct mh_event *ev);
void mh__scopes_free(struct mh__scopes *s);

/* ---- segments.c: structural operations that keep blocks tiling segments and
 * the device counters (allocated, active, requested, reserved, inactive_split,
 * segments, the free heap and the block map) exact. ----------------------- */
struct mh__segment *mh__seg_containing(const struct mh__device *d, uint64_t addr);
int mh__seg_create(struct mh_model *m, struct mh__device *d, const struct mh_event *ev,
                   int small_pool, int expandable, struct mh__segment **out);
void mh__seg_destroy(struct mh_model *m, struct mh__device *d, struct mh__segment *s);
/* A new inactive block [addr, addr+size) of s, in the map and the heap but
 * not yet linked into the segment's list; NULL when memory runs out. */
struct mh__block *mh__mblock_new(struct mh_model *m, struct mh__device *d, struct mh__segment *s,
                                uint64_t addr, uint64_t size);
/* Unlinked block out of the map and heap, back to the slab. */
void mh__mblock_drop(struct mh_model *m, struct mh__device *d, struct mh__block *b);
/* Splits inactive block b at `at` (strictly inside); returns the tail block. */
struct mh__block *mh__mblock_split(struct mh_model *m, struct mh__device *d, struct mh__block *b,
                                  uint64_t at);
/* Merges inactive b with inactive neighbours; returns the surviving block. */
struct mh__block *mh__mblock_merge(struct mh_model *m, struct mh__device *d, struct mh__block *b);
void mh__mblock_set_state(struct mh__device *d, struct mh__block *b, int state);
/* Stats bracket for changes of a segment's inactive_split contribution. */
void mh__seg_enter(struct mh__device *d, struct mh__segment *s);
void mh__seg_leave(struct mh__device *d, struct mh__segment *s);

/* ---- expand.c: expandable segments (SEGMENT_MAP / SEGMENT_UNMAP) ---------- */
int mh__apply_map(struct mh_model *m, struct mh__device *d, const struct mh_event *ev,
                  struct mh_apply_result *res);
int mh__apply_unmap(struct mh_model *m, struct mh__device *d, const struct mh_event *ev,
                    struct mh_apply_result *res);

/* ---- apply.c: caching-allocator events --------------------------------------- */
int mh__apply_allocator(struct mh_model *m, struct mh__device *d, const struct mh_event *ev,
                        struct mh_apply_result *res);

/* ---- driver.c: driver-level allocations (CUPTI) ----------------------------- */
int mh__apply_driver(struct mh_model *m, struct mh__device *d, const struct mh_event *ev);
/* Whether a driver event is device memory the model tracks (host memory is
 * not, and belongs to no device). */
int mh__driver_tracked(const struct mh_event *ev);
/* A caching-allocator segment now covers [addr, addr+size): driver allocations
 * starting there stop counting as outside. */
void mh__driver_claim(struct mh__device *d, uint64_t addr, uint64_t size);
void mh__driver_destroy(struct mh__device *d);

/* ---- steps.c: steps, phases, peaks ------------------------------------------ */
void mh__steps_event(struct mh_model *m, const struct mh_event *ev); /* before any handling */
int mh__steps_marker(struct mh_model *m, const struct mh_event *ev); /* STEP_* and PHASE */
/* STEP_END naming device d (ev->device >= 0). */
int mh__steps_device_end(struct mh_model *m, struct mh__device *d, const struct mh_event *ev);
/* After an allocator event on d changed its state (event index `idx`). */
void mh__steps_observe(struct mh_model *m, struct mh__device *d, const struct mh_event *ev,
                       uint64_t idx);
void mh__steps_device_init(struct mh_model *m, struct mh__device *d);
int mh__steps_finish(struct mh_model *m);
/* The step an event on d belongs to (its own markers', or the model's). */
int64_t mh__device_step(const struct mh_model *m, const struct mh__device *d);
void mh__steps_retry_check(struct mh__device *d, unsigned kind);

void mh__model_anomaly(struct mh_model *m, struct mh_apply_result *res, int anomaly);
int mh__oom_record(struct mh_model *m, struct mh__device *d, const struct mh_event *ev);

#endif
