/* bench_sim_alloc.c - simulator throughput: a training-like mix of
 * allocations and frees (mostly LIFO temporaries of a few recurring sizes,
 * some long-lived tensors, varying large requests) with events going to a
 * callback that discards them. Prints `sim_allocs_per_s: N` (alloc + free
 * calls per second) and the same for the gpt workload. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sim.h"
#include "workload.h"

static uint64_t nevents;

static int sink(void *user, const struct mh_event *e)
{
    (void)user;
    (void)e;
    nevents++;
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(void)
{
    struct mh__sim_opts o;
    struct mh__sim *s;
    memset(&o, 0, sizeof o);
    o.emit = sink;
    if (mh__sim_new(&o, &s) != 0)
        return 1;
    static const uint64_t sizes[] = {512, 4096, 65536, 1 << 20, 3 << 20, 8 << 20, 24 << 20, 96 << 20};
    enum { DEPTH = 64, OPS = 5000000 };
    uint64_t stack[DEPTH];
    size_t top = 0;
    uint64_t ops = 0;
    double t0 = now_s();
    while (ops < OPS) {
        if (top < DEPTH && (top == 0 || next_rand() % 2 == 0)) {
            uint64_t sz = sizes[next_rand() % 8] + (next_rand() % 4) * 512;
            if (mh__sim_malloc(s, sz, 0, 0, 0, &stack[top]) != 0)
                return 1;
            top++;
        } else {
            if (mh__sim_free_block(s, stack[--top], 0, 0, 0) != 0)
                return 1;
        }
        ops++;
    }
    double dt = now_s() - t0;
    printf("sim_allocs_per_s: %.0f\n", (double)ops / dt);
    printf("sim_events_per_s: %.0f\n", (double)nevents / dt);
    mh__sim_free(s);

    const struct mh__workload *wl = mh__workload_find("gpt");
    int64_t v[MH__WORKLOAD_MAX_PARAMS];
    mh__workload_parse_params(wl, "", v, NULL, 0);
    memset(&o, 0, sizeof o);
    o.emit = sink;
    if (mh__sim_new(&o, &s) != 0)
        return 1;
    struct mh__sim_stats st;
    t0 = now_s();
    mh__workload_run(wl, s, v, 200, 1, NULL);
    dt = now_s() - t0;
    mh__sim_stats(s, &st);
    printf("sim_gpt_allocs_per_s: %.0f\n", (double)(st.allocs + st.frees) / dt);
    mh__sim_free(s);
    return 0;
}
