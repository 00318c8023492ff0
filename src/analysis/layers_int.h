/* layers_int.h - internals of the layers analysis, shared by layers.c (the
 * pass, naming and attribution), layer_chunk.c (the events of one step
 * held until the step is over), layer_calls.c (the checkpointing groups of
 * a chunk) and checkpoint.c (what checkpointing saves, chunk by chunk).
 *
 * The analysis replays the file once more after its first pass. Each
 * record is named when its allocation is seen; the records that
 * checkpointing concerns (forward and backward allocations of the device)
 * and the allocated curve are held for one step at a time, a chunk: the
 * saved activations of a layer are freed in the backward of their own
 * step, so every change checkpointing makes to the curve falls inside the
 * chunk of the allocation it moves. A chunk is evaluated when its step is
 * over, for every set of layers asked about (each layer alone on the first
 * evaluation pass, the plan's prefixes on the next), and only the highest
 * value of each set's curve is kept. */
#ifndef MH_ANALYSIS_LAYERS_INT_H
#define MH_ANALYSIS_LAYERS_INT_H

#include "layers.h"
#include "layer_names.h"
#include "addrmap.h"
#include "session.h"
#include "spool.h"

/* One call of a layer's module in one pass span (a step, or under gradient
 * accumulation one micro-batch's forward and backward); a layer whose calls
 * are not told apart has one group per pass (layer_calls.c). */
struct mh__lgroup {
    uint64_t bwd_start; /* first backward allocation of the call; MH__NEVER if none */
    uint64_t fwd_first; /* first forward allocation of the call; MH__NEVER if none */
    uint64_t moved;     /* saved activation bytes that checkpointing recomputes */
    uint64_t transient; /* recompute working set beyond them */
    uint32_t span;      /* its pass span */
    int32_t layer;
};

/* A forward or backward allocation of the device, held by its chunk. */
struct mh__crec {
    struct mh__alloc_rec rec; /* final once its life ended within the chunk */
    int32_t layer;
    uint32_t span;  /* its pass span */
    uint32_t group; /* set when the chunk is evaluated */
    uint8_t ended;  /* its life ended within the chunk */
    uint8_t output; /* returned by its layer's module or an ancestor (MH_ROLE_OUTPUT) */
};

/* A scope opening of a module (MH_EV_SCOPE_ENTER) within a chunk. */
struct mh__cmark {
    uint64_t index;
    uint32_t str;  /* the module path */
    uint8_t phase; /* MH_PHASE_FORWARD or MH_PHASE_BACKWARD */
};

/* The events of one step (or more, while an allocation of it may still be
 * saved for its backward) of the analysed device. */
struct mh__chunk {
    uint64_t lo;   /* index of its first event */
    int64_t run0;  /* the allocated curve before it */
    int64_t *delta; /* the curve's change at each event from lo */
    size_t nev, capev;
    struct mh__crec *recs;
    size_t nrecs, caprecs;
    struct mh__cmark *marks;
    size_t nmarks, capmarks;
    size_t span_lo, span_hi; /* its pass spans: [span_lo, span_hi] */
    struct mh__lgroup *groups;
    size_t ngroups, capgroups;
};

/* A point of a chunk's curve where checkpointing some layer changes it:
 * the curve before its event, the highest base value from it to the next
 * point, and its entries (ents): the recompute spikes, then the changes. */
struct mh__cpoint {
    int64_t before, seg_max;
    uint32_t nspikes, nmods;
};

struct mh__centry {
    uint32_t layer;
    int64_t value;
};

/* The summary of one chunk's curve (ckpt_curve.c). */
struct mh__csum {
    int64_t first_max; /* the highest base value before the first point */
    struct mh__cpoint *pts;
    size_t npts, cappts;
    struct mh__centry *ents;
    size_t nents, capents;
    struct mh__citem *items; /* scratch: the entries before they are sorted */
    size_t nitems, capitems;
};

