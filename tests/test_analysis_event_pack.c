/* test_analysis_event_pack.c - the compact in-memory copy of a recording
 * (event_pack.h) gives back every event exactly: every field at zero, at
 * its largest value and in between, times and addresses going down as well
 * as up, host events (device -1), across many blocks, and two cursors read
 * it independently. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "event_pack.h"

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A value of `bits` random bits, sometimes 0 or all ones. */
static uint64_t pick(uint64_t *s, unsigned bits)
{
    uint64_t r = next_random(s), mask = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
    switch (r % 8) {
    case 0: return 0;
    case 1: return mask;
    case 2: return (r >> 8) & 0xff;
    default: return (r >> 3) & mask;
    }
}

static void random_event(uint64_t *s, struct mh_event *e)
{
    memset(e, 0, sizeof *e);
    e->time_ns = pick(s, 64);
    e->addr = pick(s, 64);
    e->size = pick(s, 64);
    e->stream = pick(s, 64);
    e->block_size = pick(s, 64);
    e->ctx = pick(s, 64);
    e->pool[0] = (uint32_t)pick(s, 32);
    e->pool[1] = (uint32_t)pick(s, 32);
    e->stack = (uint32_t)pick(s, 32);
    e->str = (uint32_t)pick(s, 32);
    e->str2 = (uint32_t)pick(s, 32);
    e->thread = (uint32_t)pick(s, 32);
    e->correlation = (uint32_t)pick(s, 32);
    e->aux = (uint32_t)pick(s, 32);
    e->device = (int16_t)(pick(s, 16) - 1);
    e->kind = (uint8_t)pick(s, 8);
    e->flags = (uint8_t)pick(s, 8);
}

static void expect_same(const struct mh_event *a, const struct mh_event *b, size_t i)
{
    cr_expect(a->time_ns == b->time_ns && a->addr == b->addr && a->size == b->size &&
                  a->stream == b->stream && a->block_size == b->block_size && a->ctx == b->ctx &&
                  a->pool[0] == b->pool[0] && a->pool[1] == b->pool[1] && a->stack == b->stack &&
                  a->str == b->str && a->str2 == b->str2 && a->thread == b->thread &&
                  a->correlation == b->correlation && a->aux == b->aux && a->device == b->device &&
                  a->kind == b->kind && a->flags == b->flags,
              "event %zu differs", i);
}

Test(event_pack, every_field_comes_back)
{
    enum { N = 60000 }; /* several blocks of the pack */
    struct mh_event *ev = malloc(N * sizeof *ev);
    struct mh__evpack *p;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    cr_assert_not_null(ev);
    cr_assert_eq(mh__evpack_new(&p), 0);
    for (size_t i = 0; i < N; i++) {
        random_event(&seed, &ev[i]);
        cr_assert_eq(mh__evpack_add(p, &ev[i]), 0);
    }
    cr_expect_gt(mh__evpack_bytes(p), 1u << 20, "the events span more than one block");
    struct mh__evpack_cursor a, b;
    struct mh_event x, y;
    mh__evpack_cursor_init(&a, p);
    mh__evpack_cursor_init(&b, p);
    for (size_t i = 0; i < N; i++) {
        cr_assert_eq(mh__evpack_next(&a, &x), 1, "event %zu missing", i);
        expect_same(&ev[i], &x, i);
        if (i % 2 == 0) { /* the second cursor goes at its own pace */
            cr_assert_eq(mh__evpack_next(&b, &y), 1);
            expect_same(&ev[i / 2], &y, i / 2);
        }
    }
    cr_expect_eq(mh__evpack_next(&a, &x), 0, "nothing after the last event");
    cr_expect_eq(a.done, mh__evpack_bytes(p));
    mh__evpack_free(p);
    free(ev);
}

Test(event_pack, small_events_are_small)
{
    struct mh__evpack *p;
    struct mh_event e;
    cr_assert_eq(mh__evpack_new(&p), 0);
    memset(&e, 0, sizeof e);
    for (int i = 0; i < 1000; i++) {
        e.time_ns += 1500;
        e.addr = 0x7f0000000000ull + (uint64_t)(i % 7) * 4096;
        e.size = 512;
        e.kind = (uint8_t)(i % 3);
        cr_assert_eq(mh__evpack_add(p, &e), 0);
    }
    cr_expect_leq(mh__evpack_bytes(p), 1000 * 12, "an allocator event takes %.1f bytes",
                  mh__evpack_bytes(p) / 1000.0);
    mh__evpack_free(p);
}
