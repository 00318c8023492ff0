/* analysis.h - a recording replayed once through a session (session.h) with
 * the observers the commands ask for: allocation lifetimes and categories
 * (categories.h) always; what the what-if replays read the recording
 * again with (whatif_check.h) and the live groups at each device's allocated peak
 * (device_report.h) on request. The input of `memhist report`, `layers`,
 * `oom` and `diff`; plus helpers those commands share. */
#ifndef MH_ANALYSIS_ANALYSIS_H
#define MH_ANALYSIS_ANALYSIS_H

#include "categories.h"
#include "device_report.h"
#include "growth.h"
#include "layers.h"
#include "replay_file.h"
#include "whatif_check.h"

/* What to gather besides lifetimes. */
struct mh__analysis_want {
    /* gather what the what-if replays read (whatif_check.h), and start the
     * replay the command asks for first during the pass: report's
     * fragmentation what-if (MH__WANT_WHATIF_TREND) or oom's replay under
     * the recorded settings (MH__WANT_WHATIF_OOM); 0 = none */
    int whatif;
    int peak_groups; /* live groups by stack at each device's allocated peak */
    int growth;      /* allocation groups that grow across steps (growth.h) */
};

enum { MH__WANT_WHATIF_TREND = 1, MH__WANT_WHATIF_OOM = 2 };

struct mh__analysis {
    struct mh__session *session;
    struct mh__replay rp;             /* the session after its full pass */
    struct mh_model *model;           /* the model of that pass (rp.model), owned */
    struct mh__lifetimes *lt;         /* that pass's lifetimes: spans, facts, curves and the
                                       * records live at each device's allocated peak */
    struct mh__whatif_source *whatif; /* NULL unless wanted */
    struct mh__peak_groups *peaks;    /* NULL unless wanted */
    struct mh__growth *growth;        /* NULL unless wanted */
};

/* Opens and replays `path` once (reports a one-line error naming the file
 * through diag.h on failure, returns < 0; a damaged file is used up to the
 * damage). `want` may be NULL. */
int mh__analysis_open(const char *path, const struct mh__analysis_want *want,
                      struct mh__analysis *a);
/* As mh__analysis_open on `len` bytes at `data` (borrowed until close);
 * `name` (borrowed too) names it. */
int mh__analysis_open_mem(const void *data, size_t len, const char *name,
                          const struct mh__analysis_want *want, struct mh__analysis *a);
void mh__analysis_close(struct mh__analysis *a);

/* The allocator state after the first `n` events (replayed again through
 * the same session; the caller frees the model). */
int mh__analysis_state_at(const struct mh__analysis *a, uint64_t n, struct mh_model **out);

/* The records live right after each of the `n` event indices `index`, with
 * their categories: one more pass over the file, whose lifetimes (kept
 * records only, mh__lifetimes_records) the caller frees. */
int mh__analysis_moments(const struct mh__analysis *a, const uint64_t *index, size_t n,
                         struct mh__lifetimes **out);

/* As mh__analysis_moments, with the pass another analysis makes: *obs is
 * the observer that gathers the records into *out, for the caller to
 * register on the session (mh__session_observe) for one full pass that
 * someone else runs; *out (whose address the observer keeps: it stays
 * where it is until that pass ended) is complete once the pass has ended,
 * and the caller frees it. */
struct mh__observer;
int mh__analysis_moments_observer(const struct mh__analysis *a, const uint64_t *index, size_t n,
                                  struct mh__lifetimes **out, struct mh__observer *obs);

/* The records live right after each of the `n` event indices `index`, with
 * their categories, in *use: the first pass's when it kept them (a device's
 * allocated peak), else those of one more pass (mh__analysis_moments),
 * which are also in *own for the caller to free (NULL otherwise). */
int mh__analysis_records_at(const struct mh__analysis *a, const uint64_t *index, size_t n,
                            const struct mh__lifetimes **use, struct mh__lifetimes **own);

/* Every allocation's record, classified, handed to `fn` once: when its life
 * ends, or at the end of the run for those still alive (one more pass; fn's
 * first non-zero return ends it and is returned). Records come in the order
 * their lives end, then in no particular order. */
int mh__analysis_each_record(const struct mh__analysis *a,
                             int (*fn)(void *user, const struct mh__alloc_rec *r), void *user);

/* The statistics of the step numbered `step` on `device` of model `m`
 * (mh_model_step); 0, or MH_ENOTFOUND if the device has no such step (the
 * span after its last step marker is none). */
int mh__step_find(const struct mh_model *m, int device, int64_t step, struct mh_step_stats *out);

/* "step 5", or "before the first step" for a negative step (the set-up). */
const char *mh__step_text(int64_t step, char buf[24]);

#endif
