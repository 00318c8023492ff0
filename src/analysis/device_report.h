/* device_report.h - the answer of `memhist report`: per device, the peaks,
 * the live allocations at the allocated peak grouped by stack and by
 * category, the fragmentation trend with its what-if verdict, what grows
 * across steps (the per-step statistics and OOMs are the model's), made in
 * src/analysis (device_report.c) and printed as text or JSON. */
#ifndef MH_ANALYSIS_DEVICE_REPORT_H
#define MH_ANALYSIS_DEVICE_REPORT_H

#include "replay_file.h"
#include "categories.h"
#include "whatif_check.h"
#include "growth.h"

struct mh__stack_group {
    uint32_t stack;
    uint64_t bytes;
    uint64_t count;
};

struct mh__device_report {
    int device;
    struct mh_device_info info; /* name and capacity if the file has them */
    struct mh_peak peak_allocated, peak_reserved;
    struct mh_mem_stats final;
    uint64_t peak_driver_outside;
    struct mh__stack_group *top; /* largest first */
    size_t ntop;
    uint64_t live_at_peak_bytes, live_at_peak_count;
    uint64_t category_at_peak[MH__CAT_COUNT]; /* block bytes live at the allocated peak */
    struct mh__frag_trend {
        size_t steps;                  /* 0: fewer than two steps, no trend */
        int64_t first_step, last_step;
        int64_t reserved_growth, allocated_growth; /* last minus first step peak */
        int fragmenting;               /* reserved grows while allocated does not */
        int whatif_ok;
        uint64_t whatif_peak_reserved; /* with expandable_segments:True */
        /* when fragmenting: the replay under the recorded settings checks
         * the what-if (whatif_check.h), reproducing baseline_match percent */
        int whatif_checked;
        double baseline_match;
    } trend;
    struct mh__growth_entry *growth; /* groups growing across steps, largest first */
    size_t ngrowth;
    uint32_t growth_window;         /* K of growth.h; 0: too few steps to tell */
};

/* The reports of the devices of one file opened as an analysis (with the
 * what-if trend, the peak groups and the growth observer wanted, each left
 * out where not), of `device` alone if >= 0; at most `top` groups at the
 * peak (all if 0). Returns 0 or a negative MH_E* code. */
struct mh__device_reports {
    struct mh__device_report *devs;
    size_t n;
};
struct mh__analysis;
int mh__device_reports(const struct mh__analysis *a, int device, size_t top,
                       struct mh__device_reports *out);
void mh__device_reports_free(struct mh__device_reports *r);

/* Fills the fragmentation trend of one device of `m` (a full pass) and runs
 * the what-if replay of `in` (that device's input) under
 * expandable_segments:True. */
void mh__report_trend(const struct mh_model *m, struct mh__whatif_input *in,
                      struct mh__frag_trend *t);
/* That what-if replay's options (an mh__whatif_expect_fn: started during the
 * pass). */
void mh__report_trend_expect(void *user, const struct mh__whatif_input *in,
                             const struct mh__whatif_outcome *recorded,
                             struct mh__sim_replay_opts *ro, int *baseline);

/* Groups the allocated blocks of `device` in `m` by stack, largest first;
 * keeps at most `top` groups (all if 0). The caller frees *out. */
int mh__report_group_live(const struct mh_model *m, int device, size_t top,
                          struct mh__stack_group **out, size_t *nout, uint64_t *total_bytes,
                          uint64_t *total_count);

/* The live groups at each device's allocated peak, gathered by a session
 * observer during the one full pass. */
struct mh__peak_groups;
int mh__peak_groups_new(struct mh__peak_groups **out);
void mh__peak_groups_free(struct mh__peak_groups *pg);
const struct mh__observer *mh__peak_groups_observer(struct mh__peak_groups *pg);
/* As mh__report_group_live at the allocated peak of `device`; `end` is the
 * model after the pass the observer saw. */
int mh__peak_groups_get(const struct mh__peak_groups *pg, const struct mh_model *end, int device,
                        size_t top, struct mh__stack_group **out, size_t *nout,
                        uint64_t *total_bytes, uint64_t *total_count);

#endif
