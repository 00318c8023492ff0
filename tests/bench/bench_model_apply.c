/* bench_model_apply.c - replay throughput of the model (mh_model_apply).
 *
 * Builds one training-like step of allocator events with a generating model:
 * activations of 1-8 MiB stacked into cached 64 MiB segments during the
 * forward pass and freed in reverse during the backward pass (half of them
 * through FREE_REQUESTED + FREE_COMPLETED), each surrounded by small
 * temporaries in a 2 MiB segment, then a STEP_END. The step leaves the state
 * as it found it, so it is replayed many times into a fresh model and timed.
 * Prints "model_apply_events_per_s: N". Usage: bench_model_apply [events] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memhist/model.h"

#define SEG (64 * MH_MB)
#define NSEG 96
#define BASE 0x7a0000000000ull
#define SMALL_BASE 0x790000000000ull

struct gen {
    struct mh_model *m;
    struct mh_event *ev;
    size_t n, cap;
    uint64_t t, rng;
};

static uint64_t rnd(struct gen *g)
{
    g->rng ^= g->rng << 13;
    g->rng ^= g->rng >> 7;
    g->rng ^= g->rng << 17;
    return g->rng;
}

/* Applies to the generating model, records it, returns the block size. */
static uint64_t emit(struct gen *g, unsigned kind, uint64_t addr, uint64_t size, uint32_t aux)
{
    struct mh_event e;
    struct mh_apply_result r;
    memset(&e, 0, sizeof e);
    e.kind = (uint8_t)kind;
    e.addr = addr;
    e.size = size;
    e.aux = aux;
    e.time_ns = g->t += 1000;
    e.stack = (uint32_t)(rnd(g) % 5000 + 1);
    if (mh_model_apply(g->m, &e, &r) || r.anomaly) {
        fprintf(stderr, "generator: event %zu rejected (anomaly %d)\n", g->n, r.anomaly);
        exit(1);
    }
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 4096;
        g->ev = realloc(g->ev, g->cap * sizeof *g->ev);
        if (!g->ev)
            exit(1);
    }
    g->ev[g->n++] = e;
    return r.block_size;
}

static void temporaries(struct gen *g)
{
    uint64_t size = 512 + rnd(g) % (64 * 1024);
    emit(g, MH_EV_ALLOC, SMALL_BASE, size, 0);
    emit(g, MH_EV_FREE_COMPLETED, SMALL_BASE, size, 0);
}

static void one_step(struct gen *g, int acts)
{
    uint64_t *addr = malloc(sizeof(uint64_t) * (size_t)acts);
    uint64_t *req = malloc(sizeof(uint64_t) * (size_t)acts);
    uint64_t seg = 0, used = 0;
    for (int i = 0; i < acts; i++) {
        uint64_t size = MH_MB + rnd(g) % (7 * MH_MB);
        if (used + mh_round_size(NULL, size) > SEG) {
            seg++;
            used = 0;
        }
        addr[i] = BASE + seg * SEG + used;
        req[i] = size;
        used += emit(g, MH_EV_ALLOC, addr[i], size, 0);
        temporaries(g);
    }
    for (int i = acts; i-- > 0;) {
        if (i % 2)
            emit(g, MH_EV_FREE_REQUESTED, addr[i], req[i], 0);
        emit(g, MH_EV_FREE_COMPLETED, addr[i], req[i], 0);
        temporaries(g);
    }
    emit(g, MH_EV_STEP_END, 0, 0, 0);
    free(addr);
    free(req);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    long want = argc > 1 ? atol(argv[1]) : 4000000;
    struct gen g = {.rng = 0x9E3779B97F4A7C15ull};
    struct mh_model_opts o = {0};
    if (mh_model_new(&o, &g.m))
        return 1;
    for (uint64_t s = 0; s < NSEG; s++)
        emit(&g, MH_EV_SEGMENT_ALLOC, BASE + s * SEG, SEG, 0);
    emit(&g, MH_EV_SEGMENT_ALLOC, SMALL_BASE, 2 * MH_MB, 0);
    size_t setup = g.n;
    one_step(&g, 1000);
    size_t step_len = g.n - setup;
    mh_model_free(g.m);

    struct mh_model *m;
    if (mh_model_new(&o, &m))
        return 1;
    double t0 = now();
    long done = 0;
    for (size_t i = 0; i < setup; i++, done++)
        mh_model_apply(m, &g.ev[i], NULL);
    while (done < want)
        for (size_t i = 0; i < step_len; i++, done++)
            mh_model_apply(m, &g.ev[setup + i], NULL);
    mh_model_finish(m);
    double dt = now() - t0;
    struct mh_mem_stats st;
    mh_model_stats(m, 0, &st);
    printf("model_apply_events: %ld\nmodel_apply_steps: %zu\nmodel_apply_anomalies: %llu\n", done,
           mh_model_step_count(m, 0),
           (unsigned long long)(mh_model_anomaly_count(m, MH_ANOM_ALLOC_OVERLAP) +
                                mh_model_anomaly_count(m, MH_ANOM_FREE_UNKNOWN)));
    printf("model_apply_events_per_s: %.0f\n", (double)done / dt);
    mh_model_free(m);
    free(g.ev);
    return st.allocated != 0;
}
