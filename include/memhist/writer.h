/* memhist/writer.h - synchronous .memhist writer.
 *
 * Encodes events and definitions into length-prefixed msgpack chunks (spec:
 * src/format/FORMAT.md). Single-threaded: the recorder's drain thread owns
 * one, and offline producers (the simulator, snapshot import) use it
 * directly. Writers never seek, so output can go to a pipe. The first error
 * is kept and returned again by mh_writer_close. */
#ifndef MEMHIST_WRITER_H
#define MEMHIST_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mh_writer;

struct mh_writer_opts {
    const char *source;    /* "recorded" (default), "simulated", "imported" */
    uint32_t chunk_events; /* events per chunk before it is sealed, 0 = 4096 */
};

/* Creates `path` ("-" = stdout). `opts` may be NULL. On MH_EIO errno says
 * why the file could not be created. */
int mh_writer_open(const char *path, const struct mh_writer_opts *opts, struct mh_writer **out);
/* Writes to `fd`; the descriptor is not closed by mh_writer_close. */
int mh_writer_open_fd(int fd, const struct mh_writer_opts *opts, struct mh_writer **out);
/* Writes into a growing memory buffer (see mh_writer_mem). */
int mh_writer_open_mem(const struct mh_writer_opts *opts, struct mh_writer **out);
/* Bytes written so far to a memory writer; borrowed until the next write or
 * mh_writer_free_mem. After close the buffer is kept until mh_writer_free_mem. */
int mh_writer_mem(const struct mh_writer *w, const void **data, size_t *len);

/* Interning: same content gives the same id (> 0). The definition is written
 * before the next event chunk. Negative on error. */
int64_t mh_writer_intern_string(struct mh_writer *w, const char *s, size_t len);
int64_t mh_writer_intern_frame(struct mh_writer *w, const char *file, const char *func,
                               uint32_t line);
/* Frames innermost first. */
int64_t mh_writer_intern_stack(struct mh_writer *w, const uint32_t *frames, size_t nframes);

int mh_writer_set_meta(struct mh_writer *w, const char *key, const char *value);
int mh_writer_set_device(struct mh_writer *w, int device, const char *name, uint64_t total_bytes);

/* Appends one event. Ids it uses must have been interned by this writer. */
int mh_writer_event(struct mh_writer *w, const struct mh_event *ev);
/* Appends n events in order, as mh_writer_event each, except that an event
 * naming a stack or string this writer has not interned is left out and
 * counted as lost by its thread (mh_writer_add_thread_dropped); *refused
 * (may be NULL) says how many. Returns 0 or the writer's error. */
int mh_writer_events(struct mh_writer *w, const struct mh_event *evs, size_t n, size_t *refused);
/* Adds to the count of events lost by `thread` (dropped or refused). The
 * cumulative counts per thread are written with every following flush and
 * their total in the trailer, so a file cut before its trailer still has
 * them. Returns 0 or a negative error (the total is counted regardless). */
int mh_writer_add_thread_dropped(struct mh_writer *w, uint32_t thread, uint64_t n);
/* The same for events of no known thread (thread 0). */
void mh_writer_add_dropped(struct mh_writer *w, uint64_t n);

/* Seals the current chunk and flushes the output. */
int mh_writer_flush(struct mh_writer *w);
/* Bytes written so far (after the last flush). */
uint64_t mh_writer_bytes(const struct mh_writer *w);

/* Writes the trailer and closes. Returns the first error met; on MH_EIO
 * errno holds the system's reason (ENOSPC, EFBIG, ...). For a memory
 * writer the buffer stays readable through `w` until mh_writer_free_mem.
 * Accepts NULL. */
int mh_writer_close(struct mh_writer *w);
/* Frees a closed memory writer. Accepts NULL. */
void mh_writer_free_mem(struct mh_writer *w);

#ifdef __cplusplus
}
#endif
#endif
