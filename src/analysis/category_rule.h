/* category_rule.h - the rule that gives an allocation its category (see
 * categories.h), shared by the lifetimes of a pass (lifetimes.c) and the
 * streaming classification (mh__livecat, categories.c), so both give every
 * allocation the same answer. Internal to src/analysis. */
#ifndef MH_ANALYSIS_CATEGORY_RULE_H
#define MH_ANALYSIS_CATEGORY_RULE_H

#include "categories.h"

/* What a category depends on beyond the allocation's own record. */
struct mh__cat_facts {
    int64_t first_step;    /* the smallest step >= 0 of the run, INT64_MAX if none */
    int tagged;            /* the file carries tensor roles (MH_EV_TAG) */
    int grads_tagged;      /* ... and gradients among them (the optimizer hooks ran) */
    uint64_t ended_before; /* index of the last STEP_END + 1, 0 = none */
};

/* The newest step each device reached, from the steps its blocks were
 * allocated and freed in (devices 0 .. MH__NEWEST_DEVICES - 1). */
#define MH__NEWEST_DEVICES 256

void mh__newest_note(int64_t *newest, int device, int64_t step);
int64_t mh__newest_on(const int64_t *newest, int device);

/* The category of `r` given the run's facts and the newest step of its
 * device. */
int mh__category_of(const struct mh__alloc_rec *r, const struct mh__cat_facts *f, int64_t newest);

/* A record of the allocation `ev` (event number `index`) as the model
 * applied it: its block, stack, scope, step and phase. */
void mh__alloc_rec_fill(struct mh__alloc_rec *r, const struct mh_model *m, const struct mh_event *ev,
                        const struct mh_apply_result *res, uint64_t index, int forward_seen);

/* Which of the model's block words (MH_BLOCK_WORDS) each observer of a
 * pass keeps its handle of an allocation in: one pass has at most one
 * lifetimes collection, one growth observer and one streaming classifier. */
#define MH__WORD_LIFETIMES 0
#define MH__WORD_GROWTH 1
#define MH__WORD_LIVECAT 2

#endif
