/* snapshot_estimate.c - the expected pickle size of a collected snapshot,
 * computed before writing so the CLI can warn about files the browser viewer
 * cannot open (about 500 MB and up). Per-item byte costs follow what
 * snapshot_write.c emits: memoized keys cost 2 bytes, numbers 2-11, each
 * distinct stack is written once and referenced with BINGET afterwards. */
#include <stdlib.h>
#include <string.h>

#include "snapshot_int.h"

#define ENTRY_BYTES 56u /* dict, 5 keys, action, addr, size, stream, time_us */
#define NOTE_BYTES 40u
#define BLOCK_BYTES 40u
#define SEGMENT_BYTES 110u
#define STACK_REF_BYTES 5u

struct est {
    const struct mh_snapshot *s;
    unsigned char *stack_seen, *frame_seen;
    size_t stack_cap, frame_cap;
    uint64_t bytes;
};

static int mark(unsigned char **seen, size_t *cap, uint32_t id)
{
    if (id >= *cap) {
        if (id >= (1u << 28))
            return 1; /* count as new */
        size_t ncap = *cap ? *cap : 4096;
        while (ncap <= id)
            ncap *= 2;
        unsigned char *p = realloc(*seen, ncap);
        if (!p)
            return 1;
        memset(p + *cap, 0, ncap - *cap);
        *seen = p;
        *cap = ncap;
    }
    if ((*seen)[id])
        return 0;
    (*seen)[id] = 1;
    return 1;
}

static void add_stack(struct est *e, uint32_t stack)
{
    e->bytes += STACK_REF_BYTES;
    const uint32_t *frames;
    size_t n;
    if (!stack || !mark(&e->stack_seen, &e->stack_cap, stack) ||
        mh_reader_stack(e->s->reader, stack, &frames, &n) != 0)
        return;
    e->bytes += 4 + 3 * n;
    for (size_t i = 0; i < n; i++) {
        struct mh_frame f = {NULL, NULL, 0};
        if (!mark(&e->frame_seen, &e->frame_cap, frames[i]) ||
            mh_reader_frame(e->s->reader, frames[i], &f) != 0)
            continue;
        e->bytes += 24 + (f.file ? strlen(f.file) : 2) + (f.func ? strlen(f.func) : 2);
    }
}

static int est_block(void *user, const struct mh_segment_view *seg, const struct mh_block_view *b)
{
    struct est *e = user;
    e->bytes += BLOCK_BYTES;
    add_stack(e, b->state == MH_BLOCK_INACTIVE ? 0 : b->stack);
    return 0;
}

static int est_segment(void *user, const struct mh_segment_view *seg)
{
    struct est *e = user;
    e->bytes += SEGMENT_BYTES;
    add_stack(e, seg->stack);
    return 0;
}

uint64_t mh__snapshot_estimate(const struct mh_snapshot *s)
{
    struct est e;
    memset(&e, 0, sizeof e);
    e.s = s;
    e.bytes = 1024; /* settings and framing */
    for (int d = 0; d < s->ndev; d++)
        for (size_t i = 0; i < s->dev[d].len; i++) {
            const struct mh__sentry *x = mh__strace_at(&s->dev[d], i);
            e.bytes += ENTRY_BYTES + (x->step >= 0 || x->phase || x->str ? 4 : 0) +
                       (x->category != MH__SCAT_NONE ? 4 : 0);
            add_stack(&e, x->stack);
        }
    e.bytes += (uint64_t)s->notes.len * NOTE_BYTES;
    for (size_t i = 0; i < mh_model_device_count(s->model); i++) {
        int d = mh_model_device_at(s->model, i);
        if (s->opts.only_device && d != s->opts.device)
            continue;
        mh_model_foreach_segment(s->model, d, est_segment, &e);
        mh_model_foreach_block(s->model, d, est_block, &e);
    }
    free(e.stack_seen);
    free(e.frame_seen);
    return e.bytes;
}
