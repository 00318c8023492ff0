/* prefault.h - maps the pages of a zeroed table or ring before a hot path
 * writes them (src/record/prefault.c). Internal to libmemhist. */
#ifndef MH_RECORD_PREFAULT_H
#define MH_RECORD_PREFAULT_H

#include <stddef.h>

/* Maps the whole pages within [p, p + len) writable now, so that the
 * thread that writes them later takes no page fault; with `huge`, asks for
 * transparent huge pages first (a table probed at random touches every
 * 2 MiB region at once). Never changes their contents, so another thread
 * may be writing them. Best effort: a kernel that refuses the advice
 * (before Linux 5.14, or huge pages off) leaves the faults to the writer. */
void mh__prefault(void *p, size_t len, int huge);

#endif
