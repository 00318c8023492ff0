/* pb_wire.h - a small writer of the protocol buffer wire format, for the
 * Perfetto trace (trace_pftrace.c). It builds one message at a time in a
 * growing byte buffer that the caller flushes and resets: a trace is a
 * stream of small packets, so the buffer stays the size of the largest one.
 *
 * The wire format (protobuf.dev, "Encoding"): a message is a sequence of
 * fields, each a key varint (field number << 3 | wire type) and a value:
 * wire type 0, a varint (7 bits a byte, least significant first, the high
 * bit set on every byte but the last; a negative int64 takes 10 bytes);
 * wire type 1, 8 bytes little-endian (fixed64); wire type 2, a varint
 * length and that many bytes (strings, bytes, nested messages). A nested
 * message's length is not known when it begins: mh__pb_begin writes the key
 * and remembers where the body starts, mh__pb_end moves the body up by the
 * size of its length varint and writes the length, so every length takes
 * its shortest encoding. Owns its buffer; the first failure (no memory,
 * nesting deeper than MH__PB_MAX_DEPTH, an end without a begin) is kept in
 * `error` and later writes are ignored. */
#ifndef MH_VIZ_PB_WIRE_H
#define MH_VIZ_PB_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define MH__PB_MAX_DEPTH 8
#define MH__PB_VARINT_MAX 10

struct mh__pb {
    uint8_t *buf;
    size_t len, cap;
    size_t open[MH__PB_MAX_DEPTH]; /* where each open message's body starts */
    int depth;
    int error; /* 0 or a negative MH_E* code */
};

void mh__pb_init(struct mh__pb *p);
void mh__pb_free(struct mh__pb *p);
/* Empties the buffer (keeps its memory and the error). */
void mh__pb_reset(struct mh__pb *p);

/* Encodes v as a varint into out; returns its length (1..10). */
size_t mh__pb_varint(uint8_t out[MH__PB_VARINT_MAX], uint64_t v);
/* Bytes of v as a varint. */
size_t mh__pb_varint_len(uint64_t v);

/* Fields. `field` is the field number (1 .. 2^29 - 1). */
void mh__pb_uint(struct mh__pb *p, uint32_t field, uint64_t v);   /* uint32/64, bool, enum */
void mh__pb_int(struct mh__pb *p, uint32_t field, int64_t v);     /* int32/64 */
void mh__pb_fixed64(struct mh__pb *p, uint32_t field, uint64_t v);
void mh__pb_bytes(struct mh__pb *p, uint32_t field, const void *data, size_t len);
void mh__pb_string(struct mh__pb *p, uint32_t field, const char *s);
/* A nested message: fields written until the matching mh__pb_end are its body. */
void mh__pb_begin(struct mh__pb *p, uint32_t field);
void mh__pb_end(struct mh__pb *p);

#endif
