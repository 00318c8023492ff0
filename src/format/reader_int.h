/* reader_int.h - the state of a .memhist reader, shared by reader.c (input,
 * chunk framing, damage, summary), reader_defs.c (definitions, header,
 * trailer) and reader_events.c (column decoding). Internal to src/format. */
#ifndef MH_FORMAT_READER_INT_H
#define MH_FORMAT_READER_INT_H

#include <stdio.h>

#include "fmt.h"
#include "memhist/reader.h"
#include "mpdec.h"

/* Blocks of memory whose addresses never change: definitions handed out as
 * borrowed pointers live here until the reader closes. */
struct mh__arena_block;
struct mh__arena {
    struct mh__arena_block *head;
};

struct mh__rframe {
    uint32_t file, func, line;
};

struct mh__rnode {
    uint32_t parent, frame, depth;
    const uint32_t *frames; /* materialized once, for the first stack naming it */
};

struct mh__rstack {
    const uint32_t *frames;
    uint32_t n;
};

struct mh__rkv {
    const char *key, *value;
};

struct mh__vec {
    void *p;
    uint32_t n, cap;
};

struct mh_reader {
    FILE *f;
    int own_f, seekable;
    const uint8_t *mem;
    size_t mem_len;
    uint8_t *buf; /* one chunk read from a file */
    size_t buf_cap;
    uint64_t off, data_off;  /* next chunk; first chunk after the header */
    uint64_t size;           /* bytes in the input; 0 if unknown (a pipe) */
    uint64_t consumed;       /* bytes read so far, for limits */
    uint64_t chunks;         /* chunks read, the trailer excluded */
    uint32_t chain, chain0;  /* CRC-32C over the chunk CRCs; its value after the header */
    uint64_t events_decoded; /* events in the events chunks read */
    uint64_t drop_total;     /* the last dropped chunk's total */
    int has_drop;
    int err, done;
    char errmsg[256];

    struct mh_event *evs; /* decoded events of the current chunk */
    uint32_t nev, iev, evs_cap;
    uint64_t *cv, *cv2; /* column scratch */
    uint8_t *cn, *cn2;
    uint64_t *ring_addr, *ring_size;
    uint64_t ring_pos, prev_addr;

    struct mh__arena arena;
    struct mh__vec strings; /* const char * per id - 1 */
    struct mh__vec frames;  /* struct mh__rframe */
    struct mh__vec nodes;   /* struct mh__rnode */
    struct mh__vec stacks;  /* struct mh__rstack */
    uint64_t stack_frames;  /* frames materialized for stacks */
    struct mh__vec meta;    /* struct mh__rkv */
    struct mh__vec devices; /* struct mh_device_info */

    struct mh_file_summary sum;
};

/* Sets the error (first one wins) with a message naming the byte offset;
 * returns the code. */
int mh__r_fail(struct mh_reader *r, int code, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Chunk handlers: payload [p, p+len) of a chunk at file offset `off`. */
int mh__r_header(struct mh_reader *r, const uint8_t *p, size_t len, uint64_t off);
int mh__r_defs(struct mh_reader *r, uint8_t type, const uint8_t *p, size_t len, uint64_t off);
int mh__r_trailer(struct mh_reader *r, const uint8_t *p, size_t len, uint64_t off);
int mh__r_dropped(struct mh_reader *r, const uint8_t *p, size_t len, uint64_t off);
int mh__r_events(struct mh_reader *r, const uint8_t *p, size_t len, uint64_t off);

void mh__r_defs_free(struct mh_reader *r);

#endif
