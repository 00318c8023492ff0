/* event_pack.h - events kept in memory in a compact form, for a recording
 * that cannot be read twice (standard input): each event is its kind, its
 * flags, a mask of its non-zero fields and those fields as variable-length
 * integers, times and addresses as differences from the event before.
 * About a fifth of the size of struct mh_event on allocator streams. The
 * what-if replays read such a copy where they cannot reopen the file
 * (whatif_source.c). Internal to src/analysis. */
#ifndef MH_ANALYSIS_EVENT_PACK_H
#define MH_ANALYSIS_EVENT_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/event.h"

struct mh__evpack;

int mh__evpack_new(struct mh__evpack **out);
void mh__evpack_free(struct mh__evpack *p);
/* Appends one event. Returns 0 or MH_ENOMEM. */
int mh__evpack_add(struct mh__evpack *p, const struct mh_event *ev);
/* Bytes the packed events take. */
uint64_t mh__evpack_bytes(const struct mh__evpack *p);

/* Reads a pack from its first event; any number at once, on any thread,
 * while the pack is not added to. */
struct mh__evpack_cursor {
    const struct mh__evpack *p;
    size_t block, off;
    uint64_t done; /* bytes read */
    struct mh_event prev;
};
void mh__evpack_cursor_init(struct mh__evpack_cursor *c, const struct mh__evpack *p);
/* 1 and the next event in *ev, 0 after the last. */
int mh__evpack_next(struct mh__evpack_cursor *c, struct mh_event *ev);

#endif
