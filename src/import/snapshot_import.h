/* snapshot_import.h - PyTorch memory snapshot pickle -> .memhist events.
 *
 * Reads a snapshot written by torch 2.0 to 2.15 (_dump_snapshot, protocols
 * 0-5, TorchScript's pickler, legacy `history` blocks, traces without
 * time_us, OOM entries, expandable segments, several devices) with the strict
 * reader of pickle_read.h, and writes it through a writer as events. The
 * state the trace starts from (blocks and segments that were live before the
 * first entry) is rebuilt by replaying the trace backwards from `segments`,
 * as the viewer's State History view does, and written first as events
 * flagged MH_EVF_PREEXISTING, so replaying the output through the model ends
 * exactly at the snapshot's segments; live blocks keep their real size.
 * Step annotations ("step N") become step events; "step N phase" user
 * metadata (as memhist writes it) becomes phase events; other
 * record_function annotations become ranges, and Optimizer.step#... and
 * ProfilerStep#N ranges also give steps and phases with the semantics of a
 * live recording (events flagged MH_EVF_DERIVED). Every field torch wrote is
 * kept (user metadata verbatim, segment frames, pool ids, the settings dict
 * as meta "torch_allocator_settings"), so `memhist snapshot` writes it back. */
#ifndef MH_IMPORT_SNAPSHOT_IMPORT_H
#define MH_IMPORT_SNAPSHOT_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/writer.h"
#include "pickle_read.h"
#include "progress.h"

struct mh__import_info {
    int protocol;     /* pickle protocol (0 if no PROTO opcode) */
    int devices;      /* device_traces entries */
    uint64_t entries; /* trace entries written as events */
    uint64_t skipped; /* entries of unknown or display-only actions */
    uint64_t preexisting_segments, preexisting_blocks;
    uint64_t annotations;
    uint64_t segments, blocks; /* in the snapshot's final state */
    uint64_t inconsistencies;  /* trace entries that contradict the segments */
    int synthetic_times;       /* some entries had no time_us */
    int legacy_history;        /* 2.0 blocks with `history` */
    int overflowed;            /* allocator_settings says the ring wrapped */
    uint64_t steps;            /* complete steps built from Optimizer.step#/ProfilerStep# annotations */
    uint64_t unknown_initial;  /* blocks live before the trace and freed during it:
                                * their real size is unknown (rounded from the request) */    int streamed;              /* read record by record (memory follows the largest
                                * record); 0: read whole (memory follows the file) */
};

struct mh__import_opts {
    const struct mh__pickle_limits *lim; /* NULL: the defaults */
    /* data is a private read-only mapping of the file: pages read may be
     * given back to the system */
    int mapped;
    int whole; /* read the whole tree first instead of streaming */
    /* progress reports ("importing NAME": input bytes read; then "writing
     * NAME's events": entries replayed backwards and written); NULL = the
     * default of progress.h */
    const struct mh__progress *progress;
    const char *name;
};

/* Imports the pickle in data[0..len) into `w` (borrowed; the caller opened it
 * with source "imported" and closes it). `lim` may be NULL. On failure returns
 * a negative MH_E* code with a one-line message in err (parse errors name the
 * opcode and offset, schema errors the path, e.g. "segments[2].blocks[0]"). */
int mh__snapshot_import(const void *data, size_t len, const struct mh__pickle_limits *lim,
                        struct mh_writer *w, struct mh__import_info *info, char *err, size_t errlen);
/* As mh__snapshot_import with options (`o` may be NULL). Snapshots laid out
 * as Python's pickler writes them are streamed (pickle_stream.h): the trace
 * goes to a temporary file when it is large, and memory follows the largest
 * record, not the file; others are read whole, with the same result. */
int mh__snapshot_import_with(const void *data, size_t len, const struct mh__import_opts *o,
                             struct mh_writer *w, struct mh__import_info *info, char *err,
                             size_t errlen);

#endif
