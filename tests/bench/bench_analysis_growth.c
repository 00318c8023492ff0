/* bench_analysis_growth.c - what the growth observer (src/analysis/growth.h)
 * costs `memhist report`: a simulated transformer training run replayed
 * through a session with no observer and with the growth observer.
 * Prints: growth_events, replay_events_per_s, replay_with_growth_events_per_s,
 * growth_overhead_pct.
 * usage: bench_analysis_growth [STEPS]   (default 600, about 1.7 M events) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "growth.h"
#include "memhist/memhist.h"
#include "session.h"
#include "sim.h"
#include "workload.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int simulate(const char *path, uint64_t steps)
{
    const struct mh__workload *wl = mh__workload_find("gpt");
    int64_t values[MH__WORKLOAD_MAX_PARAMS];
    char err[128];
    struct mh_writer *w;
    struct mh__sim *sim;
    struct mh__workload_result res;
    if (!wl || mh__workload_parse_params(wl, "", values, err, sizeof err) != 0 ||
        mh_writer_open(path, &(struct mh_writer_opts){.source = "simulated"}, &w) != 0)
        return 1;
    struct mh__sim_opts so = {.capacity = 80 * MH_GB, .writer = w};
    if (mh__sim_new(&so, &sim) != 0)
        return 1;
    int rc = mh__workload_run(wl, sim, values, steps, 1, &res);
    mh__sim_free(sim);
    return (mh_writer_close(w) != 0 || rc != 0) ? 1 : 0;
}

/* Best of three passes, seconds. */
static double timed(struct mh__session *s, const struct mh__observer *o)
{
    double best = 1e30;
    for (int i = 0; i < 3; i++) {
        double t0 = now_s();
        if ((o ? mh__session_pass(s, o) : mh__session_run(s, 0)) != 0)
            return -1;
        double t = now_s() - t0;
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    uint64_t steps = argc > 1 ? strtoull(argv[1], NULL, 10) : 600;
    char path[] = "/tmp/mh_bench_growth_XXXXXX";
    int fd = mkstemp(path);
    struct mh__session *s;
    struct mh__growth *g;
    if (fd < 0)
        return 1;
    close(fd);
    if (simulate(path, steps) != 0 || mh__session_open(path, &s) != 0 || mh__growth_new(&g) != 0) {
        fprintf(stderr, "bench_analysis_growth: set-up failed\n");
        unlink(path);
        return 1;
    }
    double plain = timed(s, NULL), with = timed(s, mh__growth_observer(g));
    struct mh_file_summary sum;
    mh_reader_summary(mh__session_reader(s), &sum);
    unlink(path);
    if (plain <= 0 || with <= 0)
        return 1;
    printf("growth_events: %llu\n", (unsigned long long)sum.events);
    printf("replay_events_per_s: %.1f M\n", sum.events / plain / 1e6);
    printf("replay_with_growth_events_per_s: %.1f M\n", sum.events / with / 1e6);
    printf("growth_overhead_pct: %.0f\n", 100.0 * (with - plain) / plain);
    mh__growth_free(g);
    mh__session_close(s);
    return 0;
}
