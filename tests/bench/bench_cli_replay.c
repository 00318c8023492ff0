/* bench_cli_replay.c - reader + model replay speed and file size on a
 * simulated transformer training run (every event valid, stacks on every
 * allocation), the path every memhist command takes through a file.
 * Prints: replay_events, bytes_per_event_sim_gpt, reader_model_events_per_s.
 * usage: bench_cli_replay [STEPS]   (default 1200, about 3.5 M events) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "memhist/memhist.h"
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

static int replay(const char *path, uint64_t *events, double *seconds)
{
    struct mh_reader *r;
    struct mh_model *m;
    struct mh_event ev;
    double t0 = now_s();
    if (mh_reader_open(path, &r) != 0 || mh_model_new(NULL, &m) != 0)
        return 1;
    int rc;
    *events = 0;
    while ((rc = mh_reader_next(r, &ev)) == 1) {
        mh_model_apply(m, &ev, NULL);
        (*events)++;
    }
    mh_model_finish(m);
    *seconds = now_s() - t0;
    mh_model_free(m);
    mh_reader_close(r);
    return rc < 0;
}

int main(int argc, char **argv)
{
    uint64_t steps = argc > 1 ? strtoull(argv[1], NULL, 10) : 1200;
    char path[] = "/tmp/memhist-bench-replay-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    uint64_t events = 0;
    double best = 1e9, secs = 0;
    int rc = simulate(path, steps);
    for (int i = 0; i < 3 && rc == 0; i++) {
        rc = replay(path, &events, &secs);
        best = secs < best ? secs : best;
    }
    FILE *f = fopen(path, "rb");
    long bytes = 0;
    if (f && fseek(f, 0, SEEK_END) == 0)
        bytes = ftell(f);
    if (f)
        fclose(f);
    unlink(path);
    if (rc != 0 || events == 0) {
        fprintf(stderr, "bench_cli_replay: failed\n");
        return 1;
    }
    printf("replay_events: %llu\n", (unsigned long long)events);
    printf("bytes_per_event_sim_gpt: %.2f\n", (double)bytes / (double)events);
    printf("reader_model_events_per_s: %.0f\n", events / best);
    return 0;
}
