/* categories.h - allocation lifetimes and memory categories.
 *
 * Sits after the model in the offline data flow: fed every event right after
 * mh_model_apply(), it keeps one record per allocation (event indices, block
 * size, stack, module metadata, step and phase at allocation and at free) and,
 * once the input ends, gives each record a category from its lifetime and
 * phases:
 *   parameter        allocated before the first step, alive to the end
 *   input            allocated in a step before its forward phase began
 *   activation       allocated in forward, not freed in that forward
 *   gradient         allocated in backward, alive past that backward
 *                    (until the optimizer step, zero_grad or later)
 *   optimizer_state  allocated in an optimizer phase, alive past it
 *   temporary        freed in the step and phase that allocated it
 *   unknown          everything else (no steps or phases, setup tensors
 *                    freed mid-run, ...)
 * "Alive" ends at free_requested: that is when torch stops counting a block
 * as allocated. The collection owns its records; readers query it by event
 * index ("live at event i" = alloc_index <= i < free_index). */
#ifndef MH_MODEL_CATEGORIES_H
#define MH_MODEL_CATEGORIES_H

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
const char *mh_category_name(int category);

#define MH_NEVER UINT64_MAX

struct mh_alloc_rec {
    uint64_t alloc_index, free_index; /* event indices; free_index MH_NEVER if alive at the end */
    uint64_t addr, size, requested;   /* block address, block size, requested bytes */
    int64_t alloc_step, free_step;
    uint32_t stack, str;              /* allocation stack and user metadata */
    int16_t device;
    uint8_t alloc_phase, free_phase;  /* enum mh_phase */
    uint8_t before_forward;           /* allocated in a step before its forward phase */
    uint8_t category;                 /* enum mh_category, set by mh_lifetimes_finish */
};

/* Where each step starts in the event sequence. */
struct mh_step_span {
    int64_t step;
    uint64_t first_index; /* index of the first event of the step */
};

struct mh_lifetimes;

int mh_lifetimes_new(struct mh_lifetimes **out);
void mh_lifetimes_free(struct mh_lifetimes *lt);
/* Observes one event right after mh_model_apply(m, ev, res) returned 0. */
int mh_lifetimes_observe(struct mh_lifetimes *lt, const struct mh_model *m,
                         const struct mh_event *ev, const struct mh_apply_result *res);
/* Classifies every record; call once after the last event. */
void mh_lifetimes_finish(struct mh_lifetimes *lt);

/* Records in allocation order (borrowed; valid until the next observe). */
const struct mh_alloc_rec *mh_lifetimes_records(const struct mh_lifetimes *lt, size_t *n);
const struct mh_step_span *mh_lifetimes_steps(const struct mh_lifetimes *lt, size_t *n);
uint64_t mh_lifetimes_event_count(const struct mh_lifetimes *lt);
/* Step that event `index` belongs to (-1 before the first step). */
int64_t mh_lifetimes_step_of(const struct mh_lifetimes *lt, uint64_t index);

static inline int mh_alloc_rec_live_at(const struct mh_alloc_rec *r, uint64_t index)
{
    return r->alloc_index <= index && index < r->free_index;
}

/* Block bytes (and requested bytes when `requested` is not NULL) of `device`
 * live right after event `index`, by category. */
void mh_lifetimes_live_by_category(const struct mh_lifetimes *lt, int device, uint64_t index,
                                   uint64_t bytes[MH_CAT_COUNT], uint64_t *requested);
/* (`requested`, if not NULL, has MH_CAT_COUNT entries too.) */

#endif
