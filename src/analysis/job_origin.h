/* job_origin.h - the one time origin of several recordings of one job
 * (the rank files of a torchrun job): the earliest start across the files.
 *
 * A recording starts at its header's start_ns (when the recorder opened the
 * file), unless that is later than its first event (a simulated run or an
 * imported snapshot, whose event times are not the wall clock of writing):
 * then at its first event. Every output over several files (`report`'s
 * per-rank times and rank table, `plot`'s time axis, `trace`'s timestamps)
 * counts time from the same origin, so one peak has one time everywhere.
 * Sits beside the session (session.h): reads only headers and first events. */
#ifndef MH_ANALYSIS_JOB_ORIGIN_H
#define MH_ANALYSIS_JOB_ORIGIN_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/reader.h"

/* The start of one recording whose first event is at `first_event_ns`
 * (0 if it has none): the header's start_ns unless that is later. */
uint64_t mh__recording_start(const struct mh_reader *r, uint64_t first_event_ns);

/* The earliest start of `n` recordings: opens each (standard input, "-",
 * is skipped: it can be read once only), reads its header and first event.
 * A file that does not open is reported through diag.h naming it and its
 * error returned. *origin is 0 when no file has an event. */
int mh__job_origin(const char *const *paths, size_t n, uint64_t *origin);

#endif
