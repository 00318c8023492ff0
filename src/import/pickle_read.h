/* pickle_read.h - a strict, safe pickle reader (protocols 0 to 5, data only).
 *
 * Reads memory snapshots written by torch (Python's pickle at protocols 2-5,
 * or TorchScript's pickler) into the value tree of pickle_value.h. It accepts
 * only opcodes that build plain data and refuses every opcode that would
 * import or call code (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, NEWOBJ, NEWOBJ_EX,
 * INST, OBJ, EXT1/2/4, PERSID, BINPERSID) with MH_EUNSAFE, so opening an
 * untrusted snapshot is safe, unlike pickle.load. Malformed input gives
 * MH_EFORMAT, input ending before STOP gives MH_ETRUNCATED, and inputs beyond
 * the limits (memory, nesting, memo size) give MH_ELIMIT; each with a message
 * naming the opcode and its byte offset. It never recurses, so no input can
 * exhaust the C stack. Snapshot import is its consumer. */
#ifndef MH_IMPORT_PICKLE_READ_H
#define MH_IMPORT_PICKLE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "pickle_value.h"

struct mh__pickle_doc;

/* Zero fields mean the defaults. */
struct mh__pickle_limits {
    /* memory the tree, stack and memo may use; 0 = 64 MiB + 16 bytes per
     * input byte */
    uint64_t max_bytes;
    uint32_t max_depth; /* container nesting and open MARKs; 0 = 200 (at most 250) */
};

/* Parses `data[0..len)` up to its STOP opcode (bytes after STOP are ignored,
 * as the viewer's NUL padding). `data` is borrowed: strings in the tree point
 * into it, so it must outlive the document. `lim` may be NULL. On failure
 * returns a negative MH_E* code and, if `err` is not NULL, a one-line message
 * with the byte offset (the document is not created). */
int mh__pickle_parse(const void *data, size_t len, const struct mh__pickle_limits *lim,
                     struct mh__pickle_doc **out, char *err, size_t errlen);
/* The value STOP returned; valid until mh__pickle_doc_free. */
struct mh__pv *mh__pickle_doc_root(const struct mh__pickle_doc *doc);
/* Bytes of memory the document holds. */
uint64_t mh__pickle_doc_bytes(const struct mh__pickle_doc *doc);
/* Protocol named by the PROTO opcode (0 if none). */
int mh__pickle_doc_protocol(const struct mh__pickle_doc *doc);
/* Accepts NULL. */
void mh__pickle_doc_free(struct mh__pickle_doc *doc);

/* Pickle opcode name for a byte ("GLOBAL", ...), or NULL if not an opcode. */
const char *mh__pickle_opcode_name(unsigned char op);

#endif
