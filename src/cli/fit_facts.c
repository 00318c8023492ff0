/* fit_facts.c - what one run of `memhist fit` proves about a card (see
 * fit_search.c for the argument): whether a run went exactly as it would on
 * any card of its kind that holds its peak, whether the program's requests
 * up to its first OOM were its own whatever the device, and from those the
 * verdict on one card at one value. Reads the trial structs only, so the
 * search can be tested on runs it did not make (tests/test_cli_fit_search.c). */
#include "fit.h"

const char *mh__fit_outcome_name(int outcome)
{
    static const char *const names[] = {"ran",    "oom", "failed", "no_step", "host_memory_limit",
                                        "timeout"};
    return outcome >= 0 && outcome <= MH__FIT_TIMEOUT ? names[outcome] : "?";
}

int mh__fit_trial_clean(const struct mh__fit_trial *t)
{
    return t->outcome == MH__FIT_RAN && t->has_stats && t->refused == 0 && t->mem_info == 0 &&
           t->mem_info_late == 0 && t->retries == 0;
}

int mh__fit_trial_program_same(const struct mh__fit_trial *t)
{
    return t->has_stats && t->mem_info == 0 && t->early_retries == 0;
}

uint64_t mh__fit_trial_used(const struct mh__fit_trial *t, uint64_t context)
{
    return t->has_stats && t->peak_used ? t->peak_used : t->peak_reserved + context;
}

int mh__fit_trial_informative(const struct mh__fit_trial *t)
{
    return t->done && (t->outcome == MH__FIT_RAN || t->outcome == MH__FIT_OOM);
}

struct mh__fit_fact mh__fit_fact(const struct mh__fit *f, int card, int64_t value)
{
    const struct mh__fit_card *c = &f->o->cards[card];
    struct mh__fit_fact fact = {MH__FIT_UNKNOWN, -1};
    for (int i = 0; i < f->ntrials; i++) {
        const struct mh__fit_trial *t = &f->trials[i];
        if (!mh__fit_trial_informative(t) || t->kind != c->kind || t->value != value)
            continue;
        if (t->capacity == c->trial_capacity)
            return (struct mh__fit_fact){t->outcome == MH__FIT_RAN ? MH__FIT_FITS : MH__FIT_FAILS, i};
        if (f->o->bisect || fact.verdict != MH__FIT_UNKNOWN)
            continue;
        if (mh__fit_trial_clean(t) && mh__fit_trial_used(t, f->o->context) <= c->trial_capacity)
            fact = (struct mh__fit_fact){MH__FIT_FITS, i};
        else if (mh__fit_trial_program_same(t) && t->peak_requested > c->limit)
            fact = (struct mh__fit_fact){MH__FIT_FAILS, i};
    }
    return fact;
}
