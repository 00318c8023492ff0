/* spool.h - bytes written once and read back in order: an analysis's
 * intermediate results that grow with the run (one summary per step), kept
 * in memory up to a small size and beyond it in an unlinked temporary file
 * (in $TMPDIR, else /tmp), so a long run costs disk, not memory. If no
 * temporary file can be made, the bytes stay in memory. */
#ifndef MH_ANALYSIS_SPOOL_H
#define MH_ANALYSIS_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct mh__spool {
    unsigned char *buf; /* the bytes in memory, or the write/read buffer once spilled */
    size_t nbuf, capbuf;
    uint64_t total; /* bytes written */
    uint64_t pos;   /* bytes read */
    size_t bufpos;  /* reading: next byte of buf */
    int fd;         /* the temporary file, -1 while in memory */
    int reading;
    int no_file; /* no temporary file could be made: all in memory */
    int error;   /* the first MH_E* met */
};

void mh__spool_init(struct mh__spool *s);
void mh__spool_free(struct mh__spool *s);
/* Appends `n` bytes (before the first read). Returns 0 or MH_ENOMEM/MH_EIO. */
int mh__spool_write(struct mh__spool *s, const void *p, size_t n);
/* Starts reading from the first byte. */
int mh__spool_rewind(struct mh__spool *s);
/* Reads `n` bytes; returns 0, 1 at the end, or MH_EIO. */
int mh__spool_read(struct mh__spool *s, void *p, size_t n);

#endif
