/* snapshot_estimate.c - the expected pickle size of a snapshot, counted in
 * the first pass as the entries go by, so the CLI can warn about files the
 * browser viewer cannot open and choose a window that it can
 * (snapshot_fit.c). The costs follow what snapshot_write.c and
 * pickle_write.h emit, opcode by opcode: each trace entry's integers at
 * their encoded length, memoized keys and repeated user_metadata texts as
 * memo references (2 bytes below memo index 256, 5 above), each distinct
 * stack and frame written in full once and referenced afterwards. Segments,
 * blocks and annotations take typical sizes; the result is within a few
 * percent of the written file on long runs.
 *
 * Besides the total, each step's entries and bytes are summed (the default
 * window adds up whole steps), and every stride-th entry is sampled with
 * the entries and bytes before it (a time window where steps do not do);
 * the samples are thinned to every other one when they fill, so they stay
 * few whatever the length of the run. */
#include <stdlib.h>
#include <string.h>

#include "categories.h"
#include "grow.h"
#include "pickle_write.h"
#include "snapshot_int.h"

#define NOTE_BYTES 40u
#define BLOCK_BYTES 40u
#define SEGMENT_BYTES 110u
#define KEYS_MEMO 24u     /* the dict keys and action names, memoized first */
#define CATEGORY_BYTES 4u /* key and value references */
#define MAX_SAMPLES 8192u

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

static unsigned get_len(const struct mh__est *e)
{
    return e->memo + KEYS_MEMO < 256 ? 2 : 5;
}

/* A memoized object: MEMOIZE after it, and its index taken. */
static unsigned memoize(struct mh__est *e)
{
    e->memo++;
    return 1;
}

static uint64_t frame_bytes(const struct mh_reader *r, struct mh__est *e, uint32_t id)
{
    struct mh_frame f = {NULL, NULL, 0};
    if (!mark(&e->frame_seen, &e->frame_cap, id))
        return get_len(e);
    mh_reader_frame(r, id, &f);
    return 2 + 3 * 2 + str_len(f.func ? strlen(f.func) : 2) +
           str_len(f.file ? strlen(f.file) : 2) + int_len(f.line) + 1 + memoize(e);
}

/* The frames list of a stack: in full the first time (into dict_bytes),
 * then a reference; returns the reference's bytes. */
static unsigned add_stack(const struct mh_reader *r, struct mh__est *e, uint32_t stack)
{
    const uint32_t *frames;
    size_t n;
    if (!stack || mh_reader_stack(r, stack, &frames, &n) != 0 || n == 0)
        return 1;
    if (!mark(&e->stack_seen, &e->stack_cap, stack))
        return get_len(e);
    uint64_t bytes = 2 + 1 + n / MH__PW_BATCH * 2; /* list, mark, appends */
    for (size_t i = 0; i < n; i++)
        bytes += frame_bytes(r, e, frames[i]);
    e->dict_bytes += bytes + memoize(e);
    return 0;
}

/* user_metadata: a reference when it repeats the previous entry's text. */
static unsigned add_user(const struct mh__snapshot *s, struct mh__est *e, const struct mh__sentry *x)
{
    size_t n;
    const char *text = mh__snapshot_user_cached(s, &e->um, x, &n);
    if (n == 0)
        return 0;
    if (e->have_um && strcmp(text, e->last_um) == 0)
        return 2 + get_len(e);
    memcpy(e->last_um, text, n + 1);
    e->have_um = 1;
    return 2 + str_len(n) + memoize(e);
}

static uint64_t entry_bytes(const struct mh__snapshot *s, struct mh__est *e,
                            const struct mh__sentry *x)
{
    /* dict, mark, setitems; action, its value and the four numbers' keys */
    uint64_t b = 3 + 6 * 2 + int_len(x->addr) + int_len(x->size) + int_len(x->stream) +
                 int_len(x->time_ns / 1000);
    if (x->stack)
        b += 2 + add_stack(s->reader, e, x->stack);
    if (x->str2)
        b += 2 + get_len(e);
    b += add_user(s, e, x);
    if (x->pool[0] || x->pool[1])
        b += 2 + int_len(x->pool[0]) + int_len(x->pool[1]) + 1;
    return b + CATEGORY_BYTES * (x->kind <= MH_EV_SNAPSHOT);
}

