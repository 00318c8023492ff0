/* whatif_check.h - checked suggestions: a recording's allocator requests
 * replayed through the simulator (src/sim/sim_replay.h, the same replay as
 * `memhist whatif`) under candidate settings, reduced to the outcome the
 * answers quote (OOM or not, peak reserved and allocated). */
#ifndef MH_ANALYSIS_WHATIF_CHECK_H
#define MH_ANALYSIS_WHATIF_CHECK_H

#include "replay_file.h"

struct mh_whatif_input {
    struct mh_event *ev; /* events of one device plus non-allocator events, file order */
    size_t n;
    int device;
    uint64_t total_bytes;      /* recorded device capacity, 0 if unknown */
    struct mh_alloc_conf conf; /* recorded settings */
    char damage[256];          /* why reading stopped early ("" if it did not) */
};

struct mh_whatif_outcome {
    uint64_t peak_reserved, peak_allocated;
    uint64_t ooms; /* OOM events of the what-if run */
    double match;  /* percent of allocator events reproduced as recorded (same kind,
                    * address and size at the same position) */
};

/* Loads the events of `device` (the first allocator device if < 0). Prints
 * a one-line error naming the file on failure. */
int mh__whatif_load(const char *path, int device, struct mh_whatif_input *in);
void mh__whatif_input_free(struct mh_whatif_input *in);

/* Replays under `conf` with `capacity` bytes (0 = unlimited). */
int mh__whatif_run(const struct mh_whatif_input *in, const struct mh_alloc_conf *conf,
                   uint64_t capacity, struct mh_whatif_outcome *out);

/* Replays under the recorded settings, taking segment addresses from the
 * recording where sizes agree: `match` says how faithfully the simulator
 * reproduces the run (a trace that starts mid-run, or events it cannot
 * explain, lower it). */
int mh__whatif_baseline(const struct mh_whatif_input *in, uint64_t capacity,
                        struct mh_whatif_outcome *out);

/* The recorded settings with one change applied ("expandable_segments:True",
 * ...). Returns 0 or MH_EINVAL. */
int mh__whatif_conf(const struct mh_alloc_conf *base, const char *change,
                    struct mh_alloc_conf *out);

#endif
