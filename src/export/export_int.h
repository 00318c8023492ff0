/* export_int.h - what the parts of src/export share: the open file (its
 * first pass, as an analysis), the stream a table's producer runs on, and
 * the routing of the libraries' messages to the file or stream they
 * concern. Internal to src/export.
 *
 * Data flow: mh_arrow_open (export_file.c) replays the file once as an
 * analysis; mh_arrow_stream (export_stream.c) starts a producer thread for
 * one table, which builds record batches (arrow_batch.h) and puts them in
 * a queue of a few batches that the consumer's get_next takes from. The
 * events producer (export_events.c) replays the file once more through a
 * session of its own; the other tables (export_tables.c, export_state.c)
 * come from the first pass, under the file's lock. */
#ifndef MH_EXPORT_EXPORT_INT_H
#define MH_EXPORT_EXPORT_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "analysis.h"
#include "arrow_batch.h"
#include "memhist/arrow.h"
#include "tables.h"

struct mh_arrow_file {
    char *path;
    struct mh__analysis a; /* the first pass; a.session is used under `lock` */
    pthread_mutex_t lock; /* a.session, and the warnings */
    atomic_int refs;      /* the caller's and each open stream's */
    char run[48];
    const char *run_names[1]; /* the run column's dictionary: {run} */
    int64_t rank;
    uint32_t batch_rows;
    char **warnings;
    size_t nwarnings, capwarnings;
    atomic_uint_least64_t progress; /* events replayed by the latest events stream */
};

/* One stream's producer side. */
struct mh__stream;

/* Hands a finished batch to the consumer, waiting while the queue is full.
 * On return the batch belongs to the stream. < 0 when the consumer
 * released the stream (the producer then stops with that code). */
int mh__stream_put(struct mh__stream *st, struct ArrowArray *batch);
struct mh_arrow_file *mh__stream_file(const struct mh__stream *st);

/* A builder of the stream's table, its run column set to the file's run. */
int mh__stream_batch(struct mh__stream *st, int table, const struct mh_reader *r,
                     struct mh__batch **out);
/* Ends the row; when the batch is full, finishes it and puts it. */
int mh__stream_row(struct mh__stream *st, struct mh__batch *b);
/* Puts the rows left in `b`, if any. */
int mh__stream_flush(struct mh__stream *st, struct mh__batch *b);
/* Sets the run and rank columns of the current row. */
void mh__row_run(struct mh__batch *b, const struct mh_arrow_file *f);

/* The producers, each filling its table's stream. */
int mh__produce_events(struct mh__stream *st);
int mh__produce_runs(struct mh__stream *st);
int mh__produce_steps(struct mh__stream *st);
int mh__produce_stacks(struct mh__stream *st);
int mh__produce_frames(struct mh__stream *st);
int mh__produce_segments(struct mh__stream *st);

/* Where the messages of the calling thread's work go (diag.h): warnings
 * to the file's warnings, other messages (errors) to `err`. */
struct mh__msg_route {
    struct mh_arrow_file *file;
    char *err;
    size_t errlen;
};
/* Routes this thread's messages (NULL: drop them); installs the library's
 * message callback on first use. */
void mh__msg_route(const struct mh__msg_route *r);

void mh__file_ref(struct mh_arrow_file *f);
void mh__file_unref(struct mh_arrow_file *f);

#endif
