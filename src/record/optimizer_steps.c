/* optimizer_steps.c - which optimizer steps end a training step
 * (memhist/optsteps.h): per device slot, the key optimizer's steps do;
 * another's is remembered, and its second step before the key's next one
 * makes it the key. */
#include <string.h>

#include "memhist/optsteps.h"

static int seen_before(struct mh_opt_slot *s, uint64_t optimizer)
{
    for (unsigned i = 0; i < s->nseen; i++)
        if (s->seen[i] == optimizer)
            return 1;
    return 0;
}

/* Whether `optimizer`'s step ends the slot's training step. */
static int slot_ends(struct mh_opt_slot *s, uint64_t optimizer)
{
    if (!optimizer || !s->key || s->key == optimizer || seen_before(s, optimizer) ||
        s->nseen == MH_OPT_SEEN) {
        if (optimizer)
            s->key = optimizer;
        s->nseen = 0;
        return 1;
    }
    s->seen[s->nseen++] = optimizer;
    return 0;
}

int mh_opt_steps_end(struct mh_opt_steps *st, uint64_t optimizer, uint64_t *devices)
{
    if (!*devices)
        return slot_ends(&st->slot[MH_OPT_DEVICES_UNKNOWN], optimizer);
    uint64_t ends = 0;
    for (int d = 0; d < 64; d++)
        if ((*devices >> d & 1) && slot_ends(&st->slot[d], optimizer))
            ends |= (uint64_t)1 << d;
    *devices = ends;
    return ends != 0;
}

void mh_opt_steps_forget(struct mh_opt_steps *st, uint64_t optimizer)
{
    for (int d = 0; d <= MH_OPT_DEVICES_UNKNOWN; d++) {
        struct mh_opt_slot *s = &st->slot[d];
        if (s->key == optimizer) {
            s->key = 0;
            s->nseen = 0;
        }
        for (unsigned i = 0; i < s->nseen; i++)
            if (s->seen[i] == optimizer)
                s->seen[i--] = s->seen[--s->nseen];
    }
}

void mh_opt_steps_reset(struct mh_opt_steps *st)
{
    memset(st, 0, sizeof *st);
}
