/* job_origin.c - the earliest start of several recordings (job_origin.h). */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "job_origin.h"

uint64_t mh__recording_start(const struct mh_reader *r, uint64_t first_event_ns)
{
    const char *text = mh_reader_meta(r, "start_ns");
    char *end = NULL;
    unsigned long long start = text ? strtoull(text, &end, 10) : 0;
    if (!text || end == text || *end || start == 0)
        return first_event_ns;
    return first_event_ns && start > first_event_ns ? first_event_ns : (uint64_t)start;
}

/* The start of one file; 0 when it has no event. */
static int file_start(const char *path, uint64_t *out)
{
    struct mh_reader *r;
    struct mh_event ev;
    char detail[256];
    int rc = mh_reader_open_detail(path, &r, detail, sizeof detail);
    if (rc < 0) {
        mh__diag("%s: %s", path, detail);
        return rc;
    }
    /* damage before the first event leaves the header's start alone */
    uint64_t first = mh_reader_next(r, &ev) > 0 ? ev.time_ns : 0;
    *out = first ? mh__recording_start(r, first) : 0;
    mh_reader_close(r);
    return 0;
}

int mh__job_origin(const char *const *paths, size_t n, uint64_t *origin)
{
    *origin = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t t = 0;
        if (strcmp(paths[i], "-") == 0)
            continue;
        int rc = file_start(paths[i], &t);
        if (rc < 0)
            return rc;
        if (t && (!*origin || t < *origin))
            *origin = t;
    }
    return 0;
}
