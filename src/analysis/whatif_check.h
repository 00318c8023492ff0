/* whatif_check.h - the what-if runner: a recording's allocator requests
 * replayed through the simulator (src/sim/sim_replay.h) under other
 * settings, the same runner for `memhist whatif`, the checked suggestions of
 * `memhist oom` and the fragmentation verdict of `memhist report`.
 *
 * The events come from a replay session: an observer keeps them during the
 * session's pass (no second read of the file), and the input of one device
 * is taken from them. Settings are always a struct mh_alloc_conf. */
#ifndef MH_ANALYSIS_WHATIF_CHECK_H
#define MH_ANALYSIS_WHATIF_CHECK_H

#include "session.h"
#include "sim_replay.h"

/* Every event of a session's pass, kept by an observer. */
struct mh_whatif_events;
int mh__whatif_events_new(struct mh_whatif_events **out);
void mh__whatif_events_free(struct mh_whatif_events *e);
/* The observer to register on the session (valid while `e` lives). */
const struct mh_observer *mh__whatif_events_observer(struct mh_whatif_events *e);

struct mh_whatif_input {
    const struct mh_event *ev; /* events of one device plus non-allocator events, file order */
    size_t n;
    int device;
    uint64_t total_bytes;      /* recorded device capacity, 0 if unknown */
    struct mh_alloc_conf conf; /* recorded settings */
    struct mh_event *owned;    /* the copy behind ev when other devices were left out */
    int address_ties;          /* replays break best-fit ties by address (mh__whatif_pick_ties) */
};

/* The input of `device` (the first allocator device if < 0) from the
 * events kept during the pass of `s`. Returns 0 or MH_ENOMEM. */
int mh__whatif_input(const struct mh_whatif_events *e, struct mh_session *s, int device,
                     struct mh_whatif_input *in);
void mh__whatif_input_free(struct mh_whatif_input *in);

/* One run, recorded or what-if, as the model sees it. */
struct mh_whatif_outcome {
    uint64_t peak_allocated, peak_reserved, end_reserved;
    uint64_t allocated_at_peak; /* allocated at the reserved peak */
    uint64_t segment_allocs, segment_frees, retries;
    uint64_t ooms; /* OOM events of the run */
    int oom;       /* the first OOM: */
    int64_t oom_step;
    uint64_t oom_time_ns, oom_size; /* time from the input's first event */
    uint64_t oom_available; /* least reserved + driver-free memory at an OOM, 0 if none */
    double match; /* what-if runs: percent of allocator events reproduced as recorded
                   * (same kind, address and size at the same position) */
    uint64_t events;      /* recorded allocator events compared (preexisting ones left out) */
    double placed;        /* percent of replayed allocations at the recorded address */
    double segment_match; /* percent of recorded segment events reproduced */
    /* a trace that starts mid-run: the state at its start the replay began from */
    uint64_t seeded_segments, seeded_blocks;
    uint64_t seeded_unknown; /* of those blocks, freed during the trace: size unknown */
};

/* A what-if answer is "checked by replay" when replaying the run under its
 * own settings reproduces at least this percent of its allocator events
 * (mh__whatif_baseline's match); below it, what-if figures are estimates. */
#define MH_WHATIF_CHECKED_MATCH 95.0
/* Whether `base` (a baseline replay, NULL if it failed) checks what-if
 * figures: some allocator events replayed, MH_WHATIF_CHECKED_MATCH matched. */
int mh__whatif_checked(const struct mh_whatif_outcome *base);

/* The recorded run: the input replayed through the model as it is. */
int mh__whatif_recorded(const struct mh_whatif_input *in, struct mh_whatif_outcome *out);
/* The memory the recorded run's allocator could use, for replays: the
 * device's total, less what was not the allocator's to take when it ran out
 * (the CUDA context, other processes): the least reserved + driver-free
 * memory at its OOMs. 0 = unknown (unlimited). */
uint64_t mh__whatif_capacity(const struct mh_whatif_input *in, const struct mh_whatif_outcome *recorded);
/* The what-if run under ro->conf with ro->capacity bytes (0 = unlimited)
 * and ro->use_oracle (ro->emit is the runner's own). `res` may be NULL. */
int mh__whatif_run(const struct mh_whatif_input *in, const struct mh_sim_replay_opts *ro,
                   struct mh_whatif_outcome *out, struct mh_sim_replay_result *res);
/* Replays under the recorded settings, taking segment addresses from the
 * recording where sizes agree: `match` says how faithfully the simulator
 * reproduces the run (events it cannot explain, or a starting state that is
 * partly unknown, lower it). A trace that starts mid-run is replayed from
 * the state at its start (the file's preexisting events). */
int mh__whatif_baseline(const struct mh_whatif_input *in, uint64_t capacity,
                        struct mh_whatif_outcome *out);
/* How the torch that recorded `in` broke best-fit ties between equal free
 * blocks, which a snapshot does not say: by segment age (torch 2.15) unless
 * the replay under the recorded settings `ro` (use_oracle) reproduces more
 * of the run with ties by address (older torch). Runs `ro` once, twice when
 * the first run is not exact, keeps the better run in `out` and `res` (may
 * be NULL) and its rule in in->address_ties for the replays that follow. */
int mh__whatif_run_picking_ties(struct mh_whatif_input *in, const struct mh_sim_replay_opts *ro,
                                struct mh_whatif_outcome *out, struct mh_sim_replay_result *res);
/* The same for mh__whatif_baseline's replay; `out` gets its outcome. */
int mh__whatif_pick_ties(struct mh_whatif_input *in, uint64_t capacity,
                         struct mh_whatif_outcome *out);

#endif
