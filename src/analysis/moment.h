/* moment.h - the one moment a command shows or centres on: a device's
 * allocated peak, its last OOM, or a time after the first event (`--at
 * peak|oom|SECONDS` of flame and the segment plot, `--around peak|oom` of
 * trace), found the same way for each. The peak and the OOMs come from a
 * model that replayed the file (the first pass), a time from one more pass
 * that stops just after it. */
#ifndef MH_ANALYSIS_MOMENT_H
#define MH_ANALYSIS_MOMENT_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/model.h"
#include "session.h"

enum mh__moment_kind { MH__MOMENT_PEAK, MH__MOMENT_OOM, MH__MOMENT_TIME };

struct mh__moment {
    int found;
    int device;
    uint64_t index;   /* the state right after this event */
    uint64_t time_ns; /* absolute (ns since the Unix epoch) */
    int64_t step;     /* the device's step then (-1: before the first) */
    uint64_t value;   /* the peak's allocated bytes, the OOM's request, 0 for a time */
};

/* A device's allocated peak or its last OOM (MH__MOMENT_PEAK, MH__MOMENT_OOM)
 * in model `m`; with `device` < 0, the highest peak of any device or the
 * last OOM of any. out->found is 0 when there is none. */
void mh__moment_in_model(const struct mh_model *m, int kind, int device, struct mh__moment *out);

/* `t0` of mh__moment_at_time: the time of the pass's first event. */
#define MH__MOMENT_FIRST_EVENT UINT64_MAX

/* The last event at or before `at_ns` after `t0` (an absolute time: the
 * job's start, or MH__MOMENT_FIRST_EVENT), found by one pass of session `s`
 * that ends just after it. Returns 0 (out->found 0 when the run has no
 * event by then) or the session's error (reported by it). */
int mh__moment_at_time(struct mh__session *s, uint64_t t0, uint64_t at_ns, struct mh__moment *out);

#endif
