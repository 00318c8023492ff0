/* memhist/model.h - replay of events into caching-allocator state.
 *
 * The model is the one state machine every output reads. It replays events
 * into per-device segments (small or large pool, stream, expandable or not)
 * holding blocks (allocated, pending free, inactive) using PyTorch's rounding
 * and split rules, so "allocated" means torch.cuda.memory_allocated() and
 * "reserved" means torch.cuda.memory_reserved(). It tracks the peaks and
 * per-step statistics. Events that contradict the state are counted as
 * anomalies and skipped, never fatal. */
#ifndef MEMHIST_MODEL_H
#define MEMHIST_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "allocconf.h"
#include "event.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mh_model;

struct mh_model_opts {
    struct mh_alloc_conf conf; /* settings of the recorded run (defaults if zero) */
};

enum mh_block_state { MH_BLOCK_INACTIVE = 0, MH_BLOCK_ALLOCATED = 1, MH_BLOCK_PENDING_FREE = 2 };

/* Memory statistics of one device at one moment. */
struct mh_mem_stats {
    uint64_t allocated;      /* sum of block sizes of allocated blocks */
    uint64_t reserved;       /* sum of segment sizes (mapped bytes for expandable) */
    uint64_t active;         /* allocated + pending free */
    uint64_t requested;      /* sum of requested sizes of active blocks (torch's requested_bytes) */
    uint64_t inactive_split; /* bytes in free blocks of split, non-expandable segments */
    uint64_t driver_outside; /* driver-level bytes outside the caching allocator */
    uint32_t segments;
    uint32_t allocated_blocks;
    uint64_t allocs, frees, segment_allocs, segment_frees, maps, unmaps, ooms;
};

struct mh_peak {
    uint64_t value;
    uint64_t time_ns;
    int64_t step;         /* -1 before the first step */
    uint64_t event_index; /* 0-based index of the event that set it */
    int phase;            /* enum mh_phase current when it was set (MH_PHASE_NONE: none) */
};

struct mh_step_stats {
    int64_t step;
    uint64_t begin_ns, end_ns;
    uint64_t peak_allocated, peak_reserved;
    uint64_t end_allocated, end_reserved;
    uint64_t allocated_at_reserved_peak;
    double fragmentation; /* 1 - allocated/reserved at the reserved peak */
    uint64_t inactive_split_at_reserved_peak;
    uint64_t largest_free_at_reserved_peak;
    uint32_t segments_at_end;
    uint64_t segment_allocs, segment_frees, allocs, frees, ooms;
    uint64_t retries; /* segment frees of cached blocks followed by an alloc (release-and-retry) */
};

struct mh_oom_info {
    uint64_t time_ns;
    int device;
    uint64_t stream;
    uint64_t request;     /* rounded request (event size) */
    uint64_t device_free; /* free device bytes reported by CUDA */
    uint64_t allocated, reserved;
    uint64_t largest_free_same_stream; /* largest inactive block on the request's stream and pool */
    uint64_t largest_free_any;
    int64_t step;
    uint32_t stack;
    uint64_t event_index;
};

struct mh_segment_view {
    int device;
    uint64_t address, size;
    uint64_t stream;
    uint32_t pool[2];
    int small_pool;
    int expandable;
    uint32_t stack; /* stack of the segment allocation */
    uint64_t allocated, active, requested;
    uint32_t nblocks;
};

struct mh_block_view {
    uint64_t address, size, requested;
    enum mh_block_state state;
    uint32_t stack; /* stack at allocation (0 for inactive blocks) */
    uint32_t str;   /* user metadata at allocation */
    uint64_t alloc_time_ns;
    int64_t alloc_step;
    uint8_t alloc_phase; /* enum mh_phase current at allocation */
    uint64_t stream;
};

/* Words the model keeps with each allocated block for the code that
 * observes a replay (a handle per allocation of its own instead of a map
 * from addresses), zero when the block is allocated. Each observer of one
 * replay uses its own word. */
#define MH_BLOCK_WORDS 4

/* What one event did, for outputs that aggregate while streaming. */
struct mh_apply_result {
    int64_t allocated_delta;
    int64_t reserved_delta;
    uint64_t block_size;  /* block touched by an alloc/free, 0 otherwise */
    uint32_t block_stack; /* its allocation stack */
    int anomaly;          /* 0 or an enum mh_anomaly value */
    /* the block's MH_BLOCK_WORDS words: at an allocation the new block's own,
     * for its observers to set; at a free a copy of them (the block may be
     * merged away); NULL for other events. Valid until the next event. */
    uint32_t *block_words;
    uint32_t freed_words[MH_BLOCK_WORDS];
};

#define MH_ANOMALY_LIST(X)                                                                         \
    X(MH_ANOM_NONE, 0, "none")                                                                     \
    X(MH_ANOM_FREE_UNKNOWN, 1, "free of an unknown address")                                       \
    X(MH_ANOM_ALLOC_OUTSIDE_SEGMENT, 2, "allocation outside any segment")                          \
    X(MH_ANOM_ALLOC_OVERLAP, 3, "allocation overlaps a live block")                                \
    X(MH_ANOM_SEGMENT_OVERLAP, 4, "segment overlaps an existing segment")                          \
    X(MH_ANOM_SEGMENT_FREE_UNKNOWN, 5, "segment free of an unknown segment")                       \
    X(MH_ANOM_SEGMENT_FREE_BUSY, 6, "segment freed while blocks are live")                         \
    X(MH_ANOM_UNMAP_UNKNOWN, 7, "unmap outside a mapped range")                                    \
    X(MH_ANOM_BAD_DEVICE, 8, "device index out of range")                                          \
    X(MH_ANOM_BAD_SIZE, 9, "zero size or address range past 2^64")

