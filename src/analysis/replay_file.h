/* replay_file.h - what one full pass of a replay session (session.h) leaves
 * for the analyses and printers to read: the file's path, its reader
 * (definitions, metadata, devices), the model after the last event, the
 * reader's summary, whether reading stopped on damage and the time origin. A view: the
 * session owns the reader and the model. */
#ifndef MH_ANALYSIS_REPLAY_FILE_H
#define MH_ANALYSIS_REPLAY_FILE_H

#include "session.h"

struct mh__replay {
    const char *path;
    const struct mh_reader *reader;
    const struct mh_model *model;
    struct mh_file_summary summary;
    int read_error; /* negative code if reading stopped on damage */
    /* where printed times count from: the first event, or for several
     * recordings of one job the job's start (job_origin.h) */
    uint64_t t0_ns;
};

#endif
