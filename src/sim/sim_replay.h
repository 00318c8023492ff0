/* replay.h - what-if replay: re-drives a recorded allocator request sequence
 * (sizes, streams, order, frees matched to their allocations by address)
 * through the simulator under other settings or another device capacity.
 * Used by `memhist whatif` and the tests. */
#ifndef MH_SIM_SIM_REPLAY_H
#define MH_SIM_SIM_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "progress.h"
#include "sim.h"

struct mh_sim_replay_opts {
    struct mh_alloc_conf conf; /* settings of the what-if run */
    uint64_t capacity;         /* device bytes, 0 = unlimited */
    /* take segment addresses from the recorded segment_alloc/segment_map
     * events in order when sizes agree (replay under the recorded settings) */
    int use_oracle;
    mh_sim_event_fn emit;      /* receives every event of the what-if run */
    void *emit_user;
    /* told how many input events were replayed (progress.h), under the name
     * `progress_what`; none when progress.fn is NULL */
    struct mh_progress progress;
    const char *progress_what;
    int address_ties; /* mh_sim_opts' */
};

struct mh_sim_replay_result {
    uint64_t recorded_alloc_events; /* allocator events in the input */
    uint64_t simulated_alloc_events;
    /* same kind, address and size at the same position (OOM: the address is
     * the driver's free memory, which a simulation cannot know, so kind and
     * size) */
    uint64_t matched;
    uint64_t requests;       /* allocations replayed */
    uint64_t allocs;         /* recorded allocations that succeeded in the replay */
    uint64_t placed;         /* of those, placed at the recorded address */
    uint64_t unknown_frees;  /* frees of blocks allocated before the recording began */
    /* a trace that starts mid-run: the state at its start seeded first
     * (mh__sim_seed), from its preexisting events */
    uint64_t seeded_segments, seeded_blocks;
    uint64_t seeded_unknown; /* seeded blocks of unknown size (freed during the trace) */
    uint64_t seed_rejected;  /* preexisting events that did not fit the seeded state */
    uint64_t recorded_segment_events; /* segment allocs/frees/maps/unmaps in the input */
    uint64_t matched_segment_events;  /* of those, reproduced at the same position */
    uint64_t empty_caches;   /* recorded empty_cache() calls replayed */
    int oom;                 /* the what-if run hit an OOM the recording did not */
    size_t oom_index;        /* index in the input of the request that failed */
};

/* Replays `events` (one device, file order; non-allocator events such as
 * steps and phases pass through). Preexisting allocator events seed the
 * simulator's starting state and are left out of the comparison. Returns 0 (also when it stopped on a
 * what-if OOM) or a negative error. */
int mh__sim_replay(const struct mh_event *events, size_t n, const struct mh_sim_replay_opts *opts,
                   struct mh_sim_replay_result *res);

/* 1 for the kinds the caching allocator emits (alloc ... oom). */
int mh__sim_is_allocator_kind(unsigned kind);

#endif
