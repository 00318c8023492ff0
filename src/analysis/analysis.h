/* analysis.h - a recording replayed once through a session (session.h) with
 * the observers the commands ask for: allocation lifetimes and categories
 * (categories.h) always; what the what-if replays read the recording
 * again with (whatif_check.h) and the live groups at each device's allocated peak
 * (device_report.h) on request. The input of `memhist report`, `layers`,
 * `oom` and `diff`; plus helpers those commands share. */
#ifndef MH_ANALYSIS_ANALYSIS_H
#define MH_ANALYSIS_ANALYSIS_H

#include "replay_file.h"
#include "layers.h"
#include "categories.h"
#include "whatif_check.h"
#include "device_report.h"
#include "growth.h"

/* What to gather besides lifetimes. */
struct mh_analysis_want {
    /* gather what the what-if replays read (whatif_check.h), and start the
     * replay the command asks for first during the pass: report's
     * fragmentation what-if (MH_WANT_WHATIF_TREND) or oom's replay under
     * the recorded settings (MH_WANT_WHATIF_OOM); 0 = none */
    int whatif;
    int peak_groups; /* live groups by stack at each device's allocated peak */
    int growth;      /* allocation groups that grow across steps (growth.h) */
};

enum { MH_WANT_WHATIF_TREND = 1, MH_WANT_WHATIF_OOM = 2 };

struct mh_analysis {
    struct mh_session *session;
    struct mh_replay rp; /* the session after its full pass */
    struct mh_lifetimes *lt;
    struct mh_whatif_source *whatif;  /* NULL unless wanted */
    struct mh_peak_groups *peaks;     /* NULL unless wanted */
    struct mh_growth *growth;         /* NULL unless wanted */
    void *prepared; /* a command's own result for this file, set and freed by
                     * the command (src/cli/multi.c's prepare hook); NULL */
};

/* Opens and replays `path` once (reports a one-line error naming the file
 * through diag.h on failure, returns < 0; a damaged file is used up to the
 * damage). `want` may be NULL. */
int mh__analysis_open(const char *path, const struct mh_analysis_want *want,
                      struct mh_analysis *a);
void mh__analysis_close(struct mh_analysis *a);

/* The allocator state after the first `n` events (replayed again through
 * the same session; the caller frees the model). */
int mh__analysis_state_at(const struct mh_analysis *a, uint64_t n, struct mh_model **out);

/* Index of the rank with the largest peak reserved over its devices. */
size_t mh__analysis_worst(const struct mh_analysis *a, size_t n, uint64_t *peak_reserved);

/* "step 5", or "before the first step" for a negative step (the set-up). */
const char *mh__step_text(int64_t step, char buf[24]);

#endif
