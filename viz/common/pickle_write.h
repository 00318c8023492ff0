/* pickle_write.h - a streaming pickle writer for memory_viz snapshots.
 *
 * Emits pickle protocol 4 using only the opcodes the web viewer's unpickler
 * accepts (reference pytorch-allocator.md section 4.3): PROTO, STOP, BININT1/
 * BININT2/BININT/LONG1, BINFLOAT, SHORT_BINUNICODE/BINUNICODE, NONE/NEWTRUE/
 * NEWFALSE, EMPTY_DICT/EMPTY_LIST/EMPTY_TUPLE, MARK, SETITEMS, APPENDS,
 * TUPLE2, MEMOIZE and BINGET/LONG_BINGET. No FRAME. Values are written in
 * pickle order (a container, MARK, its items, SETITEMS/APPENDS), so any size
 * streams through a small buffer into a sink. The caller decides what is
 * memoized and shared (snapshot_export.c shares frames, never entry or block
 * dicts). Errors are kept: the first one is returned by mh__pw_finish. */
#ifndef MH_VIZ_PICKLE_WRITE_H
#define MH_VIZ_PICKLE_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "sink.h"

#define MH__PW_BUF 65536

/* Items per APPENDS/SETITEMS batch, as Python's pickler (1000). */
#define MH__PW_BATCH 1000

struct mh__pw {
    struct mh__sink *sink; /* borrowed */
    uint32_t memo_next;   /* index the next MEMOIZE assigns */
    int error;
    size_t len;
    unsigned char buf[MH__PW_BUF];
};

/* Starts a pickle (PROTO 4). The writer is large: allocate it, don't put it
 * on a small stack. */
void mh__pw_init(struct mh__pw *w, struct mh__sink *sink);
void mh__pw_int(struct mh__pw *w, int64_t x);
void mh__pw_uint(struct mh__pw *w, uint64_t x);
void mh__pw_float(struct mh__pw *w, double x);
void mh__pw_bool(struct mh__pw *w, int b);
void mh__pw_none(struct mh__pw *w);
void mh__pw_str(struct mh__pw *w, const char *s, size_t len);
void mh__pw_cstr(struct mh__pw *w, const char *s);
void mh__pw_empty_dict(struct mh__pw *w);
void mh__pw_empty_list(struct mh__pw *w);
void mh__pw_empty_tuple(struct mh__pw *w);
void mh__pw_mark(struct mh__pw *w);
void mh__pw_setitems(struct mh__pw *w);
void mh__pw_appends(struct mh__pw *w);
void mh__pw_tuple2(struct mh__pw *w);
/* MEMOIZE the value on top; returns its memo index. */
uint32_t mh__pw_memoize(struct mh__pw *w);
/* Pushes memo entry `idx` again (BINGET or LONG_BINGET). */
void mh__pw_get(struct mh__pw *w, uint32_t idx);
/* Writes STOP, flushes into the sink; returns the first error (0 if none). */
int mh__pw_finish(struct mh__pw *w);
/* Bytes produced so far (flushed or buffered). */
uint64_t mh__pw_bytes(const struct mh__pw *w);

/* A list written in batches: mh__pw_list_begin, then mh__pw_list_item after
 * each item, then mh__pw_list_end. The count lives in the caller. */
void mh__pw_list_begin(struct mh__pw *w);
void mh__pw_list_item(struct mh__pw *w, uint64_t *count);
void mh__pw_list_end(struct mh__pw *w, uint64_t count);

#endif
