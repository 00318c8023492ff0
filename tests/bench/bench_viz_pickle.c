/* bench_viz_pickle.c - snapshot pickle writing and reading against CPython's
 * C pickler on the same content.
 *
 * Generates a run of N allocator events (default 1 M: alloc, free_requested,
 * free_completed of 2 MiB blocks stacked in one large segment, 2,000
 * distinct 24-frame stacks, a step every 10,000 events) with mh_writer,
 * exports it as a snapshot (replay + pickle writing; both timed), reads the
 * pickle back with the strict reader, then runs tests/bench/pickle_cpython.py
 * on the same file (pickle.loads, then pickle.dumps of the loaded dict).
 * Prints `name: value` lines and the ratios (> 1: memhist is faster).
 *
 *   bench_viz_pickle [--events N] [--keep FILE] [--no-python] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memhist/memhist.h"
#include "pickle_read.h"
#include "snapshot_export.h"

#ifndef MH_SOURCE_DIR
#define MH_SOURCE_DIR "."
#endif

#define MiB (1ull << 20)
#define NSTACKS 2000
#define DEPTH 24

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void make_stacks(struct mh_writer *w, uint32_t *stacks)
{
    uint32_t frames[DEPTH];
    char file[64], func[64];
    for (int s = 0; s < NSTACKS; s++) {
        for (int d = 0; d < DEPTH; d++) {
            int k = d < 4 ? s * 4 + d : 1000 + d; /* outer frames shared */
            snprintf(file, sizeof file, "/venv/lib/python3.11/site-packages/model/layer%d.py",
                     k % 97);
            snprintf(func, sizeof func, "forward_%d", k);
            frames[d] = (uint32_t)mh_writer_intern_frame(w, file, func, (uint32_t)(10 + k));
        }
        stacks[s] = (uint32_t)mh_writer_intern_stack(w, frames, DEPTH);
    }
}

/* The generated file in memory; events LIFO within one 64 GiB segment. */
static void generate(uint64_t n, struct mh_writer **out, const void **data, size_t *len)
{
    struct mh_writer_opts o = {"simulated", 0};
    struct mh_writer *w;
    if (mh_writer_open_mem(&o, &w) != 0)
        exit(1);
    static uint32_t stacks[NSTACKS];
    make_stacks(w, stacks);
    const uint64_t base = 0x7f0000000000ull, seg = 64ull << 30;
    struct mh_event e;
    memset(&e, 0, sizeof e);
    uint64_t t = 1700000000000000000ull, i = 0, live = 0, step = 0;
    e.kind = MH_EV_SEGMENT_ALLOC;
    e.flags = MH_EVF_POOL_KNOWN;
    e.addr = base;
    e.size = seg;
    e.time_ns = t;
    mh_writer_event(w, &e);
    while (i < n) {
        memset(&e, 0, sizeof e);
        e.time_ns = (t += 1000);
        if (i % 10000 == 0) {
            e.kind = MH_EV_STEP_BEGIN;
            e.aux = (uint32_t)step++;
            mh_writer_event(w, &e);
            e.kind = MH_EV_PHASE;
            e.aux = MH_PHASE_FORWARD;
            mh_writer_event(w, &e);
        }
        int grow = live == 0 || (live < 1000 && (i / 3000) % 2 == 0);
        e.stream = 0;
        if (grow) {
            e.kind = MH_EV_ALLOC;
            e.addr = base + live * 2 * MiB;
            e.size = 2 * MiB;
            e.stack = stacks[(live * 7 + i) % NSTACKS];
            live++;
            i++;
        } else {
            live--;
            e.addr = base + live * 2 * MiB;
            e.size = 2 * MiB;
            e.stack = stacks[(live * 7) % NSTACKS];
            e.kind = MH_EV_FREE_REQUESTED;
            mh_writer_event(w, &e);
            e.kind = MH_EV_FREE_COMPLETED;
            i += 2;
        }
        mh_writer_event(w, &e);
    }
    if (mh_writer_close(w) != 0 || mh_writer_mem(w, data, len) != 0)
        exit(1);
    *out = w;
}

static int run_python(const char *path, double *loads_s, double *dumps_s)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 %s/tests/bench/pickle_cpython.py %s", MH_SOURCE_DIR, path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[256];
    while (fgets(line, sizeof line, p)) {
        fputs(line, stdout);
        sscanf(line, "cpython_loads_s: %lf", loads_s);
        sscanf(line, "cpython_dumps_s: %lf", dumps_s);
    }
    return pclose(p) == 0 && *loads_s > 0 && *dumps_s > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    uint64_t n = 1000000;
    const char *keep = NULL;
    int python = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--events") && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
            keep = argv[++i];
        else if (!strcmp(argv[i], "--no-python"))
            python = 0;
        else {
            fprintf(stderr, "usage: bench_viz_pickle [--events N] [--keep FILE] [--no-python]\n");
            return 2;
        }
    }
    struct mh_writer *w;
    const void *data;
    size_t len;
    generate(n, &w, &data, &len);

    struct mh__session *r;
    struct mh__snapshot *s;
    double t0 = now();
    if (mh__session_open_mem(data, len, "recording", &r) != 0 ||
        mh__snapshot_build(r, NULL, &s) != 0)
        return 1;
    double t1 = now();
    struct mh__sink sink;
    mh__sink_init_mem(&sink);
    if (mh__snapshot_write(s, &sink) != 0)
        return 1;
    double t2 = now();
    struct mh__snapshot_info info;
    mh__snapshot_info(s, &info);
    printf("entries: %llu\n", (unsigned long long)info.entries);
    printf("snapshot_bytes: %zu\n", sink.len);
    printf("snapshot_estimate_bytes: %llu\n", (unsigned long long)info.estimate_bytes);
    printf("replay_s: %.4f\n", t1 - t0);
    printf("pickle_write_s: %.4f\n", t2 - t1);

    double best = 1e9;
    for (int k = 0; k < 3; k++) {
        struct mh__pickle_doc *doc;
        char err[200];
        double a = now();
        if (mh__pickle_parse(sink.buf, sink.len, NULL, &doc, err, sizeof err) != 0) {
            fprintf(stderr, "read back failed: %s\n", err);
            return 1;
        }
        double b = now();
        mh__pickle_doc_free(doc);
        best = b - a < best ? b - a : best;
    }
    printf("pickle_read_s: %.4f\n", best);

    const char *path = keep ? keep : "/tmp/bench_viz_pickle.pickle";
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(sink.buf, 1, sink.len, fp) != sink.len || fclose(fp) != 0)
        return 1;
    double loads_s = 0, dumps_s = 0;
    if (python && run_python(path, &loads_s, &dumps_s) == 0) {
        printf("write_speedup_vs_cpython_dumps: %.2f\n", dumps_s / (t2 - t1));
        printf("read_speedup_vs_cpython_loads: %.2f\n", loads_s / best);
    }
    if (!keep)
        remove(path);
    mh__snapshot_free(s);
    mh__session_close(r);
    mh__sink_free(&sink);
    mh_writer_free_mem(w);
    return 0;
}
