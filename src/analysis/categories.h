/* categories.h - allocation lifetimes and memory categories.
 *
 * Sits after the model in the offline data flow: fed every event right after
 * mh_model_apply(), it follows a record per allocation (event indices, block
 * size, stack, module metadata, step and phase at allocation and at free)
 * while the allocation lives (lifetimes.c), and gives each record a category
 * from its lifetime and phases (categories.c):
 *   parameter        allocated before the first step, alive to the end
 *   input            allocated in a step before its forward phase began
 *   activation       allocated in forward, not freed in that forward and
 *                    freed before the end of the next step (a block a
 *                    forward made that outlives the next step, such as a DDP
 *                    gradient bucket rebuilt in forward, is unknown)
 *   gradient         allocated in backward, alive past that backward
 *                    (until the optimizer step, zero_grad or later)
 *   optimizer_state  allocated in an optimizer phase, alive past it
 *   temporary        freed in the step and phase that allocated it
 *   unknown          everything else (no steps or phases, setup tensors
 *                    freed mid-run, ...)
 * Where torch said what a tensor is (MH_EV_TAG from the module and optimizer
 * hooks), that wins: parameters and buffers, gradients and optimizer state
 * are then exactly the tagged tensors, and untagged allocations are never
 * parameter or optimizer_state by lifetime (long-lived setup allocations
 * such as library workspaces stay unknown); where gradients were tagged, an
 * untagged block from the backward of a step that ended and never freed is
 * unknown too (a library workspace made on the autograd thread, as
 * cuBLAS's is).
 * An allocation without user metadata takes the module scope active on its
 * thread as `str` (mh_model_scope), so layers name modules.
 * "Alive" ends at free_requested: that is when torch stops counting a block
 * as allocated ("live at event i" = alloc_index <= i < free_index). */
#ifndef MH_ANALYSIS_CATEGORIES_H
#define MH_ANALYSIS_CATEGORIES_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/model.h"

enum mh__category {
    MH__CAT_PARAMETER,
    MH__CAT_GRADIENT,
    MH__CAT_OPTIMIZER_STATE,
    MH__CAT_ACTIVATION,
    MH__CAT_TEMPORARY,
    MH__CAT_INPUT,
    MH__CAT_UNKNOWN,
    MH__CAT_COUNT
};

/* "parameter", "gradient", "optimizer_state", "activation", "temporary",
 * "input", "unknown". */
const char *mh__category_name(int category);

#define MH__NEVER UINT64_MAX

struct mh__alloc_rec {
    uint64_t alloc_index, free_index; /* event indices; free_index MH__NEVER if alive at the end */
    uint64_t addr, size, requested;   /* block address, block size, requested bytes */
    int64_t alloc_step, free_step;
    uint32_t stack, str;              /* allocation stack and user metadata */
    uint32_t tag_str;                 /* the name MH_EV_TAG gave it (a parameter's
                                       * "transformer.h.0.mlp.c_fc.weight"), 0 = none */
    uint32_t out_str;                 /* the last module that returned it (MH_ROLE_OUTPUT:
                                       * "transformer.h.0"), 0 = none */
    int16_t device;
    uint8_t alloc_phase, free_phase;  /* enum mh_phase */
    uint8_t before_forward;           /* allocated in a step before its forward phase */
    uint8_t role;                     /* enum mh_tensor_role from MH_EV_TAG, 0 = none */
    uint8_t category;                 /* enum mh__category, once classified */
    uint8_t freed_elsewhere;          /* freed by another thread than the one that allocated it */
    uint32_t thread;                  /* the allocating thread */
    uint32_t user[2];                 /* the values a consumer of the lifetimes gives it
                                       * when it begins (mh__life_change), 0 before */
};

/* Where each step starts in the event sequence. */
struct mh__step_span {
    int64_t step;
    uint64_t first_index; /* index of the first event of the step */
};

/* The highest point of the allocated curve in one span of events. */
struct mh__step_peak {
    int64_t step;
    uint64_t index; /* event index of the span's allocated peak */
    uint64_t bytes;
};

struct mh__lifetimes;

