/* prefault.c - page mapping ahead of the hot paths (prefault.h): the drain
 * maps a ring's next slots before its producer reaches them, the stack
 * capture maps its trie and code tables when recording starts. */
#include "prefault.h"

#include <stdint.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

void mh__prefault(void *p, size_t len, int huge)
{
    uintptr_t from = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
    uintptr_t to = ((uintptr_t)p + len) & ~(uintptr_t)4095;
    if (to <= from)
        return;
    if (huge)
        madvise((void *)from, to - from, MADV_HUGEPAGE);
    madvise((void *)from, to - from, MADV_POPULATE_WRITE);
}
