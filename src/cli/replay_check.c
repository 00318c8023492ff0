/* replay_check.c - the words `memhist oom` and `memhist whatif` use for how
 * far a what-if replay can be trusted: the run replayed under its own
 * settings (mh__whatif_baseline) either reproduces at least
 * MH__WHATIF_CHECKED_MATCH percent of its allocator events, and what-if
 * figures are "checked by replay" (mh__whatif_checked), or they are
 * estimates; a trace that starts mid-run says what state the replay began
 * from. */
#include <inttypes.h>
#include <stdio.h>

#include "printers.h"

const char *mh__replay_check_text(const struct mh__whatif_outcome *base, char *buf, size_t len)
{
    if (!base)
        snprintf(buf, len,
                 "estimates, not checks: the run could not be replayed under its own "
                 "settings");
    else if (!base->events)
        snprintf(buf, len, "estimates, not checks: the trace has no allocator events to replay");
    else
        snprintf(buf, len,
                 "%s: the run's own settings reproduce %.1f %% of its %" PRIu64
                 " allocator events (checked from %.0f %%)",
                 mh__whatif_checked(base) ? "checked by replay" : "estimates, not checks",
                 base->match, base->events, MH__WHATIF_CHECKED_MATCH);
    return buf;
}

const char *mh__replay_seed_text(const struct mh__whatif_outcome *base, char *buf, size_t len)
{
    int n = snprintf(buf, len,
                     "the trace starts mid-run: replayed from the state at its start (%" PRIu64
                     " segment%s, %" PRIu64 " block%s live)",
                     base->seeded_segments, base->seeded_segments == 1 ? "" : "s",
                     base->seeded_blocks, base->seeded_blocks == 1 ? "" : "s");
    if (base->seeded_unknown && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n,
                 "; partly unknown: %" PRIu64 " of those blocks were freed during the trace, "
                 "their sizes estimated from their requests",
                 base->seeded_unknown);
    return buf;
}