enum mh_anomaly {
#define MH_X_ANOM(name, value, text) name = value,
    MH_ANOMALY_LIST(MH_X_ANOM)
#undef MH_X_ANOM
        MH_ANOM_COUNT
};
const char *mh_anomaly_name(int anomaly);

int mh_model_new(const struct mh_model_opts *opts, struct mh_model **out);
void mh_model_free(struct mh_model *m);

/* Replays one event; `res` may be NULL. Returns 0, or a negative error only
 * for resource failures (MH_ENOMEM). Contradictions are anomalies. */
int mh_model_apply(struct mh_model *m, const struct mh_event *ev, struct mh_apply_result *res);
/* The MH_BLOCK_WORDS words of the block at `addr` on `device` (allocated
 * or waiting for its free to complete), NULL if there is none; valid until
 * the next event. An observer's word may still name an allocation whose
 * life it ended (a block waiting for its free to complete). */
uint32_t *mh_model_block_words(const struct mh_model *m, int device, uint64_t addr);
/* Closes the open step at the end of the input (call once after the last event). */
void mh_model_finish(struct mh_model *m);

/* Devices that appeared, in increasing order. */
size_t mh_model_device_count(const struct mh_model *m);
int mh_model_device_at(const struct mh_model *m, size_t i);

int mh_model_stats(const struct mh_model *m, int device, struct mh_mem_stats *out);
int mh_model_peak_allocated(const struct mh_model *m, int device, struct mh_peak *out);
int mh_model_peak_reserved(const struct mh_model *m, int device, struct mh_peak *out);

/* Steps. Events before the first step marker belong to step -1, which is not
 * listed. STEP_BEGIN(N) closes the open step and opens N; STEP_END(N) closes
 * the open step as step N and N+1 opens at the next event that has a time,
 * so traces with only STEP_END markers get per-step statistics too (when the
 * first marker is STEP_END(N), the period from the start of the trace is
 * step N). Markers apply to every device, except a STEP_END flagged
 * MH_EVF_DEVICE_STEP: it closes its device's step only, and from then on the
 * device follows its own markers. A device's steps are the periods in which
 * it did something (an allocator event); what follows its last STEP_END is
 * its tail (mh_model_tail), not a step, so trends compare complete steps
 * (a trace whose steps are only opened, by STEP_BEGIN, lists its last step
 * as a step). The "reserved peak" of a step is the moment reserved is highest
 * and, among those, allocated is highest. retries approximates torch's
 * num_alloc_retries from the trace: a burst of SEGMENT_FREE/UNMAP directly
 * followed by SEGMENT_ALLOC, SEGMENT_MAP or OOM on the same device. In
 * steps, segment_allocs/frees include maps/unmaps. */
size_t mh_model_step_count(const struct mh_model *m, int device);
int mh_model_step(const struct mh_model *m, int device, size_t i, struct mh_step_stats *out);
/* The set-up period before the first STEP_BEGIN (model construction, moving
 * it to the GPU), as step -1; MH_ENOTFOUND when the first step was not
 * opened by a STEP_BEGIN (then the set-up is part of the first step). */
int mh_model_setup(const struct mh_model *m, int device, struct mh_step_stats *out);
/* What followed the device's last complete step (its `step` is that step's
 * number plus one: "after step step-1"), after mh_model_finish;
 * MH_ENOTFOUND when the device did nothing after it. */
int mh_model_tail(const struct mh_model *m, int device, struct mh_step_stats *out);
/* The step the device's next event belongs to (its own markers', else
 * mh_model_current_step). */
int64_t mh_model_device_step(const struct mh_model *m, int device);
/* Step currently open (-1 before the first; with per-device markers, the
 * most advanced device's), and the current phase. */
int64_t mh_model_current_step(const struct mh_model *m);
int mh_model_current_phase(const struct mh_model *m);
/* Innermost module scope (string id of its path) open on `thread`, 0 if none.
 * An allocation without user metadata takes it as its block's `str`. */
uint32_t mh_model_scope(const struct mh_model *m, uint32_t thread);

size_t mh_model_oom_count(const struct mh_model *m);
int mh_model_oom(const struct mh_model *m, size_t i, struct mh_oom_info *out);

/* Largest inactive block; stream = UINT64_MAX and small_pool = -1 mean any. */
uint64_t mh_model_largest_free(const struct mh_model *m, int device, uint64_t stream,
                               int small_pool);

/* Iterates segments in address order and, per segment, its blocks in address
 * order (blocks tile the segment). Stop early by returning non-zero from a
 * callback; that value is returned. */
typedef int (*mh_segment_fn)(void *user, const struct mh_segment_view *seg);
typedef int (*mh_block_fn)(void *user, const struct mh_segment_view *seg,
                           const struct mh_block_view *blk);
int mh_model_foreach_segment(const struct mh_model *m, int device, mh_segment_fn fn, void *user);
int mh_model_foreach_block(const struct mh_model *m, int device, mh_block_fn fn, void *user);

/* Anomaly counters (index by enum mh_anomaly) and the number of events applied. */
uint64_t mh_model_anomaly_count(const struct mh_model *m, int anomaly);
uint64_t mh_model_event_count(const struct mh_model *m);

#ifdef __cplusplus
}
#endif
#endif
