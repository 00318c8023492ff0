/* snapshot_fit.c - the default window of snapshot export: when the whole
 * recording would make a snapshot larger than the memory_viz page opens,
 * the part of it around the moment worth looking at, as large as fits.
 *
 * The moment is the run's first OOM (on whichever device it happened), or,
 * without one, the allocated peak of the device whose peak is highest (the
 * device memory_viz shows first is the one with the longest trace, usually
 * that one). The window is made of whole steps: the moment's step, then one
 * step earlier, one later, and so on, each side stopping at the first step
 * that would pass the limits, from the costs snapshot_estimate.c summed per
 * step in the first pass. Where there are no steps or the moment's step
 * alone passes them, it is a time window around the moment, from the
 * samples of the same pass. Everything the file writes once whatever the
 * window (stacks, frames, segments and blocks) is counted in full. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "snapshot_int.h"

#define NOTE_BYTES 40u /* as snapshot_estimate.c */

struct budget {
    uint64_t max_bytes, max_entries;
    uint64_t fixed; /* bytes written whatever the window */
};

static int fits(const struct budget *b, uint64_t entries, uint64_t bytes)
{
    return entries <= b->max_entries && b->fixed + bytes <= b->max_bytes;
}

static size_t nearest_step(const struct mh__snapshot *s, int64_t step)
{
    size_t best = 0;
    for (size_t i = 0; i < s->nsteps; i++)
        if (s->steps[i].step <= step)
            best = i;
    return best;
}

/* Whole steps around the moment's; 0, or MH_ENOTFOUND when its step alone
 * passes the limits. */
static int fit_steps(const struct mh__snapshot *s, const struct budget *b, int64_t step,
                     struct mh__snapshot_fit *out)
{
    size_t lo = nearest_step(s, step), hi = lo;
    const struct mh__step_cost *c = s->steps;
    uint64_t entries = c[lo].entries, bytes = c[lo].bytes + 2 * NOTE_BYTES;
    if (!fits(b, entries, bytes))
        return MH_ENOTFOUND;
    int earlier = 1, later = 1;
    for (int turn = 0; earlier || later; turn ^= 1) {
        int side = turn ? later : earlier;
        size_t next = turn ? hi + 1 : lo - 1;
        if (!side)
            continue;
        if ((turn ? hi + 1 >= s->nsteps : lo == 0) ||
            !fits(b, entries + c[next].entries, bytes + c[next].bytes + 2 * NOTE_BYTES)) {
            *(turn ? &later : &earlier) = 0;
            continue;
        }
        entries += c[next].entries;
        bytes += c[next].bytes + 2 * NOTE_BYTES;
        *(turn ? &hi : &lo) = next;
    }
    out->kind = MH__SNAPSHOT_FIT_STEPS;
    out->step_lo = lo == 0 && c[0].step < 0 ? INT64_MIN : c[lo].step;
    out->step_hi = c[hi].step;
    out->entries = entries;
    out->bytes = b->fixed + bytes;
    return 0;
}

/* Entries and bytes of sample blocks a..z (block k: from sample k to k+1). */
static uint64_t span_entries(const struct mh__snapshot *s, size_t a, size_t z)
{
    uint64_t end = z + 1 < s->nsamples ? s->samples[z + 1].entries : s->collected;
    return end - s->samples[a].entries;
}

static uint64_t span_bytes(const struct mh__snapshot *s, size_t a, size_t z)
{
    uint64_t end = z + 1 < s->nsamples ? s->samples[z + 1].bytes : s->est.entry_bytes;
    return end - s->samples[a].bytes;
}

static int span_fits(const struct mh__snapshot *s, const struct budget *b, size_t a, size_t z)
{
    return fits(b, span_entries(s, a, z), span_bytes(s, a, z));
}

/* Sample blocks around the moment's event, as a time window. */
static void fit_time(const struct mh__snapshot *s, const struct budget *b, uint64_t index,
                     struct mh__snapshot_fit *out)
{
    const struct mh__tsample *t = s->samples;
    size_t n = s->nsamples, lo = 0, hi;
    while (lo + 1 < n && t[lo + 1].index <= index)
        lo++;
    hi = lo;
    int earlier = 1, later = 1;
    for (int turn = 0; earlier || later; turn ^= 1) {
        if (turn && later) {
            later = hi + 1 < n && span_fits(s, b, lo, hi + 1);
            hi += (size_t)later;
        } else if (!turn && earlier) {
            earlier = lo > 0 && span_fits(s, b, lo - 1, hi);
            lo -= (size_t)earlier;
        }
    }
    out->kind = MH__SNAPSHOT_FIT_TIME;
    out->t_lo_ns = t[lo].rel_ns;
    out->t_hi_ns = hi + 1 < n ? t[hi + 1].rel_ns - (t[hi + 1].rel_ns > 0) : UINT64_MAX;
    if (out->t_hi_ns <= out->t_lo_ns)
        out->t_hi_ns = out->t_lo_ns + 1;
    out->entries = span_entries(s, lo, hi);
    out->bytes = b->fixed + span_bytes(s, lo, hi);
}

int mh__snapshot_fit(const struct mh__snapshot *s, uint64_t max_bytes, uint64_t max_entries,
                     struct mh__snapshot_fit *out)
{
    memset(out, 0, sizeof *out);
    const struct mh__focus *f = &s->focus;
    out->kind = MH__SNAPSHOT_FIT_ALL;
    out->entries = s->info.entries;
    out->bytes = s->info.estimate_bytes;
    if ((s->info.estimate_bytes <= max_bytes && s->info.entries <= max_entries) ||
        (!f->have_oom && !f->have_peak) || s->nsamples == 0)
        return 0;
    struct budget b = {max_bytes, max_entries, 1024 + s->est.dict_bytes};
    out->at_oom = f->have_oom;
    out->device = f->have_oom ? f->oom.device : f->peak_device;
    out->focus_step = f->have_oom ? f->oom.step : f->peak.step;
    out->focus_value = f->have_oom ? f->oom.request : f->peak.value;
    uint64_t t = f->have_oom ? f->oom.time_ns : f->peak.time_ns;
    out->focus_time_ns = t >= s->t0 ? t - s->t0 : 0;
    uint64_t index = f->have_oom ? f->oom.event_index : f->peak.event_index;
    if (s->nsteps > 1 && fit_steps(s, &b, out->focus_step, out) == 0)
        return 0;
    fit_time(s, &b, index, out);
    return 0;
}
