/* bench_record_perf.c - recorder and format figures from the performance
 * budget: emit cost (1 and 2 threads, no stack), drain + write throughput on
 * the drain thread, file size per event of a realistic alloc/free stream with
 * stacks, and reader throughput. Prints one "name: value" line per figure. */
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "bench_record_stream.h"
#include "memhist/reader.h"
#include "memhist/recorder.h"
#include "memhist/writer.h"

#define ROUND 256
#define ROUNDS 200
#define REPS 10
#define STREAM_EVENTS 2000000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct emitter {
    struct mh_recorder *rec;
    pthread_barrier_t *bar;
    double ns[ROUNDS * REPS];
};

static void *emit_rounds(void *arg)
{
    struct emitter *e = arg;
    struct mh_event ev = {.kind = MH_EV_ALLOC, .size = 4096, .stream = 7, .thread = mh_thread_id()};
    for (int rep = 0; rep < REPS; rep++) {
        pthread_barrier_wait(e->bar);
        for (int r = 0; r < ROUNDS; r++) {
            double t0 = now_s();
            for (int i = 0; i < ROUND; i++) {
                ev.addr = 0x7f0000000000ull + (uint64_t)i * 4096;
                ev.time_ns = mh_clock_ns();
                mh_emit(e->rec, &ev);
            }
            e->ns[rep * ROUNDS + r] = (now_s() - t0) * 1e9 / ROUND;
        }
        pthread_barrier_wait(e->bar);
        pthread_barrier_wait(e->bar); /* the main thread flushes in between */
    }
    return NULL;
}

static double emit_median(int nthreads)
{
    int fd = open("/dev/null", O_WRONLY);
    struct mh_recorder_opts o = {.thread_buffer_events = 65536, .flush_interval_ms = 1000};
    struct mh_recorder *rec;
    if (mh_recorder_open_fd(fd, &o, &rec))
        return -1;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nthreads + 1);
    struct emitter *es = calloc((size_t)nthreads, sizeof *es);
    pthread_t th[8];
    for (int t = 0; t < nthreads; t++) {
        es[t].rec = rec;
        es[t].bar = &bar;
        pthread_create(&th[t], NULL, emit_rounds, &es[t]);
    }
    for (int rep = 0; rep < REPS; rep++) {
        pthread_barrier_wait(&bar);
        pthread_barrier_wait(&bar);
        mh_recorder_flush(rec);
        pthread_barrier_wait(&bar);
    }
    for (int t = 0; t < nthreads; t++)
        pthread_join(th[t], NULL);
    size_t n = (size_t)nthreads * ROUNDS * REPS;
    double *all = malloc(sizeof *all * n);
    for (int t = 0; t < nthreads; t++)
        memcpy(all + (size_t)t * ROUNDS * REPS, es[t].ns, sizeof es[t].ns);
    qsort(all, n, sizeof *all, cmp_double);
    double med = all[n / 2];
    free(all);
    free(es);
    mh_recorder_close(rec);
    close(fd);
    return med;
}

/* Interns ~50 stacks of 5-15 frames that share outer frames, as real
 * Python stacks do. intern_frame/intern_stack are given as the writer's or
 * the recorder's functions through a small adapter. */
struct interner {
    struct mh_writer *w;
    struct mh_recorder *rec;
};

static uint32_t frame(struct interner *in, const char *file, const char *fn, uint32_t line)
{
    return (uint32_t)(in->w ? mh_writer_intern_frame(in->w, file, fn, line)
                            : mh_intern_frame(in->rec, file, fn, line));
}

static void make_stacks(struct interner *in, struct bs_stream *s)
{
    for (int k = 0; k < 50; k++) {
        uint32_t fr[15];
        int depth = 5 + (int)(bs_rand(s) % 11);
        char file[64], fn[64];
        for (int d = 0; d < depth; d++) {
            int outer = depth - 1 - d; /* outer frames are shared */
            snprintf(file, sizeof file, "torch/nn/modules/mod%d.py", outer < 3 ? outer : k % 12);
            snprintf(fn, sizeof fn, "forward_%d", outer < 3 ? outer : (k * 7 + d) % 40);
            fr[d] = frame(in, file, fn, 10u + (uint32_t)(outer < 3 ? outer : k + d));
        }
        s->stacks[k] = (uint32_t)(in->w ? mh_writer_intern_stack(in->w, fr, (size_t)depth)
                                        : mh_intern_stack(in->rec, fr, (size_t)depth));
    }
    s->nstacks = 50;
}

static double drain_rate(void)
{
    int fd = open("/dev/null", O_WRONLY);
    struct mh_recorder_opts o = {.thread_buffer_events = 65536, .flush_interval_ms = 1000};
    struct mh_recorder *rec;
    if (mh_recorder_open_fd(fd, &o, &rec))
        return -1;
    struct bs_stream s;
    bs_init(&s, 99);
    struct interner in = {.rec = rec};
    make_stacks(&in, &s);
    double busy = 0;
    uint64_t total = 0;
    for (int rep = 0; rep < 40; rep++) {
        struct mh_event ev;
        for (int i = 0; i < 60000; i++) {
            bs_next(&s, &ev);
            mh_emit(rec, &ev);
        }
        double t0 = now_s();
        mh_recorder_flush(rec);
        busy += now_s() - t0;
        total += 60000;
    }
    mh_recorder_close(rec);
    close(fd);
    bs_free_stream(&s);
    return total / busy;
}

int main(void)
{
    emit_median(1); /* warm-up: page faults, frequency */
    printf("emit_ns_median_1thread: %.1f\n", emit_median(1));
    printf("emit_ns_median_2threads: %.1f\n", emit_median(2));
    printf("drain_write_events_per_s: %.0f\n", drain_rate());

    struct mh_writer *w;
    mh_writer_open_mem(NULL, &w);
    struct bs_stream s;
    bs_init(&s, 1);
    struct interner in = {.w = w};
    make_stacks(&in, &s);
    struct mh_event ev, *evs = malloc(sizeof *evs * STREAM_EVENTS);
    for (int i = 0; i < STREAM_EVENTS; i++)
        bs_next(&s, &evs[i]);
    double t0 = now_s();
    for (int i = 0; i < STREAM_EVENTS; i++)
        mh_writer_event(w, &evs[i]);
    mh_writer_close(w);
    double tw = now_s() - t0;
    const void *data;
    size_t len;
    mh_writer_mem(w, &data, &len);
    printf("writer_events_per_s: %.0f\n", STREAM_EVENTS / tw);
    printf("bytes_per_event_alloc_free_with_stacks: %.2f\n", (double)len / STREAM_EVENTS);

    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        struct mh_reader *r;
        if (mh_reader_open_mem(data, len, &r))
            return 1;
        t0 = now_s();
        size_t n = 0;
        while (mh_reader_next(r, &ev) == 1)
            n++;
        double t = now_s() - t0;
        mh_reader_close(r);
        if (n != STREAM_EVENTS)
            return 1;
        if (t < best)
            best = t;
    }
    printf("reader_events_per_s: %.0f\n", STREAM_EVENTS / best);
    mh_writer_free_mem(w);
    bs_free_stream(&s);
    free(evs);
    return 0;
}
