/* test_format_util.h - helpers shared by the format and recorder tests:
 * a deterministic random generator, event generators and comparison. */
#ifndef MH_TEST_FORMAT_UTIL_H
#define MH_TEST_FORMAT_UTIL_H

#include <criterion/criterion.h>
#include <string.h>

#include "memhist/error.h"
#include "memhist/reader.h"
#include "memhist/writer.h"

static inline uint64_t tu_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* A value that exercises small, large, negative-looking and extreme encodings. */
static inline uint64_t tu_any(uint64_t *s)
{
    switch (tu_rand(s) % 6) {
    case 0: return 0;
    case 1: return tu_rand(s) % 128;
    case 2: return tu_rand(s) % 70000;
    case 3: return tu_rand(s);
    case 4: return UINT64_MAX - tu_rand(s) % 3;
    default: return (tu_rand(s) % 100000) * 512;
    }
}

/* Fills every field of `ev`; ids stay within the given counts. */
static inline void tu_event(uint64_t *s, struct mh_event *ev, uint32_t nstr, uint32_t nstack,
                            uint64_t *t)
{
    memset(ev, 0, sizeof *ev);
    *t += tu_rand(s) % 3 == 0 ? tu_any(s) % 100000000 : tu_rand(s) % 10000;
    ev->time_ns = tu_rand(s) % 50 == 0 ? tu_rand(s) : *t;
    ev->kind = (uint8_t)(tu_rand(s) % MH_EV_KIND_COUNT);
    ev->flags = (uint8_t)(tu_rand(s) % 32);
    ev->addr = tu_rand(s) % 4 == 0 ? 0x7f0000000000u + (tu_rand(s) % 64) * 512 : tu_any(s);
    ev->size = tu_any(s);
    ev->stream = tu_any(s);
    ev->dur_ns = tu_any(s);
    ev->ctx = tu_any(s);
    ev->pool[0] = (uint32_t)tu_any(s);
    ev->pool[1] = (uint32_t)tu_any(s);
    ev->stack = nstack ? (uint32_t)(tu_rand(s) % (nstack + 1)) : 0;
    ev->str = nstr ? (uint32_t)(tu_rand(s) % (nstr + 1)) : 0;
    ev->str2 = nstr ? (uint32_t)(tu_rand(s) % (nstr + 1)) : 0;
    ev->thread = (uint32_t)tu_any(s);
    ev->correlation = (uint32_t)tu_any(s);
    ev->aux = (uint32_t)tu_any(s);
    ev->device = (int16_t)(tu_rand(s) % 10 - 1);
    if (tu_rand(s) % 20 == 0)
        ev->device = (int16_t)tu_rand(s);
}

static inline void tu_expect_event(const struct mh_event *a, const struct mh_event *b, size_t i)
{
    cr_expect_eq(a->time_ns, b->time_ns, "event %zu time", i);
    cr_expect_eq(a->addr, b->addr, "event %zu addr %llx vs %llx", i, (unsigned long long)a->addr,
                 (unsigned long long)b->addr);
    cr_expect_eq(a->size, b->size, "event %zu size", i);
    cr_expect_eq(a->stream, b->stream, "event %zu stream", i);
    cr_expect_eq(a->dur_ns, b->dur_ns, "event %zu dur", i);
    cr_expect_eq(a->ctx, b->ctx, "event %zu ctx", i);
    cr_expect_eq(a->pool[0], b->pool[0], "event %zu pool0", i);
    cr_expect_eq(a->pool[1], b->pool[1], "event %zu pool1", i);
    cr_expect_eq(a->stack, b->stack, "event %zu stack", i);
    cr_expect_eq(a->str, b->str, "event %zu str", i);
    cr_expect_eq(a->str2, b->str2, "event %zu str2", i);
    cr_expect_eq(a->thread, b->thread, "event %zu thread", i);
    cr_expect_eq(a->correlation, b->correlation, "event %zu correlation", i);
    cr_expect_eq(a->aux, b->aux, "event %zu aux", i);
    cr_expect_eq(a->device, b->device, "event %zu device", i);
    cr_expect_eq(a->kind, b->kind, "event %zu kind", i);
    cr_expect_eq(a->flags, b->flags, "event %zu flags", i);
}

/* A small complete file in memory: a few definitions and `n` events. The
 * caller frees it with mh_writer_free_mem(*w). */
static inline void tu_small_file(struct mh_writer **w, const void **data, size_t *len, int n,
                                 uint32_t chunk_events)
{
    struct mh_writer_opts o = {.chunk_events = chunk_events};
    cr_assert_eq(mh_writer_open_mem(&o, w), 0);
    int64_t s1 = mh_writer_intern_string(*w, "layer1", 6);
    int64_t f1 = mh_writer_intern_frame(*w, "model.py", "forward", 10);
    int64_t f2 = mh_writer_intern_frame(*w, "train.py", "main", 99);
    uint32_t fr[2] = {(uint32_t)f1, (uint32_t)f2};
    int64_t st = mh_writer_intern_stack(*w, fr, 2);
    cr_assert(s1 > 0 && st > 0);
    mh_writer_set_meta(*w, "torch_version", "2.5.0");
    mh_writer_set_device(*w, 0, "H100", 80ull << 30);
    for (int i = 0; i < n; i++) {
        struct mh_event ev = {.time_ns = 1000000 + (uint64_t)i * 700,
                              .addr = 0x7f0000000000u + (uint64_t)(i % 5) * 4096,
                              .size = 4096,
                              .kind = (uint8_t)(i % 2 ? MH_EV_FREE_COMPLETED : MH_EV_ALLOC),
                              .stack = (uint32_t)st,
                              .str = (uint32_t)s1,
                              .thread = 7};
        cr_assert_eq(mh_writer_event(*w, &ev), 0);
    }
    mh_writer_add_dropped(*w, 3);
    cr_assert_eq(mh_writer_close(*w), 0);
    cr_assert_eq(mh_writer_mem(*w, data, len), 0);
}

/* Reads all events; returns the count, the final code in *last. */
static inline size_t tu_read_all(struct mh_reader *r, int *last)
{
    struct mh_event ev;
    size_t n = 0;
    int rc;
    while ((rc = mh_reader_next(r, &ev)) == 1)
        n++;
    *last = rc;
    return n;
}

#endif
