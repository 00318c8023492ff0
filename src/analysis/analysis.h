/* analysis.h - a file replayed through the model with allocation
 * lifetimes and categories collected on the way (src/analysis/categories.h),
 * the input of `memhist layers`, `oom`, `diff` and the category and
 * fragmentation parts of `report`; plus helpers those commands share. */
#ifndef MH_ANALYSIS_ANALYSIS_H
#define MH_ANALYSIS_ANALYSIS_H

#include "replay_file.h"
#include "layers.h"
#include "categories.h"

struct mh_analysis {
    struct mh_replay rp; /* reader and fully replayed model */
    struct mh_lifetimes *lt;
};

/* Opens and replays `path` (prints a one-line error naming the file on
 * failure, returns < 0; a damaged file is used up to the damage). */
int mh__analysis_open(const char *path, struct mh_analysis *a);
void mh__analysis_close(struct mh_analysis *a);

/* Index of the rank with the largest peak reserved over its devices. */
size_t mh__analysis_worst(const struct mh_analysis *a, size_t n, uint64_t *peak_reserved);

/* "step 5" or "before step 1". */
const char *mh__step_text(int64_t step, char buf[24]);

#endif
