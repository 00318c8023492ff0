/* bench_record_stream.h - a realistic allocator event stream for the
 * benchmarks and the seed corpus: ~50 distinct stacks of 5-15 frames, sizes
 * from a training-like distribution, addresses reused inside a few segments
 * (as a caching allocator does), times 100 ns - 10 us apart. */
#ifndef MH_BENCH_RECORD_STREAM_H
#define MH_BENCH_RECORD_STREAM_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/event.h"

struct bs_block {
    uint64_t addr, size;
};

struct bs_stream {
    uint64_t rng, t, bump[4];
    struct bs_block *live;
    size_t nlive, cap;
    struct bs_block *freed; /* reusable blocks (LIFO) */
    size_t nfreed, fcap;
    uint32_t stacks[64];
    int nstacks;
};

static inline uint64_t bs_rand(struct bs_stream *s)
{
    uint64_t z = (s->rng += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static inline uint64_t bs_size(struct bs_stream *s)
{
    uint64_t r = bs_rand(s) % 100;
    if (r < 45)
        return 512 * (1 + bs_rand(s) % 64); /* small tensors */
    if (r < 80)
        return 512 * (64 + bs_rand(s) % 4096); /* activations */
    if (r < 97)
        return (2u << 20) * (1 + bs_rand(s) % 32);    /* large activations */
    return (64u << 20) + 512 * (bs_rand(s) % 100000); /* weights, buffers */
}

/* intern(user, kind, i) is called for the 50 stacks: returns the stack id. */
static inline void bs_init(struct bs_stream *s, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->rng = seed;
    s->t = 1700000000000000000ull;
    for (int i = 0; i < 4; i++)
        s->bump[i] = 0x7f0000000000ull + ((uint64_t)i << 34);
}

static inline void bs_free_stream(struct bs_stream *s)
{
    free(s->live);
    free(s->freed);
}

/* Next event: alloc when the live set is small, else free, mostly LIFO. */
static inline void bs_next(struct bs_stream *s, struct mh_event *ev)
{
    memset(ev, 0, sizeof *ev);
    s->t += 100 + bs_rand(s) % 9900;
    ev->time_ns = s->t;
    ev->device = 0;
    ev->stream = 0x5a5a00;
    ev->thread = 4242;
    ev->stack = s->nstacks ? s->stacks[(bs_rand(s) % s->nstacks + bs_rand(s) % s->nstacks) / 2] : 0;
    int do_alloc = s->nlive < 8 || (s->nlive < 2000 && bs_rand(s) % 100 < 52);
    if (do_alloc) {
        struct bs_block b;
        if (s->nfreed && bs_rand(s) % 100 < 85) {
            size_t i = s->nfreed - 1 - bs_rand(s) % (s->nfreed < 8 ? s->nfreed : 8);
            b = s->freed[i];
            s->freed[i] = s->freed[--s->nfreed];
        } else {
            uint64_t size = bs_size(s);
            int seg = (int)(bs_rand(s) % 4);
            b = (struct bs_block){s->bump[seg], size};
            s->bump[seg] += size;
        }
        if (s->nlive == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 1024;
            s->live = realloc(s->live, sizeof *s->live * s->cap);
        }
        s->live[s->nlive++] = b;
        ev->kind = MH_EV_ALLOC;
        ev->addr = b.addr;
        ev->size = b.size;
        return;
    }
    size_t back = bs_rand(s) % 100 < 70 ? bs_rand(s) % 4 : bs_rand(s) % s->nlive;
    if (back >= s->nlive)
        back = s->nlive - 1;
    size_t i = s->nlive - 1 - back;
    struct bs_block b = s->live[i];
    memmove(&s->live[i], &s->live[i + 1], sizeof *s->live * (s->nlive - i - 1));
    s->nlive--;
    if (s->nfreed == s->fcap) {
        s->fcap = s->fcap ? s->fcap * 2 : 1024;
        s->freed = realloc(s->freed, sizeof *s->freed * s->fcap);
    }
    s->freed[s->nfreed++] = b;
    ev->kind = MH_EV_FREE_COMPLETED;
    ev->addr = b.addr;
    ev->size = b.size;
}

#endif
