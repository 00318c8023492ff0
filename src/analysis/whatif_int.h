/* whatif_int.h - what the what-if runner's files share: the tracker that
 * turns a run's events into its figures (whatif_track.c), the source that
 * reads the recording again for each replay (whatif_source.c), the replay
 * started during the pass (whatif_expect.c) and the runs themselves
 * (whatif_check.c, whatif_jobs.c). Internal to src/analysis. */
#ifndef MH_ANALYSIS_WHATIF_INT_H
#define MH_ANALYSIS_WHATIF_INT_H

#include "whatif_check.h"

/* Follows a run through a model: allocated memory at the reserved peak,
 * OOMs and what the allocator could have had at them. */
struct mh__wtrack {
    struct mh_model *model; /* owned when opened by mh__wtrack_open */
    int device;
    int64_t allocated, reserved;
    uint64_t peak_reserved, allocated_at_peak, ooms;
    uint64_t oom_available; /* least reserved + driver-free memory at an OOM, 0 if none */
};

/* A tracker with a model of its own under `conf`. */
int mh__wtrack_open(struct mh__wtrack *t, const struct mh_alloc_conf *conf, int device);
void mh__wtrack_close(struct mh__wtrack *t);
/* After the model applied `ev` with result `res`. */
void mh__wtrack_note(struct mh__wtrack *t, const struct mh_event *ev,
                     const struct mh_apply_result *res);
/* Applies `ev` to the tracker's model and notes it (a mh__sim_event_fn). */
int mh__wtrack_event(void *tracker, const struct mh_event *ev);
/* The run's figures from the finished model `m` (the tracker's own, or the
 * one it noted the results of); times count from `t0_ns`. */
void mh__wtrack_summarize(const struct mh__wtrack *t, const struct mh_model *m, uint64_t t0_ns,
                          struct mh__whatif_outcome *out);

/* What the replays read, gathered during the pass (whatif_source.c). */
struct mh__wexpect;
struct mh__evpack;
struct mh__whatif_source {
    struct mh__observer obs;
    struct mh__session *s; /* the session of the pass */
    int keep_copy;        /* asked for the copy whatever the input */
    struct mh__evpack *copy;
    uint64_t events; /* events of the pass */
    uint64_t t0_ns;
    uint64_t other_alloc;           /* allocator events of devices other than the first */
    int first_device, other_device; /* the first allocator device; another allocated too */
    struct mh__wtrack rec;          /* the pass, noted */
    struct mh__whatif_outcome recorded;
    int done;                      /* the pass ended */
    mh__whatif_expect_fn expect_fn; /* the replay to start during the pass */
    void *expect_user;
    struct mh__wexpect *expect; /* that replay, once started */
};

/* The input's events as a replay source (sim_replay.h): `feed` is the
 * source's user data, valid while `in` is. */
struct mh__whatif_feed {
    const struct mh__whatif_source *w;
    int device;
    uint64_t events;           /* file events to read (in->events) */
    const _Atomic int *cancel; /* non-zero: the replay is called off */
};
void mh__whatif_feed(const struct mh__whatif_input *in, struct mh__whatif_feed *feed,
                     struct mh__sim_source *src);
/* What the pass gathered: the recorded run of the input, when the pass's
 * own model replayed exactly the input's events (no other device's
 * allocator events in the file); 1 and *out, else 0. */
int mh__whatif_source_recorded(const struct mh__whatif_source *w, int device,
                               struct mh__whatif_outcome *out);
/* Whether the input of `device` is the whole file (no other device's
 * allocator events). */
int mh__whatif_source_whole(const struct mh__whatif_source *w, int device);

/* One replay of `in` as mh__whatif_run does it, under ro->address_ties;
 * with `baseline` without the model (only the replay's figures). Takes the
 * result of the replay started during the pass where it is this one. */
int mh__whatif_replay(const struct mh__whatif_input *in, const struct mh__sim_replay_opts *ro,
                      int baseline, struct mh__whatif_outcome *out,
                      struct mh__sim_replay_result *res);
/* The same, always run here and now. */
int mh__whatif_replay_now(const struct mh__whatif_input *in, const struct mh__sim_replay_opts *ro,
                          int baseline, struct mh__whatif_outcome *out,
                          struct mh__sim_replay_result *res);

/* whatif_expect.c: the replay started during the pass. At the first
 * allocator event of the pass of `s`: */
void mh__wexpect_start(struct mh__whatif_source *w, struct mh__session *s);
/* At the end of the pass: calls it off if it is not the replay the
 * command will ask for after all. */
void mh__wexpect_check(struct mh__whatif_source *w, struct mh__session *s);
/* The flag that calls it off, for its cursors. */
const _Atomic int *mh__wexpect_cancel(const struct mh__whatif_source *w);
/* Calls it off (if it runs) and waits for it; then there is none. */
void mh__wexpect_stop(struct mh__whatif_source *w);
/* 1 with its results where it is the replay asked for (mh__whatif_replay's
 * arguments), it succeeded and the file did not change; 0 to run it. */
int mh__wexpect_take(const struct mh__whatif_input *in, const struct mh__sim_replay_opts *ro,
                     int baseline, struct mh__whatif_outcome *out, struct mh__sim_replay_result *res);
/* The jobs, each under its own ro.address_ties, on up to two threads. */
int mh__whatif_jobs(const struct mh__whatif_input *in, struct mh__whatif_job *jobs, size_t n);

#endif
