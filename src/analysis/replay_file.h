/* replay_file.h - a .memhist file opened and replayed through the model, the
 * first step of most analyses and commands; plus what a file says about its
 * devices and allocator settings. Sits between src/format (the reader) and
 * the analyses; problems are reported through diag.h, never printed. */
#ifndef MH_ANALYSIS_REPLAY_FILE_H
#define MH_ANALYSIS_REPLAY_FILE_H

#include <stdint.h>

#include "memhist/memhist.h"

/* A file opened and replayed through the model. */
struct mh_replay {
    const char *path;
    struct mh_reader *reader;
    struct mh_model *model;
    struct mh_file_summary summary;
    int read_error; /* negative code if reading stopped on damage */
};
/* Opens `path`, sets the model up from the file's allocator settings, and
 * replays every event (until `stop_after` events if non-zero). Reports a
 * one-line error naming the file through diag.h on failure (returns < 0). A
 * damaged file replays up to the damage, reports a warning and returns 0. */
int mh__replay_open(const char *path, uint64_t stop_after, struct mh_replay *out);
void mh__replay_close(struct mh_replay *rp);
/* Opens a reader; reports the error naming the file on failure. */
int mh__open_reader(const char *path, struct mh_reader **out);
/* What the file says about `device` (name "" and capacity 0 if nothing). */
void mh__device_info(const struct mh_reader *r, int device, struct mh_device_info *out);
/* The allocator settings recorded in a file (meta "alloc_conf"), or defaults
 * (reporting a warning if they do not parse). */
void mh__file_conf(const struct mh_reader *r, struct mh_alloc_conf *conf);

#endif
