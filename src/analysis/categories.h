/* categories.h - allocation lifetimes and memory categories.
 *
 * Sits after the model in the offline data flow: fed every event right after
 * mh_model_apply(), it keeps one record per allocation (event indices, block
 * size, stack, module metadata, step and phase at allocation and at free) and,
 * once the input ends, gives each record a category from its lifetime and
 * phases:
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
 * as allocated. The collection owns its records; readers query it by event
 * index ("live at event i" = alloc_index <= i < free_index). */
#ifndef MH_ANALYSIS_CATEGORIES_H
#define MH_ANALYSIS_CATEGORIES_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/model.h"

enum mh_category {
    MH_CAT_PARAMETER,
    MH_CAT_GRADIENT,
    MH_CAT_OPTIMIZER_STATE,
    MH_CAT_ACTIVATION,
    MH_CAT_TEMPORARY,
    MH_CAT_INPUT,
    MH_CAT_UNKNOWN,
    MH_CAT_COUNT
};

/* "parameter", "gradient", "optimizer_state", "activation", "temporary",
 * "input", "unknown". */
const char *mh__category_name(int category);

#define MH_NEVER UINT64_MAX

struct mh_alloc_rec {
    uint64_t alloc_index, free_index; /* event indices; free_index MH_NEVER if alive at the end */
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
    uint8_t category;                 /* enum mh_category, set by mh__lifetimes_finish */
    uint8_t freed_elsewhere;          /* freed by another thread than the one that allocated it */
    uint32_t thread;                  /* the allocating thread */
};

/* Where each step starts in the event sequence. */
struct mh_step_span {
    int64_t step;
    uint64_t first_index; /* index of the first event of the step */
};

/* A module's forward or backward scope opening (MH_EV_SCOPE_ENTER): where a
 * call of that module begins. */
struct mh_scope_mark {
    uint64_t index; /* event index */
    uint32_t str;   /* the module path */
    uint8_t phase;  /* MH_PHASE_FORWARD or MH_PHASE_BACKWARD */
};

struct mh_lifetimes;

int mh__lifetimes_new(struct mh_lifetimes **out);
void mh__lifetimes_free(struct mh_lifetimes *lt);
/* Observes one event right after mh_model_apply(m, ev, res) returned 0. */
int mh__lifetimes_observe(struct mh_lifetimes *lt, const struct mh_model *m,
                          const struct mh_event *ev, const struct mh_apply_result *res);
/* Classifies every record; call once after the last event. */
void mh__lifetimes_finish(struct mh_lifetimes *lt);

/* Records in allocation order (borrowed; valid until the next observe). */
const struct mh_alloc_rec *mh__lifetimes_records(const struct mh_lifetimes *lt, size_t *n);
const struct mh_step_span *mh__lifetimes_steps(const struct mh_lifetimes *lt, size_t *n);
/* The steps cut again at each forward phase that follows a backward phase
 * in the same step: one span per forward and backward pass (a micro-batch
 * under gradient accumulation), each naming its step. */
const struct mh_step_span *mh__lifetimes_passes(const struct mh_lifetimes *lt, size_t *n);
uint64_t mh__lifetimes_event_count(const struct mh_lifetimes *lt);
/* The forward and backward scope openings, in event order (borrowed). */
const struct mh_scope_mark *mh__lifetimes_scope_marks(const struct mh_lifetimes *lt, size_t *n);
/* Whether the events came from more than one thread (a live recording of a
 * backward pass: autograd's device threads; an imported snapshot has one),
 * so that freed_elsewhere tells who freed a block. */
int mh__lifetimes_threaded(const struct mh_lifetimes *lt);
/* Step that event `index` belongs to (-1 before the first step). */
int64_t mh__lifetimes_step_of(const struct mh_lifetimes *lt, uint64_t index);

static inline int mh_alloc_rec_live_at(const struct mh_alloc_rec *r, uint64_t index)
{
    return r->alloc_index <= index && index < r->free_index;
}

/* Block bytes (and requested bytes when `requested` is not NULL) of `device`
 * live right after event `index`, by category. */
void mh__lifetimes_live_by_category(const struct mh_lifetimes *lt, int device, uint64_t index,
                                    uint64_t bytes[MH_CAT_COUNT], uint64_t *requested);
/* (`requested`, if not NULL, has MH_CAT_COUNT entries too.) */

/* ---- streaming classification with bounded memory ----------------------
 * mh_livecat gives every allocation the category mh_lifetimes would, but
 * keeps only the allocations not yet completely freed (until their
 * FREE_COMPLETED), so its memory follows the live blocks rather than the
 * length of the run. An allocation's category is reported when its life
 * ends (free_requested, or a free_completed that drops the allocated bytes,
 * as in mh_lifetimes) and, for those still alive at the end, by
 * mh__livecat_finish. The result equals mh__lifetimes_finish's whenever step
 * numbers never decrease (the first step is then known before any
 * allocation that depends on it ends). Each allocation carries a tag of the
 * caller's (an event index, a trace position, ...). */
struct mh_livecat;

struct mh_livecat_end {
    uint64_t tag;      /* given when the allocation was observed */
    uint64_t size;     /* block bytes (the model's allocated delta) */
    int16_t device;
    uint8_t category;  /* enum mh_category */
    uint8_t ended;     /* 1 on the event that ends its life, 0 on a later free_completed */
};

int mh__livecat_new(struct mh_livecat **out);
void mh__livecat_free(struct mh_livecat *lc);
/* Observes one event right after mh_model_apply(m, ev, res) returned 0. An
 * ALLOC starts an allocation tagged `tag`; a free event of a tracked
 * allocation fills *end and returns 1. Returns 0 otherwise, MH_ENOMEM. */
int mh__livecat_observe(struct mh_livecat *lc, const struct mh_model *m, const struct mh_event *ev,
                        const struct mh_apply_result *res, uint64_t tag,
                        struct mh_livecat_end *end);
/* After the last event: calls fn once per allocation whose life has not
 * ended, with its final category. Stops at fn's first non-zero return and
 * returns it; 0 otherwise. */
int mh__livecat_finish(struct mh_livecat *lc,
                       int (*fn)(void *user, const struct mh_livecat_end *end), void *user);

#endif
