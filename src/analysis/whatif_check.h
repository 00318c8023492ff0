/* whatif_check.h - the what-if runner: a recording's allocator requests
 * replayed through the simulator (src/sim/sim_replay.h) under other
 * settings, the same runner for `memhist whatif`, the checked suggestions of
 * `memhist oom` and the fragmentation verdict of `memhist report`.
 *
 * The events are read again for each replay, not kept: an observer of the
 * session's pass (a source) notes how to read the recording again (its
 * file, reopened by each replay with a reader of its own, or, where it
 * cannot be reopened, standard input, a compact copy it keeps) and gathers
 * the recorded run's figures on the way; the input of one device is taken
 * from it. Replays that do not depend on one another run on two threads.
 * Settings are always a struct mh_alloc_conf. */
#ifndef MH_ANALYSIS_WHATIF_CHECK_H
#define MH_ANALYSIS_WHATIF_CHECK_H

#include "session.h"
#include "sim_replay.h"

/* What the replays of a session's recording read, gathered by an observer
 * during the session's pass. */
struct mh__whatif_source;
int mh__whatif_source_new(struct mh__whatif_source **out);
void mh__whatif_source_free(struct mh__whatif_source *w);
/* The observer to register on the session for its pass (valid while `w`
 * lives; the session must outlive the replays). */
const struct mh__observer *mh__whatif_source_observer(struct mh__whatif_source *w);
/* Keeps the compact in-memory copy even of a file that could be read again
 * (before the pass; the tests compare the two). */
void mh__whatif_source_keep_copy(struct mh__whatif_source *w);

struct mh__whatif_input {
    const struct mh__whatif_source *src; /* events of one device plus non-allocator events */
    uint64_t events; /* of the file's events, the pass's (UINT64_MAX: to the file's end) */
    int device;
    uint64_t total_bytes;      /* recorded device capacity, 0 if unknown */
    struct mh_alloc_conf conf; /* recorded settings */
    uint64_t t0_ns;            /* time of the input's first event, 0 if none */
    int address_ties;          /* replays break best-fit ties by address (mh__whatif_pick_ties) */
};

/* The input of `device` (the first allocator device if < 0) from what `w`
 * gathered during the pass of `s`. Returns 0 or a negative error. */
int mh__whatif_input(const struct mh__whatif_source *w, struct mh__session *s, int device,
                     struct mh__whatif_input *in);