/* ---- the lifetimes of one pass ------------------------------------------
 * A lifetimes collection follows a pass of the model over a recording and
 * holds the allocations alive at the current event, never one record per
 * allocation of the run: its memory follows the live blocks, the steps and
 * the distinct strings, not the length of the run. What it keeps of the
 * run: the step and pass spans, the facts the categories depend on
 * (whether the file carries tensor roles, its first step, ...), the
 * allocated curve of each device with its peak and each pass's peak, and,
 * for each event index asked for before the pass (mh__lifetimes_keep_at),
 * the records of the allocations live right after it, which are then the
 * records mh__lifetimes_records gives once the pass is finished.
 *
 * A category depends on the whole run (an allocation alive to the end is
 * a parameter), so records are classified when the pass is finished. A
 * collection made for a later pass over the same file
 * (mh__lifetimes_new_after) knows the facts of the first one: it
 * classifies an allocation as soon as its life ends (the record a change
 * reports, mh__life_change), with the category the first pass's finish
 * would give it. */

/* What one event did to the allocations (mh__lifetimes_observe). The
 * records are borrowed until the next observe; the consumer may set the
 * `user` values of the one that began, which the record then carries to
 * its end. */
struct mh__life_change {
    struct mh__alloc_rec *began;       /* the allocation the event made, or NULL */
    const struct mh__alloc_rec *ended; /* the allocation whose life it ended, or NULL */
};

/* The model's block word (MH_BLOCK_WORDS) left to a consumer of the
 * lifetimes outside src/analysis (the events table of src/export: what a
 * block whose life ended until its free completes); category_rule.h
 * gives the others to the observers within. */
#define MH__WORD_CONSUMER 3

int mh__lifetimes_new(struct mh__lifetimes **out);
/* A collection for another pass over the file `first` observed (which must
 * be finished): records are classified as their lives end. */
int mh__lifetimes_new_after(const struct mh__lifetimes *first, struct mh__lifetimes **out);
void mh__lifetimes_free(struct mh__lifetimes *lt);
/* Keeps the records of the allocations live right after event `index`;
 * call before the pass. MH_ENOMEM. */
int mh__lifetimes_keep_at(struct mh__lifetimes *lt, uint64_t index);
/* Keeps the records live at each device's allocated peak (the curve's,
 * mh__lifetimes_curve), which no pass knows before it ends: the records
 * live at the highest point so far whose lives end are copied, and
 * forgotten when the curve rises higher. Call before the pass. */
void mh__lifetimes_keep_peaks(struct mh__lifetimes *lt);
/* Whether the records kept at the peaks are classified exactly as a later
 * pass would (not when the first step was found to be set-up during the
 * pass: mh__analysis_moments then). */
int mh__lifetimes_peaks_kept(const struct mh__lifetimes *lt);
/* Whether the kept records are those live right after event `index`,
 * classified as a later pass would. */
int mh__lifetimes_holds(const struct mh__lifetimes *lt, uint64_t index);
/* Observes one event right after mh_model_apply(m, ev, res) returned 0;
 * `change` (may be NULL) gets what it did to the allocations. */
int mh__lifetimes_observe(struct mh__lifetimes *lt, const struct mh_model *m,
                          const struct mh_event *ev, const struct mh_apply_result *res,
                          struct mh__life_change *change);
/* Classifies the kept records and those still alive; call once after the
 * last event. `alive` (may be NULL) is called with each record still alive
 * at the end, classified; its first non-zero return is returned. */
int mh__lifetimes_finish(struct mh__lifetimes *lt,
                         int (*alive)(void *user, const struct mh__alloc_rec *r), void *user);

/* The kept records in allocation order (borrowed; valid after finish). */
const struct mh__alloc_rec *mh__lifetimes_records(const struct mh__lifetimes *lt, size_t *n);
const struct mh__step_span *mh__lifetimes_steps(const struct mh__lifetimes *lt, size_t *n);
/* The steps cut again at each forward phase that follows a backward phase
 * in the same step: one span per forward and backward pass (a micro-batch
 * under gradient accumulation), each naming its step. */
const struct mh__step_span *mh__lifetimes_passes(const struct mh__lifetimes *lt, size_t *n);
uint64_t mh__lifetimes_event_count(const struct mh__lifetimes *lt);
/* Whether the events came from more than one thread (a live recording of a
 * backward pass: autograd's device threads; an imported snapshot has one),
 * so that freed_elsewhere tells who freed a block. */
