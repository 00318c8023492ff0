/* diag.h - how the offline libraries say something to the user without
 * printing: warnings and errors that name a file (a damaged recording,
 * allocator settings that do not parse) go to one callback the program
 * installs; src/cli installs one that writes "memhist: <message>" to stderr.
 * Without a callback messages are dropped. Lives in the lowest offline
 * library, beside progress.h, so the simulator and the importer can warn
 * as the analyses do. */
#ifndef MH_MODEL_DIAG_H
#define MH_MODEL_DIAG_H

typedef void (*mh__diag_fn)(void *user, const char *message);

/* Installs the callback (NULL: drop messages). */
void mh__diag_set(mh__diag_fn fn, void *user);
/* Formats one message and hands it to the callback. */
void mh__diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
