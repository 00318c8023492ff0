/* writer_int.h - the state of a .memhist writer, shared by the files that
 * implement it: writer.c (sink, chunk framing, meta, devices, trailer),
 * writer_intern.c (interning tables and definition chunks) and
 * writer_events.c (column encoding of event chunks). Internal to src/format. */
#ifndef MH_FORMAT_WRITER_INT_H
#define MH_FORMAT_WRITER_INT_H

#include <msgpack.h>

#include "fmt.h"
#include "memhist/event.h"

/* An interning table: byte keys -> sequential ids (1, 2, ...). Keys are kept
 * in one arena so definitions can be written later from the same bytes. */
struct mh__itab {
    uint8_t *arena;
    size_t alen, acap;
    size_t *off;      /* per id - 1: offset of the key in the arena */
    uint32_t *len;    /* per id - 1: key length */
    uint32_t count;   /* ids handed out */
    uint32_t cap;     /* capacity of off/len */
    uint32_t written; /* ids whose definition is on disk */
    uint32_t *slots;  /* open addressing: id or 0 */
    uint32_t nslots;  /* power of two */
};

struct mh__kv {
    char *key, *value;
};

struct mh__dev {
    int device;
    char *name;
    uint64_t total;
};

/* Events one thread lost (dropped by the recorder or refused as invalid). */
struct mh__tdrop {
    uint32_t thread;
    uint64_t count;
};

struct mh__amap_slot {
    uint64_t addr;
    uint64_t seq;
};

struct mh_writer {
    int fd, own_fd, is_mem, closed;
    int err, err_errno;
    msgpack_sbuffer out; /* staged bytes; for a memory writer, the whole file */
    msgpack_packer pk;   /* packs into `out` */
    uint64_t bytes;      /* bytes handed to the sink */
    uint32_t chunk_events;

    struct mh_event *evs; /* events of the open chunk */
    uint32_t nev;
    uint64_t *colv;  /* per-column scratch: values */
    uint8_t *coln;   /* per-column scratch: value is a negative int */
    uint64_t *colv2; /* size column scratch (filled with the addresses) */
    uint8_t *coln2;
    uint64_t by_kind[256];
    uint64_t events, dropped;
    uint64_t events_staged;  /* events in sealed chunks */
    uint64_t events_out;     /* events in chunks handed to the sink */
    uint64_t chunks;         /* chunks framed, the trailer excluded */
    uint32_t chain;          /* CRC-32C over the chunks' CRCs, in order */
    struct mh__tdrop *tdrop; /* dropped events per thread, cumulative */
    uint32_t ntdrop, tdrop_cap;
    int tdrop_dirty; /* a dropped chunk is due */

    /* address ring, mirrored by the reader (fmt.h) */
    uint64_t *ring_addr, *ring_size;
    uint64_t ring_pos, prev_addr;
    struct mh__amap_slot *amap; /* addr -> last push, direct mapped */

    struct mh__itab strings, frames, nodes, stacks;
    struct mh__kv *meta;
    uint32_t nmeta, meta_cap, meta_written;
    struct mh__dev *devs;
    uint32_t ndevs, devs_cap, devs_written;
};

/* Chunk framing: begin reserves the frame, end fills it in and may push the
 * staged bytes to the sink. Payload is packed with w->pk in between. */
size_t mh__w_begin(struct mh_writer *w);
int mh__w_end(struct mh_writer *w, size_t start, uint8_t type);
/* Records the first error; returns it. */
int mh__w_fail(struct mh_writer *w, int code, int errnum);

/* Writes definition chunks for everything interned but not yet written. */
int mh__w_write_defs(struct mh_writer *w);
/* Encodes the open events chunk (w->evs[0..nev)) and empties it. */
int mh__w_write_events(struct mh_writer *w);
void mh__w_intern_free(struct mh_writer *w);

/* Writes the dropped chunk when a count changed since the last one. */
int mh__w_write_dropped(struct mh_writer *w);
void mh__w_dropped_free(struct mh_writer *w);

/* errno of the first sink error (0 if none); the recorder reports it. */
int mh__writer_errno(const struct mh_writer *w);
/* Events handed to the sink (the recorder's `written` count). */
uint64_t mh__writer_events_out(const struct mh_writer *w);

#endif