int mh__lifetimes_threaded(const struct mh__lifetimes *lt);
/* Step that event `index` belongs to (-1 before the first step). */
int64_t mh__lifetimes_step_of(const struct mh__lifetimes *lt, uint64_t index);

/* The allocated curve of one device: the block bytes of its allocations
 * alive after each event (equal to the model's allocated memory). */
struct mh__life_curve {
    uint64_t peak, peak_index; /* the first event at the highest value */
    size_t peak_pass;          /* the pass span it falls in */
    uint64_t max_requested;    /* the largest request of the device */
};
/* The curve of `device` (zeros if it allocated nothing). */
void mh__lifetimes_curve(const struct mh__lifetimes *lt, int device, struct mh__life_curve *out);
/* The highest value of each pass span of `device`'s curve and the first
 * event at it (bytes 0 and the span's first event if it never rose above
 * 0), one per span of mh__lifetimes_passes; NULL if the device allocated
 * nothing. Borrowed. */
const struct mh__step_peak *mh__lifetimes_pass_peaks(const struct mh__lifetimes *lt, int device);

/* The role torch gave most allocations of site (str, stack), as
 * site_roles.h counts them over the pass; MH_ROLE_NONE where none or few
 * were tagged. */
int mh__lifetimes_site_role(const struct mh__lifetimes *lt, uint32_t str, uint32_t stack);

/* The distinct user metadata and scope strings of the allocations, which
 * name layers (layer_names.h); borrowed, in no particular order. */
const uint32_t *mh__lifetimes_strings(const struct mh__lifetimes *lt, size_t *n);

static inline int mh__alloc_rec_live_at(const struct mh__alloc_rec *r, uint64_t index)
{
    return r->alloc_index <= index && index < r->free_index;
}

/* Block bytes (and requested bytes when `requested` is not NULL) of `device`
 * live right after event `index`, by category, from the kept records: the
 * index must be one kept with mh__lifetimes_keep_at (MH_EINVAL otherwise). */
int mh__lifetimes_live_by_category(const struct mh__lifetimes *lt, int device, uint64_t index,
                                   uint64_t bytes[MH__CAT_COUNT], uint64_t *requested);
/* (`requested`, if not NULL, has MH__CAT_COUNT entries too.) */

/* ---- streaming classification with bounded memory ----------------------
 * mh__livecat gives every allocation the category mh__lifetimes would, but
 * keeps only the allocations not yet completely freed (until their
 * FREE_COMPLETED), so its memory follows the live blocks rather than the
 * length of the run. An allocation's category is reported when its life
 * ends (free_requested, or a free_completed that drops the allocated bytes,
 * as in mh__lifetimes) and, for those still alive at the end, by
 * mh__livecat_finish. The result equals mh__lifetimes_finish's whenever step
 * numbers never decrease (the first step is then known before any
 * allocation that depends on it ends). Each allocation carries a tag of the
 * caller's (an event index, a trace position, ...). */
struct mh__livecat;

struct mh__livecat_end {
    uint64_t tag;      /* given when the allocation was observed */
    uint64_t size;     /* block bytes (the model's allocated delta) */
    int16_t device;
    uint8_t category;  /* enum mh__category */
    uint8_t ended;     /* 1 on the event that ends its life, 0 on a later free_completed */
};

int mh__livecat_new(struct mh__livecat **out);
void mh__livecat_free(struct mh__livecat *lc);
/* Observes one event right after mh_model_apply(m, ev, res) returned 0. An
 * ALLOC starts an allocation tagged `tag`; a free event of a tracked
 * allocation fills *end and returns 1. Returns 0 otherwise, MH_ENOMEM. */
int mh__livecat_observe(struct mh__livecat *lc, const struct mh_model *m, const struct mh_event *ev,
                        const struct mh_apply_result *res, uint64_t tag,
                        struct mh__livecat_end *end);
/* After the last event: calls fn once per allocation whose life has not
 * ended, with its final category. Stops at fn's first non-zero return and
 * returns it; 0 otherwise. */
int mh__livecat_finish(struct mh__livecat *lc,
                       int (*fn)(void *user, const struct mh__livecat_end *end), void *user);

#endif
