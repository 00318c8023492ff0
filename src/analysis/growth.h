/* growth.h - the growth report: memory that is allocated in a step and is
 * still live at the end of the steps after it, step after step (a leak
 * across steps: a loss or an activation appended to a list, a cache that
 * never stops filling).
 *
 * A replay-session observer (session.h) groups every allocation by device,
 * stack and module (its user metadata or module scope) and notes each
 * group's live bytes (requested sizes, not the allocator's blocks) at the
 * end of every complete step of its device (steps
 * per device, the tail after the last step left out). A group *grows* when
 * its live bytes at the end of each of the last K complete steps are higher
 * than at the end of the step before. K is half the steps after the first,
 * rounded up, at least 2 and at most 8 (mh__growth_window), so a run needs
 * three complete steps before growth is reported, and steady state is never
 * growth: optimizer state created in the first step, parameters, a cache
 * that filled for a step or two and then stayed. */
#ifndef MH_ANALYSIS_GROWTH_H
#define MH_ANALYSIS_GROWTH_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/model.h"
#include "session.h"

struct mh__growth_entry {
    int device;
    uint32_t stack;          /* allocation stack (reader's id) */
    uint32_t module;         /* string id of the module path or user metadata, 0 if none */
    uint64_t bytes_per_step; /* growth over the last K steps divided by K */
    uint64_t live_bytes;     /* live at the end of the last complete step */
    int64_t first_step;      /* first step of the growth that is still going on */
    uint32_t steps_grown;    /* complete steps at whose end it held more than before */
    uint32_t steps;          /* complete steps of the device */
};

struct mh__growth;
int mh__growth_new(struct mh__growth **out);
void mh__growth_free(struct mh__growth *g);
/* The observer gathering the groups; borrows g until it is freed. */
const struct mh__observer *mh__growth_observer(struct mh__growth *g);

/* K for a device with `steps` complete steps; 0 when there are too few
 * (fewer than 3) to tell growth from set-up. */
uint32_t mh__growth_window(size_t steps);

/* The groups of `device` that grew over the last K steps, largest
 * bytes_per_step first (the caller frees *out; *n may be 0). Returns 0 or
 * MH_ENOMEM. *k gets K (0: too few steps). */
int mh__growth_get(const struct mh__growth *g, int device, struct mh__growth_entry **out, size_t *n,
                   uint32_t *k);

#endif
