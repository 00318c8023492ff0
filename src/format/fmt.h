/* fmt.h - constants and helpers shared by the .memhist writer and reader.
 *
 * Internal to src/format (the spec is FORMAT.md next to this file). Holds the
 * magic, chunk types, event column order, sanity limits, the CRC-32C used to
 * detect damage, and the address ring both sides keep in lockstep. */
#ifndef MH_FORMAT_FMT_H
#define MH_FORMAT_FMT_H

#include <stddef.h>
#include <stdint.h>

/* File preamble: 8 magic bytes, then the format version as u32 little endian. */
#define MH__MAGIC "\x89MEMHIST"
#define MH__MAGIC_LEN 8
#define MH__PREAMBLE_LEN 12

/* Chunk frame: type u8, payload length u32 LE, CRC-32C u32 LE over the type
 * byte, the length bytes and the payload. */
#define MH__FRAME_LEN 9

/* Chunk types. Numbers are on disk: never renumber, only append. */
enum mh__chunk_type {
    MH__CH_HEADER = 1,
    MH__CH_STRINGS = 2,
    MH__CH_FRAMES = 3,
    MH__CH_NODES = 4,
    MH__CH_STACKS = 5,
    MH__CH_META = 6,
    MH__CH_DEVICES = 7,
    MH__CH_EVENTS = 8,
    MH__CH_TRAILER = 9,
    MH__CH_DROPPED = 10
};

/* Event columns in the order they appear in an events chunk. */
enum mh__column {
    MH__COL_KIND,
    MH__COL_FLAGS,
    MH__COL_TIME,
    MH__COL_ADDR,
    MH__COL_SIZE,
    MH__COL_STACK,
    MH__COL_STREAM,
    MH__COL_DEVICE,
    MH__COL_THREAD,
    MH__COL_DUR,
    MH__COL_STR,
    MH__COL_STR2,
    MH__COL_AUX,
    MH__COL_CORRELATION,
    MH__COL_POOL0,
    MH__COL_POOL1,
    MH__COL_CTX,
    MH__NCOLS
};

/* Sanity limits; a reader rejects input beyond them (MH_ELIMIT). */
#define MH__MAX_CHUNK_BYTES (64u << 20)
#define MH__MAX_CHUNK_EVENTS 65536u
#define MH__MAX_STRING_BYTES (1u << 20)
#define MH__MAX_IDS (1u << 28)
#define MH__MAX_STACK_DEPTH 65536u
#define MH__MAX_META 4096u /* keys a writer accepts; a reader adds the header's */
#define MH__HEADER_META 5u /* source, library_version, host, pid, start_ns */
#define MH__MAX_DEVICES 4096u
#define MH__MAX_DROP_THREADS 65536u
/* Frames materialized for stacks (4 bytes each, once per distinct stack
 * node): base allowance plus this many per input byte, so a reader's stack
 * memory stays within 64 MiB + 16 bytes per input byte. */
#define MH__STACK_FRAMES_BASE (16u << 20)
#define MH__STACK_FRAMES_PER_BYTE 4u

/* The address ring: the last MH__RING_SIZE non-zero addresses (with their
 * sizes) in event order. An address column value -(d+1) names the entry d
 * pushes back (1 <= d <= MH__RING_MAX_DIST). */
#define MH__RING_SIZE 32768u
#define MH__RING_MAX_DIST 32767u

/* Size column codes (see FORMAT.md): 0 = the ring entry's size. */
static inline uint64_t mh__size_code(uint64_t size, uint64_t pred)
{
    if (size == pred)
        return 0;
    if (size % 512 == 0)
        return (size / 512) * 2 + 1;
    if (size >> 63)
        return size; /* written as a negative int64 with the same bits */
    return size * 2;
}

static inline uint64_t mh__zigzag(uint64_t d)
{
    return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}

static inline uint64_t mh__unzigzag(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

/* CRC-32C of `data` continuing `crc` (0 to start); the _tables variant never
 * uses the CPU's crc32 instruction (the tests compare the two). */
uint32_t mh__crc32c(uint32_t crc, const void *data, size_t len);
uint32_t mh__crc32c_tables(uint32_t crc, const void *data, size_t len);

static inline void mh__put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t mh__get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