/* One run, recorded or what-if, as the model sees it. */
struct mh__whatif_outcome {
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

/* Makes the options of the replay a command will ask for first (and
 * whether it is a baseline, mh__whatif_baseline) from its input and the
 * recorded run (NULL while it is not known: as if it had no OOM). */
typedef void (*mh__whatif_expect_fn)(void *user, const struct mh__whatif_input *in,
                                    const struct mh__whatif_outcome *recorded,
                                    struct mh__sim_replay_opts *ro, int *baseline);
/* Starts that replay during the pass, on a thread of its own, as soon as
 * the input of the file's first allocator device is known (at its first
 * allocator event; before the pass, `user` borrowed until the pass ends;
 * called off at the end if the options then differ): the runs
 * below take its result when they are asked for the same replay of the same
 * input (the pass's settings, device size, first event) and the file did
 * not change meanwhile, else they run it again. Not where the pass keeps a
 * copy (standard input). */
void mh__whatif_source_expect(struct mh__whatif_source *w, mh__whatif_expect_fn fn, void *user);
/* An mh__whatif_expect_fn: mh__whatif_pick_ties's first replay at the
 * capacity the recorded run could use (mh__whatif_capacity). */
void mh__whatif_expect_baseline(void *user, const struct mh__whatif_input *in,
                                const struct mh__whatif_outcome *recorded,
                                struct mh__sim_replay_opts *ro, int *baseline);

/* A what-if answer is "checked by replay" when replaying the run under its
 * own settings reproduces at least this percent of its allocator events
 * (mh__whatif_baseline's match); below it, what-if figures are estimates. */
#define MH__WHATIF_CHECKED_MATCH 95.0
/* Whether `base` (a baseline replay, NULL if it failed) checks what-if
 * figures: some allocator events replayed, MH__WHATIF_CHECKED_MATCH matched. */
int mh__whatif_checked(const struct mh__whatif_outcome *base);

/* The recorded run: the input as the model replays it (from the session's
 * pass where the file has no other device's allocator events, else the
 * input read again through a model of its own). */
int mh__whatif_recorded(const struct mh__whatif_input *in, struct mh__whatif_outcome *out);
/* The memory the recorded run's allocator could use, for replays: the
 * device's total, less what was not the allocator's to take when it ran out
 * (the CUDA context, other processes): the least reserved + driver-free
 * memory at its OOMs. 0 = unknown (unlimited). */
uint64_t mh__whatif_capacity(const struct mh__whatif_input *in, const struct mh__whatif_outcome *recorded);
/* The what-if run under ro->conf with ro->capacity bytes (0 = unlimited)
 * and ro->use_oracle (ro->emit is the runner's own). `res` may be NULL. */
int mh__whatif_run(const struct mh__whatif_input *in, const struct mh__sim_replay_opts *ro,
                   struct mh__whatif_outcome *out, struct mh__sim_replay_result *res);
/* Replays under the recorded settings, taking segment addresses from the
 * recording where sizes agree: `match` says how faithfully the simulator
 * reproduces the run (events it cannot explain, or a starting state that is
 * partly unknown, lower it). A trace that starts mid-run is replayed from
 * the state at its start (the file's preexisting events). Only the replay's
 * figures are filled in (match, events, placed, segment_match, seeded_*),
 * not the model's. */
int mh__whatif_baseline(const struct mh__whatif_input *in, uint64_t capacity,
                        struct mh__whatif_outcome *out);
/* How the torch that recorded `in` broke best-fit ties between equal free
 * blocks, which a snapshot does not say: by segment age (torch 2.15) unless
 * the replay under the recorded settings `ro` (use_oracle) reproduces more
 * of the run with ties by address (older torch). Runs `ro` once, twice when
 * the first run is not exact, keeps the better run in `out` and `res` (may
 * be NULL) and its rule in in->address_ties for the replays that follow. */
int mh__whatif_run_picking_ties(struct mh__whatif_input *in, const struct mh__sim_replay_opts *ro,
                                struct mh__whatif_outcome *out, struct mh__sim_replay_result *res);
/* The same for mh__whatif_baseline's replay; `out` gets its outcome. */
int mh__whatif_pick_ties(struct mh__whatif_input *in, uint64_t capacity,
                         struct mh__whatif_outcome *out);
/* mh__whatif_pick_ties at `base_capacity` (its result in *base_rc, its
 * outcome in `base`), then mh__whatif_run of `ro` under the rule it picked
 * (returned, with `out` and `res`, which may be NULL): the same results,
 * but the two replays run at once, on two threads, and the second rule's
 * what-if run is started with the second baseline, before it is known
 * whether it is needed. */
int mh__whatif_run_with_baseline(struct mh__whatif_input *in, uint64_t base_capacity,
                                 const struct mh__sim_replay_opts *ro,
                                 struct mh__whatif_outcome *base, int *base_rc,
                                 struct mh__whatif_outcome *out, struct mh__sim_replay_result *res);

/* Independent replays of one input, run two at a time (mh__whatif_run_all). */
struct mh__whatif_job {
    struct mh__sim_replay_opts ro; /* ro.address_ties is the input's */
    int baseline;                 /* only the replay's figures (mh__whatif_baseline) */
    struct mh__whatif_outcome out;
    struct mh__sim_replay_result res;
    int rc;
};
/* Runs the `n` jobs, each as mh__whatif_run (or mh__whatif_baseline) would,
 * on up to two threads. Returns the first job's error in job order, or 0. */
int mh__whatif_run_all(const struct mh__whatif_input *in, struct mh__whatif_job *jobs, size_t n);

#endif
