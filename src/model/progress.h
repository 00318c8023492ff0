/* progress.h - how the offline libraries tell how far long work has got
 * without printing: a callback, handed to a replay session (session.h) or
 * an importer, called every so often with the units done of the total. A program installs a default once (as with diag.h) that every
 * session and importer starts with; src/cli draws it as the progress line
 * on stderr (src/cli/progress_line.c). Lives in the lowest offline library so
 * every one above it can report. */
#ifndef MH_MODEL_PROGRESS_H
#define MH_MODEL_PROGRESS_H

#include <stdint.h>

struct mh__progress {
    /* `what` names one piece of work ("reading run.memhist"; borrowed for
     * the call); `done` of `total` units (bytes of a file, events of a
     * replay); `total` 0 = unknown, then `done` is in bytes. A call with
     * done == total ends that piece of work. Pieces with different names may be reported from
     * several threads at once. NULL = no reports. */
    void (*fn)(void *user, const char *what, uint64_t done, uint64_t total);
    void *user;
};

/* Installs the default (copied; NULL = none). Not thread-safe: call it
 * before the work starts. */
void mh__progress_set_default(const struct mh__progress *p);
/* The default: a struct with fn NULL when none was installed. */
struct mh__progress mh__progress_default(void);

static inline void mh__progress_report(const struct mh__progress *p, const char *what,
                                       uint64_t done, uint64_t total)
{
    if (p && p->fn)
        p->fn(p->user, what, done, total);
}

#endif
