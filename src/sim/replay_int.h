/* replay_int.h - what the what-if replay (sim_replay.c) shares with the
 * comparison of its events with the recorded ones (replay_match.c): the
 * recorded allocator events between the position the simulation has
 * reached and the one the input has, and the recorded segment creations the
 * address oracle hands out, both kept only as far apart as the two runs
 * are. Internal to src/sim. */
#ifndef MH_SIM_REPLAY_INT_H
#define MH_SIM_REPLAY_INT_H

#include <stddef.h>
#include <stdint.h>

#include "sim_replay.h"

/* An allocator event as the comparison sees it. */
struct mh__rm_event {
    uint64_t addr, size;
    uint8_t kind;
};

/* A recorded segment_alloc or segment_map, for the address oracle. */
struct mh__rm_segment {
    uint64_t addr, size, stream;
    uint8_t kind;
};

struct mh__rmatch {
    const struct mh__sim_source *src;
    /* events compared so far on each side (positions in the two runs) */
    uint64_t recorded, simulated;
    /* the side ahead's events the other has not reached: a ring, recorded
     * events when `queued_sim` is 0, simulated ones when it is 1 */
    struct mh__rm_event *q;
    size_t qcap, qhead, qn;
    int queued_sim;
    /* past `window` apart: a cursor of its own reads the recorded
     * events at the simulation's position instead */
    void *cur;
    uint64_t matched, matched_segment_events;
    /* recorded segment creations [seg_first, seg_known) not handed out yet;
     * `scan` reads ahead for one the input has not reached */
    struct mh__rm_segment *segs;
    size_t scap, shead, sn;
    uint64_t seg_first, seg_known, seg_input;
    void *scan;
    uint64_t seg_scanned;
    int scan_done;
    int segments;  /* keeps the segment creations (the oracle is on) */
    size_t window; /* the most events queued before the cursor takes over */
};

#define MH__RM_WINDOW (1u << 18)

/* `segments`: keep the recorded segment creations for mh__rmatch_segment;
 * `window`: the most queued events (0 = MH__RM_WINDOW). */
void mh__rmatch_init(struct mh__rmatch *m, const struct mh__sim_source *src, int segments,
                     size_t window);
void mh__rmatch_free(struct mh__rmatch *m);
/* A recorded allocator event (not preexisting) the input reached. */
int mh__rmatch_recorded(struct mh__rmatch *m, const struct mh_event *e);
/* An allocator event (not preexisting) the simulation emitted. */
int mh__rmatch_simulated(struct mh__rmatch *m, const struct mh_event *e);
/* The recorded segment creation number `ordinal` (0 = the first; never
 * less than an earlier call's): 1 and *out, 0 if the recording has no such
 * segment, or a negative error. Those before it are forgotten. */
int mh__rmatch_segment(struct mh__rmatch *m, uint64_t ordinal, struct mh__rm_segment *out);
/* Forgets the recorded segment creations before number `ordinal`. */
void mh__rmatch_forget_segments(struct mh__rmatch *m, uint64_t ordinal);

static inline int mh__rm_is_segment_kind(unsigned kind)
{
    return kind == MH_EV_SEGMENT_ALLOC || kind == MH_EV_SEGMENT_FREE || kind == MH_EV_SEGMENT_MAP ||
           kind == MH_EV_SEGMENT_UNMAP;
}

static inline int mh__rm_preexisting(const struct mh_event *e)
{
    return mh__sim_is_allocator_kind(e->kind) && (e->flags & MH_EVF_PREEXISTING);
}

#endif