/* The cost of `step` (steps come in order, mostly: the last one is tried first). */
static struct mh__step_cost *step_cost(struct mh__snapshot *s, int64_t step)
{
    size_t n = s->nsteps;
    if (n && s->steps[n - 1].step == step)
        return &s->steps[n - 1];
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->steps[mid].step < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n && s->steps[lo].step == step)
        return &s->steps[lo];
    if (MH__GROW(s->steps, n, s->steps_cap, 256) < 0)
        return NULL;
    memmove(s->steps + lo + 1, s->steps + lo, (n - lo) * sizeof *s->steps);
    s->steps[lo] = (struct mh__step_cost){step, 0, 0};
    s->nsteps++;
    return &s->steps[lo];
}

/* Keeps every other sample once they fill (the stride doubles). */
static int sample(struct mh__snapshot *s, const struct mh__sentry *x)
{
    if (!s->stride)
        s->stride = 64;
    if (s->collected % s->stride)
        return 0;
    if (s->nsamples == MAX_SAMPLES) {
        for (size_t i = 0; i < MAX_SAMPLES / 2; i++)
            s->samples[i] = s->samples[2 * i];
        s->nsamples = MAX_SAMPLES / 2;
        s->stride *= 2;
        if (s->collected % s->stride)
            return 0;
    }
    if (MH__GROW(s->samples, s->nsamples, s->samples_cap, 1024) < 0)
        return MH_ENOMEM;
    uint64_t t0 = s->build.t0, t = x->time_ns;
    s->samples[s->nsamples++] = (struct mh__tsample){t >= t0 ? t - t0 : 0, x->index, s->collected,
                                                     s->est.entry_bytes};
    return 0;
}

int mh__snapshot_count(struct mh__snapshot *s, const struct mh__sentry *x)
{
    int rc = sample(s, x);
    if (rc < 0)
        return rc;
    uint64_t b = entry_bytes(s, &s->est, x);
    s->est.entry_bytes += b;
    s->collected++;
    struct mh__step_cost *c = step_cost(s, x->step);
    if (!c)
        return MH_ENOMEM;
    c->entries++;
    c->bytes += b;
    return 0;
}

static int est_block(void *user, const struct mh_segment_view *seg, const struct mh_block_view *b)
{
    struct mh__snapshot *s = user;
    (void)seg;
    s->est.dict_bytes += BLOCK_BYTES + add_stack(s->reader, &s->est,
                                                 b->state == MH_BLOCK_INACTIVE ? 0 : b->stack);
    return 0;
}

static int est_segment(void *user, const struct mh_segment_view *seg)
{
    struct mh__snapshot *s = user;
    s->est.dict_bytes += SEGMENT_BYTES + add_stack(s->reader, &s->est, seg->stack);
    return 0;
}

uint64_t mh__snapshot_estimate(struct mh__snapshot *s)
{
    for (size_t i = 0; i < mh_model_device_count(s->model); i++) {
        int d = mh_model_device_at(s->model, i);
        if (s->opts.only_device && d != s->opts.device)
            continue;
        mh_model_foreach_segment(s->model, d, est_segment, s);
        mh_model_foreach_block(s->model, d, est_block, s);
    }
    uint64_t entries = s->est.entry_bytes;
    if (s->collected > s->info.entries) /* --max-entries: the last ones */
        entries = (uint64_t)((double)entries * (double)s->info.entries / (double)s->collected);
    if (!s->categorized && entries > CATEGORY_BYTES * s->info.entries)
        entries -= CATEGORY_BYTES * s->info.entries; /* counted with a category each */
    return 1024 + s->est.dict_bytes + entries + (uint64_t)s->notes.len * NOTE_BYTES;
}

void mh__snapshot_est_free(struct mh__est *e)
{
    free(e->stack_seen);
    free(e->frame_seen);
    memset(e, 0, sizeof *e);
}
