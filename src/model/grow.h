/* grow.h - the growable array every offline module uses: room for one more
 * element, doubling the capacity (starting at `first`). Header-only; the
 * lowest offline library (src/model) offers it to the ones above it. */
#ifndef MH_MODEL_GROW_H
#define MH_MODEL_GROW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"

/* Makes room for element `n` of `*items` (`*cap` elements of `size`
 * bytes). Returns 0 or MH_ENOMEM (the array is left as it was). */
static inline int mh__grow(void *items, size_t *cap, size_t n, size_t size, size_t first)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : first;
    if (nc <= n || nc > SIZE_MAX / size)
        return MH_ENOMEM;
    void *old, *q;
    memcpy(&old, items, sizeof old); /* the caller's pointer, whatever its type */
    if (!(q = realloc(old, nc * size)))
        return MH_ENOMEM;
    memcpy(items, &q, sizeof q);
    *cap = nc;
    return 0;
}

/* MH__GROW(array, used, cap, first): mh__grow for a typed array. */
#define MH__GROW(arr, n, cap, first) mh__grow(&(arr), &(cap), (n), sizeof *(arr), (first))

#endif
