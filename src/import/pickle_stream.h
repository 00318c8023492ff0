/* pickle_stream.h - the strict pickle reader, streaming: hands each element
 * of a memory snapshot's big lists to a sink as soon as it is complete and
 * frees it, so memory follows the largest record, not the file.
 *
 * A first pass (pickle_scan.c) counts how often each memo entry is read
 * back. The second pass runs the reader of pickle_read.h; elements of
 * `segments`, `device_traces[d]` and `external_annotations` of the root dict
 * (or of a bare root list of segments), laid out as Python's pickler writes
 * them, are built in an arena of their own and given to the sink batch by
 * batch (one APPENDS); then the arena is emptied. A memoized value that the
 * pickle reads back later outlives its batch: the sink may turn it into a
 * handle (an id it interned, pickle_value.h MH__PV_HANDLE), small scalar-only
 * values are copied, and memo entries are dropped after their last read.
 * Snapshot import (snapshot_import.c) is the consumer. */
#ifndef MH_IMPORT_PICKLE_STREAM_H
#define MH_IMPORT_PICKLE_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "pickle_read.h"

enum mh__ps_role { MH__PS_SEGMENTS = 1, MH__PS_TRACE, MH__PS_NOTES };

/* Returned when the pickle cannot be streamed (other opcodes or layout):
 * read it whole with mh__pickle_parse instead. */
#define MH__PS_WHOLE 2

struct mh__pickle_sink {
    void *ctx;
    /* Element `pos` of a streamed list (`list`: the device for traces).
     * The value lives until the batch ends. 0 or a negative MH_E* code. */
    int (*item)(void *ctx, int role, uint32_t list, uint64_t pos, const struct mh__pv *item);
    /* A memoized container read back after its batch: 0 with *handle set
     * (type MH__PV_HANDLE), or 1 when the sink has no handle for it. */
    int (*keep)(void *ctx, const struct mh__pv *v, struct mh__pv *handle);
    /* The batch's values are about to be freed (drop caches keyed by them). */
    void (*batch_end)(void *ctx);
    /* Input bytes read so far out of `total`; may be NULL. */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
};

/* As mh__pickle_parse, streaming the big lists to `sink`; their nodes in the
 * returned tree stay empty. `mapped`: data is a private read-only file
 * mapping whose pages behind the reader may be given back. Returns 0,
 * MH__PS_WHOLE (nothing was given to the sink when `*sunk` is 0), or a
 * negative MH_E* code with a message in err. */
int mh__pickle_stream(const void *data, size_t len, const struct mh__pickle_limits *lim,
                      int mapped, const struct mh__pickle_sink *sink, struct mh__pickle_doc **out,
                      int *sunk, char *err, size_t errlen);

/* Pass one: per memo index, how often the pickle reads it back (255 = 255
 * or more), in *refs (malloc'ed, *n entries), up to STOP or to where the
 * reader will fail. Returns 0, MH__PS_WHOLE when the pickle uses the text
 * memo opcodes (left to the whole-tree reader), or MH_ENOMEM. */
int mh__pickle_scan(const unsigned char *data, size_t len, int mapped, uint8_t **refs, size_t *n);

/* Gives back the pages of a private file mapping in [base + *done, base +
 * upto) to the system, page by page; *done advances. */
void mh__pickle_release(const unsigned char *base, size_t *done, size_t upto);

#endif
