/* memhist/reader.h - streaming reader for .memhist files.
 *
 * The reader walks a file chunk by chunk and returns events in file order,
 * keeping the definitions (strings, frames, stacks, devices, metadata) it has
 * seen. It never trusts the input: on damage it stops at the last complete
 * chunk, keeps every event before it, and says where and why. */
#ifndef MEMHIST_READER_H
#define MEMHIST_READER_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mh_reader;

struct mh_frame {
    const char *file; /* borrowed from the reader, valid until mh_reader_close */
    const char *func;
    uint32_t line;
};

struct mh_device_info {
    int device;
    const char *name;     /* borrowed; "" if unknown */
    uint64_t total_bytes; /* 0 if unknown */
};

/* What the trailer says, and what the reader saw. */
struct mh_file_summary {
    uint32_t format_version;
    int has_trailer;                           /* the file was closed properly */
    uint64_t events_by_kind[MH_EV_KIND_COUNT]; /* counted while reading */
    uint64_t events;                           /* total events read */
    uint64_t dropped;                          /* events the recorder dropped (trailer) */
    int damaged;                               /* reading stopped early */
    uint64_t damage_offset;                    /* byte offset where reading stopped */
    uint64_t first_time_ns, last_time_ns;      /* span of event times (0 if none) */
};

/* Opens a file ("-" = stdin). Fails only if the file cannot be opened or does
 * not start with a valid header; later damage is reported by mh_reader_next. */
int mh_reader_open(const char *path, struct mh_reader **out);
/* As mh_reader_open; on failure also writes what went wrong (with the byte
 * offset where it applies) into err. */
int mh_reader_open_detail(const char *path, struct mh_reader **out, char *err, size_t errlen);
/* Reads from memory; `data` is borrowed and must outlive the reader. */
int mh_reader_open_mem(const void *data, size_t len, struct mh_reader **out);

/* Next event: 1 = an event in *ev, 0 = end of file, < 0 = reading stopped
 * (damage); the events returned before stay valid and later calls return the
 * same error. */
int mh_reader_next(struct mh_reader *r, struct mh_event *ev);

/* Starts again from the first event (keeps definitions). Files only, not
 * stdin. */
int mh_reader_rewind(struct mh_reader *r);

/* How far reading has got: the byte offset of the next chunk and the size of
 * the input (0 if unknown: a pipe), for progress reports. */
void mh_reader_position(const struct mh_reader *r, uint64_t *offset, uint64_t *size);

/* Detail for the last error, with the byte offset ("" if none). Borrowed. */
const char *mh_reader_errmsg(const struct mh_reader *r);

/* Definitions. Borrowed pointers stay valid until mh_reader_close.
 * A string id never defined gives NULL. */
const char *mh_reader_string(const struct mh_reader *r, uint32_t id);
int mh_reader_frame(const struct mh_reader *r, uint32_t id, struct mh_frame *out);
/* Frame ids of a stack, innermost first. */
int mh_reader_stack(const struct mh_reader *r, uint32_t id, const uint32_t **frames,
                    size_t *nframes);

/* Metadata value for a key, or NULL. */
const char *mh_reader_meta(const struct mh_reader *r, const char *key);
/* Iterates metadata: i from 0; returns 0 when i is past the end. */
int mh_reader_meta_at(const struct mh_reader *r, size_t i, const char **key, const char **value);
size_t mh_reader_device_count(const struct mh_reader *r);
int mh_reader_device(const struct mh_reader *r, size_t i, struct mh_device_info *out);

/* Summary so far (complete after mh_reader_next returned 0 or an error). */
void mh_reader_summary(const struct mh_reader *r, struct mh_file_summary *out);

void mh_reader_close(struct mh_reader *r);

#ifdef __cplusplus
}
#endif
#endif
