/* memhist/arrow.h - a recording's tables as Arrow record batches.
 *
 * libmemhist_arrow.so (src/export, with the analyses it needs) reads a
 * recording and hands its tables out through the Arrow C data and stream
 * interfaces, the ABI every Arrow implementation imports without copying
 * (pyarrow's RecordBatchReader._import_from_c, DuckDB, Polars, arrow-rs, ...).
 * The tables and their columns are documented in docs/export.md with the
 * schema version this header gives:
 *   runs              one row per file: its header and metadata
 *   events            one row per event, with the device's totals after it
 *   steps             the per-step table of `memhist report`
 *   stacks, frames    the interned stacks (one row per frame of a stack)
 *                     and their frames
 *   segments_at_peak  segments and blocks at each device's allocated peak
 * A stream produces its batches on a thread of its own, a few batches
 * ahead of the consumer, so memory stays bounded whatever the length of
 * the recording: the events of a run are never held at once.
 *
 * The library never prints: what it would say (a damaged file read up to
 * its damage, settings that do not parse) is kept as warnings of the file
 * or as the stream's last error. */
#ifndef MEMHIST_ARROW_H
#define MEMHIST_ARROW_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the Arrow C data interface (the published ABI, as the Arrow format
 * specifies it; guarded so that another definition of it may come first) */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};

#endif

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
    int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
    int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
    const char *(*get_last_error)(struct ArrowArrayStream *);
    void (*release)(struct ArrowArrayStream *);
    void *private_data;
};

#endif

/* ---- memhist's tables --------------------------------------------------- */

/* The version of the tables' schemas (docs/export.md): raised whenever a
 * column is added, removed, renamed or retyped. */
#define MH_ARROW_SCHEMA_VERSION 1

int mh_arrow_schema_version(void);
/* The name of table `i` (0, 1, ...), NULL past the last. */
const char *mh_arrow_table_name(size_t i);
/* The schema of `table` (a struct of its columns); the caller releases it.
 * MH_ENOTFOUND for an unknown table. */
int mh_arrow_schema(const char *table, struct ArrowSchema *out);

struct mh_arrow_file;

struct mh_arrow_opts {
    uint32_t batch_rows; /* rows per record batch; 0 = 65536 */
};

/* Opens a recording (a file: its events are read more than once) and reads
 * it once for what its tables depend on (the peaks, the facts behind the
 * categories). On failure returns < 0 with a one-line message naming the
 * file in err (errlen bytes, may be 0). `opts` may be NULL. A damaged file
 * opens: it is read up to its damage, with a warning. */
int mh_arrow_open(const char *path, const struct mh_arrow_opts *opts, struct mh_arrow_file **out,
                  char *err, size_t errlen);
/* Closes the file; streams still open keep what they need until released. */
void mh_arrow_close(struct mh_arrow_file *f);

/* Warning `i` (0, 1, ...) of the file, NULL past the last; borrowed until
 * close. */
const char *mh_arrow_warning(const struct mh_arrow_file *f, size_t i);

/* What the file is, for naming its rows. */
struct mh_arrow_info {
    const char *run; /* the file's id: UTC start time and a hash of its header, metadata
                      * and extent ("20250612T101502Z-3fa9c1d20b7e44a1"); borrowed */
    int64_t rank;    /* from the header, else ".rank<R>" in the name; -1 if neither */
    uint64_t events; /* events read (up to the damage) */
    int damaged;     /* the file is damaged: its tables end at the damage */
};
void mh_arrow_info(const struct mh_arrow_file *f, struct mh_arrow_info *out);

/* Starts a stream of `table`'s record batches (each a struct array of the
 * table's columns; the caller releases the stream). Several streams of one
 * file may be open at once. 0, MH_ENOTFOUND (unknown table) or MH_ENOMEM. */
int mh_arrow_stream(struct mh_arrow_file *f, const char *table, struct ArrowArrayStream *out);

/* How far the file's events streams have got: events replayed of `total`. */
void mh_arrow_progress(const struct mh_arrow_file *f, uint64_t *done, uint64_t *total);

#ifdef __cplusplus
}
#endif
#endif
