/* sim_replay.h - what-if replay: re-drives a recorded allocator request
 * sequence (sizes, streams, order, frees matched to their allocations by
 * address) through the simulator under other settings or another device
 * capacity. Used by the what-if runner (src/analysis/whatif_check.h) and the
 * tests.
 *
 * The recorded events come from a source the replay reads as it goes, more
 * than once where it must (a cursor of its own to compare against events far
 * from the one it replays), never from an array of the whole run: its memory
 * follows the allocator's live state, not the length of the recording. */
#ifndef MH_SIM_SIM_REPLAY_H
#define MH_SIM_SIM_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "progress.h"
#include "sim.h"

/* Where a replay's events come from: one device's allocator events and the
 * non-allocator events, in file order, from the first, as often as the
 * replay opens a cursor (at most three at once). */
struct mh__sim_source {
    /* a new cursor before the first event; 0 or a negative error */
    int (*open)(void *user, void **cursor);
    /* 1 and the next event in *ev, 0 at the end, or a negative error */
    int (*next)(void *cursor, struct mh_event *ev);
    /* how far the cursor has got, `done` of `total` units (for progress;
     * total 0 = unknown); may be NULL */
    void (*position)(void *cursor, uint64_t *done, uint64_t *total);
    void (*close)(void *cursor); /* accepts NULL */
    void *user;
};

struct mh__sim_replay_opts {
    struct mh_alloc_conf conf; /* settings of the what-if run */
    uint64_t capacity;         /* device bytes, 0 = unlimited */
    /* take segment addresses from the recorded segment_alloc/segment_map
     * events in order when sizes agree (replay under the recorded settings) */
    int use_oracle;
    mh__sim_event_fn emit;      /* receives every event of the what-if run */
    void *emit_user;
    /* told how far the replay has read (progress.h), under the name
     * `progress_what`; none when progress.fn is NULL */
    struct mh__progress progress;
    const char *progress_what;
    int address_ties; /* mh__sim_opts' */
    /* how many allocator events apart the simulated and the recorded run may
     * get before the comparison reads the recording with a cursor of its own
     * (0 = 262144; results do not depend on it) */
    size_t compare_window;
};

struct mh__sim_replay_result {
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
    uint64_t input_events;   /* events the source gave (all of them, also after an OOM) */
};

/* Replays the events of `src` (one device, file order; non-allocator events
 * such as steps and phases pass through). Preexisting allocator events seed
 * the simulator's starting state and are left out of the comparison.
 * Returns 0 (also when it stopped on a what-if OOM) or a negative error,
 * the source's among them. Reentrant: replays on other threads may run at
 * the same time. */
int mh__sim_replay(const struct mh__sim_source *src, const struct mh__sim_replay_opts *opts,
                   struct mh__sim_replay_result *res);

/* A source over `n` events in memory (borrowed while `src` is used). */
struct mh__sim_event_array {
    const struct mh_event *ev;
    size_t n;
};
void mh__sim_source_array(struct mh__sim_source *src, struct mh__sim_event_array *arr);
/* mh__sim_replay over `n` events in memory. */
int mh__sim_replay_events(const struct mh_event *events, size_t n,
                          const struct mh__sim_replay_opts *opts, struct mh__sim_replay_result *res);

/* 1 for the kinds the caching allocator emits (alloc ... oom). */
static inline int mh__sim_is_allocator_kind(unsigned kind)
{
    return kind <= MH_EV_OOM;
}

#endif
