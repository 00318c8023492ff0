/* ptrmap.h - an open-addressing map from object addresses to small
 * numbers (src/pyhook/ptrmap.c): the module table of scopehook.c and the
 * code table of scopemon.c map an object to its index + 1 in their own
 * arrays. Keys are never removed (a table is dropped whole). Not
 * thread-safe: its callers hold the GIL. Internal to libmemhist_pyhook. */
#ifndef MEMHIST_PTRMAP_H
#define MEMHIST_PTRMAP_H

#include <stddef.h>
#include <stdint.h>

struct mh__ptrmap {
    uintptr_t *keys; /* 0: an empty slot */
    uint32_t *vals;
    size_t cap, n;
};

/* The value set for `key`, or 0 where it has none. */
uint32_t mh__ptrmap_get(const struct mh__ptrmap *m, uintptr_t key);

/* Sets `key` (non-zero) to `val` (non-zero), growing the table when it is
 * half full: 0, or -1 out of memory (the map is unchanged). */
int mh__ptrmap_put(struct mh__ptrmap *m, uintptr_t key, uint32_t val);

/* Frees the table; the map is empty and usable again. */
void mh__ptrmap_free(struct mh__ptrmap *m);

#endif
