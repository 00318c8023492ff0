/* snapshot_estimate.c - the expected pickle size of a collected snapshot,
 * computed before writing so the CLI can warn about files the browser viewer
 * cannot open (about 500 MB and up). The costs follow what snapshot_write.c
 * and pickle_write.h emit, opcode by opcode: each trace entry's integers at
 * their encoded length, memoized keys and repeated user_metadata texts as
 * memo references (2 bytes below memo index 256, 5 above), each distinct
 * stack and frame written in full once and referenced afterwards. Segments,
 * blocks and annotations take typical sizes; the result is within a few
 * percent of the written file on long runs. */
#include <stdlib.h>
#include <string.h>

#include "categories.h"
#include "pickle_write.h"
#include "snapshot_int.h"

#define NOTE_BYTES 40u
#define BLOCK_BYTES 40u
#define SEGMENT_BYTES 110u
#define KEYS_MEMO 24u /* the dict keys and action names, memoized first */

struct est {
    const struct mh_snapshot *s;
    unsigned char *stack_seen, *frame_seen;
    size_t stack_cap, frame_cap;
    uint64_t bytes;
    uint64_t memo; /* memo indices handed out so far */
    char last_um[512];
    int have_um;
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

/* Bytes of mh__pw_uint(x). */
static unsigned int_len(uint64_t x)
{
    if (x < 256)
        return 2;
    if (x < 65536)
        return 3;
    if (x <= INT32_MAX)
        return 5;
    if (x > INT64_MAX)
        return 11;
    unsigned n = 1;
    while (n < 8 && x >= (1ull << (8 * n - 1)))
        n++;
    return 2 + n;
}

static unsigned str_len(size_t len)
{
    return (unsigned)len + (len < 256 ? 2 : 5);
}

static unsigned get_len(const struct est *e)
{
    return e->memo < 256 ? 2 : 5;
}

/* A memoized object: MEMOIZE after it, and its index taken. */
static unsigned memoize(struct est *e)
{
    e->memo++;
    return 1;
}

static uint64_t frame_bytes(struct est *e, uint32_t id)
{
    struct mh_frame f = {NULL, NULL, 0};
    if (!mark(&e->frame_seen, &e->frame_cap, id))
        return get_len(e);
    mh_reader_frame(e->s->reader, id, &f);
    return 2 + 3 * 2 + str_len(f.func ? strlen(f.func) : 2) +
           str_len(f.file ? strlen(f.file) : 2) + int_len(f.line) + 1 + memoize(e);
}

/* The frames list of a stack: in full the first time, then a reference. */
static void add_stack(struct est *e, uint32_t stack)
{
    const uint32_t *frames;
    size_t n;
    if (!stack || mh_reader_stack(e->s->reader, stack, &frames, &n) != 0 || n == 0) {
        e->bytes += 1;
        return;
    }
    if (!mark(&e->stack_seen, &e->stack_cap, stack)) {
        e->bytes += get_len(e);
        return;
    }
    e->bytes += 2 + 1 + n / MH_PW_BATCH * 2; /* list, mark, appends */
    for (size_t i = 0; i < n; i++)
        e->bytes += frame_bytes(e, frames[i]);
    e->bytes += memoize(e);
}

/* user_metadata: a reference when it repeats the previous entry's text. */
static void add_user(struct est *e, const struct mh__sentry *x)
{
    char buf[sizeof e->last_um];
    size_t n = mh__snapshot_user_text(e->s, x, buf, sizeof buf);
    if (n == 0)
        return;
    e->bytes += 2;
    if (e->have_um && strcmp(buf, e->last_um) == 0) {
        e->bytes += get_len(e);
        return;
    }
    e->bytes += str_len(n) + memoize(e);
    memcpy(e->last_um, buf, n + 1);
    e->have_um = 1;
}

static void add_entry(struct est *e, const struct mh__sentry *x)
{
    /* dict, mark, setitems; action, its value and the four numbers' keys */
    e->bytes += 3 + 6 * 2 + int_len(x->addr) + int_len(x->size) + int_len(x->stream) +
                int_len(x->time_ns / 1000);
    if (x->stack) {
        e->bytes += 2;
        add_stack(e, x->stack);
    }
    if (x->str2)
        e->bytes += 2 + get_len(e);
    add_user(e, x);
    if (x->pool[0] || x->pool[1])
        e->bytes += 2 + int_len(x->pool[0]) + int_len(x->pool[1]) + 1;
    if (x->category < MH_CAT_COUNT)
        e->bytes += 2 + 2;
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
    e.memo = KEYS_MEMO;
    for (size_t i = 0; i < mh_model_device_count(s->model); i++) {
        int d = mh_model_device_at(s->model, i);
        if (s->opts.only_device && d != s->opts.device)
            continue;
        mh_model_foreach_segment(s->model, d, est_segment, &e);
        mh_model_foreach_block(s->model, d, est_block, &e);
    }
    for (int d = 0; d < s->ndev; d++)
        for (size_t i = 0; i < s->dev[d].len; i++)
            add_entry(&e, mh__strace_at(&s->dev[d], i));
    e.bytes += (uint64_t)s->notes.len * NOTE_BYTES;
    free(e.stack_seen);
    free(e.frame_seen);
    return e.bytes;
}