struct mh__layers {
    struct mh__session *session; /* borrowed: the evaluation passes */
    const struct mh__lifetimes *first;
    const struct mh_reader *r;
    int device;
    struct mh__layer_namer nm;
    struct mh__hmap by_key;  /* (metadata << 32 | stack) + 1 -> layer + 1 */
    struct mh__hmap by_path; /* string id of a module path -> layer + 2 (1: no layer) */
    size_t nlayers, caplayers;
    struct mh__layer_stats *stats; /* by layer index */
    char **names;                 /* by layer index */
    uint64_t peak, peak_index;
    int64_t peak_step;
    size_t peak_span;
    uint64_t forward_total; /* forward allocation volume of the peak pass */
    uint64_t category_at_peak[MH__CAT_COUNT];
    struct mh__layer_step *steps; /* each step's peak and largest layers */
    size_t nsteps, next_step;
    uint64_t *live; /* by layer: block bytes of the device live now */
    int threaded;   /* mh__lifetimes_threaded of the first pass */
    struct mh__lifetimes *lt; /* of the current pass; its kept records after the first */
    uint64_t *keep;
    size_t nkeep;
    struct mh__chunk chunk;
    int64_t run; /* the allocated curve after the last event */
    /* by layer, the estimated peak with that layer alone checkpointed so
     * far (grown with the layers) */
    uint64_t *single_peak;
    uint64_t plain_peak; /* the curve's highest value over the chunks evaluated */
    struct mh__csum sum;     /* the chunk's summary (scratch) */
    struct mh__spool spool;  /* every chunk's summary, for the plan */
    uint64_t nsummaries;
    size_t *plan_order;
    uint64_t *plan_after;
    size_t nplan, plan_best;
    int planned;
};

/* The layer of an allocation (metadata `str`, `stack`), made if new; -1 on
 * ENOMEM. */
int32_t mh__layers_name_of(struct mh__layers *ly, uint32_t str, uint32_t stack);

/* ---- layer_chunk.c ---- */
/* Holds what event `index` did (its change `ch`, the model after it);
 * names an allocation that began and keeps its layer + 1 in its user[0]
 * (user[1]: where the chunk holds it). */
int mh__chunk_event(struct mh__layers *ly, const struct mh_model *m, const struct mh_event *ev,
                    struct mh__life_change *ch, uint64_t index);
/* Whether the chunk can be evaluated before event `index` (a step began
 * there): no allocation it holds can still be freed in its own step. */
int mh__chunk_over(const struct mh__layers *ly, const struct mh_model *m);
/* Evaluates the chunk (groups, attribution of the peak span, the sets) and
 * starts the next one at event `index`. */
int mh__chunk_close(struct mh__layers *ly, uint64_t index);
void mh__chunk_free(struct mh__chunk *c);

/* ---- layer_calls.c ---- */
/* Makes the chunk's groups (one per layer, pass span and call) and each
 * held record's group. */
int mh__chunk_groups(struct mh__layers *ly);

/* ---- checkpoint.c ---- */
/* 1 if held record `i` is a forward activation freed in its layer's
 * backward, which checkpointing the layer moves (mh__chunk_is_saved, or
 * the layer's output). */
int mh__chunk_moves(const struct mh__layers *ly, size_t i);
/* 1 if held record `i` is a saved activation that checkpointing its layer
 * drops. */
int mh__chunk_is_saved(const struct mh__layers *ly, size_t i);
/* Fills the groups' backward starts, moved bytes and transients, and on
 * the first evaluation pass the attribution of the peak's pass span. */
int mh__chunk_fill_groups(struct mh__layers *ly);

/* ---- ckpt_curve.c ---- */
/* Summarizes the chunk's allocated curve at the points where checkpointing
 * a layer changes it, raises each layer's single estimate to the chunk's
 * highest value with that layer checkpointed, and spools the summary. */
int mh__chunk_summarize(struct mh__layers *ly);
/* The estimated peak with the first k layers of `order` checkpointed, for
 * k = 1..n, from the spooled summaries. */
int mh__layers_prefix_peaks(struct mh__layers *ly, const size_t *order, size_t n, uint64_t *peak);
void mh__csum_free(struct mh__csum *s);

#endif
