/* multi.c - the skeleton of the commands that take one file per rank
 * (report, layers, oom): each file replayed once through
 * src/analysis/analysis.h with the observers the command wants, one result
 * per file from the command's callback, then the rank table and the worst
 * rank (report_ranks.c; see cli.h).
 *
 * Several files are read in parallel by a small pool of threads, at most a
 * window of them alive at once: the results come out in the order given,
 * each file's analysis is closed as soon as its result and its rank-table
 * row are taken, so memory stays bounded by the window whatever the number
 * of files (64 rank files of a million events each). Before any of that,
 * every file's header and first event are read: a file that does not open
 * stops the command before any output, and the job's time origin
 * (job_origin.h) is known, so every file's times count from it. Long runs
 * say how far they got on stderr. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "analysis.h"
#include "cli.h"
#include "job_origin.h"
#include "printers.h"

#define MULTI_MAX_THREADS 8

struct pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char **paths;
    const struct mh__cli_multi *m;
    size_t n, window;
    size_t next;     /* next file a worker takes */
    size_t consumed; /* files whose result was taken */
    int stop;
    struct mh__analysis *slot; /* file i in slot[i % window] */
    void **prepared;          /* and what the command's prepare made of it */
    int *state;               /* per file: 0 pending, 1 ready, < 0 failed */
};

static void close_file(const struct mh__cli_multi *m, struct mh__analysis *a, void **prepared)
{
    if (m->discard && *prepared)
        m->discard(*prepared);
    *prepared = NULL;
    mh__analysis_close(a);
}

static void *worker(void *arg)
{
    struct pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next < p->n && p->next >= p->consumed + p->window)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop || p->next >= p->n)
            break;
        size_t i = p->next++;
        pthread_mutex_unlock(&p->mu);
        struct mh__analysis *a = &p->slot[i % p->window];
        void **prepared = &p->prepared[i % p->window];
        int rc = mh__analysis_open(p->paths[i], p->m->want, a);
        *prepared = NULL;
        if (rc == 0 && p->m->prepare && (rc = p->m->prepare(p->m->user, a, prepared)) < 0) {
            mh__cli_error("%s: %s", p->paths[i], mh_strerror(rc));
            close_file(p->m, a, prepared);
        }
        pthread_mutex_lock(&p->mu);
        p->state[i] = rc < 0 ? rc : 1;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Waits for file i; returns its analysis or NULL (*rc set) on a failure. */
static struct mh__analysis *take(struct pool *p, size_t i, int *rc)
{
    pthread_mutex_lock(&p->mu);
    while (p->state[i] == 0)
        pthread_cond_wait(&p->cv, &p->mu);
    *rc = p->state[i] < 0 ? p->state[i] : 0;
    pthread_mutex_unlock(&p->mu);
    return *rc == 0 ? &p->slot[i % p->window] : NULL;
}

/* File i's result was taken: its slot is free for a later file. */
static void release(struct pool *p, size_t i)
{
    if (p->state[i] == 1)
        close_file(p->m, &p->slot[i % p->window], &p->prepared[i % p->window]);
    pthread_mutex_lock(&p->mu);
    p->consumed = i + 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Every file's result in order, then the rank table (rows[] kept). */
static int results(struct pool *p, uint64_t origin, struct mh__rank_row *rows, struct mh__json *j)
{
    int rc = 0;
    uint64_t first = 0; /* the origin when the headers gave none */
    if (j) {
        mh__json_key(j, "files");
        mh__json_begin_array(j);
    }
    for (size_t i = 0; i < p->n && rc == 0; i++) {
        struct mh__analysis *a = take(p, i, &rc);
        if (a) {
            if (origin && p->n > 1)
                a->rp.t0_ns = origin;
            if (a->rp.t0_ns && (!first || a->rp.t0_ns < first))
                first = a->rp.t0_ns;
            rc = p->m->each(p->m->user, a, p->prepared[i % p->window], i, p->n, j);
            mh__rank_row_fill(a, &rows[i]);
        }
        release(p, i);
    }
    if (j)
        mh__json_end_array(j);
    if (rc == 0 && !p->m->no_worst)
        rc = mh__print_ranks(rows, p->n, origin ? origin : first, j);
    if (j)
        mh__json_end_object(j);
    return rc;
}

static size_t thread_count(size_t n)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t t = cpus > 0 ? (size_t)cpus : 1;
    t = t < MULTI_MAX_THREADS ? t : MULTI_MAX_THREADS;
    return t < n ? t : n;
}

/* Starts the workers, produces the output, stops and joins them; closes
 * what they opened beyond the last result taken. */
static int run_pool(struct pool *p, uint64_t origin, struct mh__rank_row *rows)
{
    size_t nthreads = thread_count(p->n), started = 0;
    pthread_t tid[MULTI_MAX_THREADS];
    while (started < nthreads && pthread_create(&tid[started], NULL, worker, p) == 0)
        started++;
    if (started == 0) {
        mh__cli_error("%s", mh_strerror(MH_ENOMEM));
        return MH__EXIT_FAIL;
    }
    int rc;
    if (p->m->json_files) {
        struct mh__sink sink;
        struct mh__json j;
        mh__cli_json_begin(&j, &sink, p->m->command);
        rc = results(p, origin, rows, &j); /* the pretty writer ends the line */
        mh__sink_finish(&sink);
    } else {
        rc = results(p, origin, rows, NULL);
    }
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    for (size_t i = p->consumed; i < p->next; i++)
        if (p->state[i] == 1)
            close_file(p->m, &p->slot[i % p->window], &p->prepared[i % p->window]);
    return rc;
}

int mh__cli_multi_run(char **paths, size_t n, const struct mh__cli_multi *m)
{
    uint64_t origin = 0;
    if (n > 1 && mh__job_origin((const char *const *)paths, n, &origin) < 0)
        return MH__EXIT_FAIL; /* reported, before any output */
    struct pool p = {.paths = paths, .m = m, .n = n};
    p.window = thread_count(n);
    p.window = p.window ? p.window : 1;
    p.slot = calloc(p.window, sizeof *p.slot);
    p.prepared = calloc(p.window, sizeof *p.prepared);
    p.state = calloc(n ? n : 1, sizeof *p.state);
    struct mh__rank_row *rows = calloc(n ? n : 1, sizeof *rows);
    int rc = MH__EXIT_FAIL;
    if (!p.slot || !p.prepared || !p.state || !rows || pthread_mutex_init(&p.mu, NULL) != 0) {
        mh__cli_error("%s", mh_strerror(MH_ENOMEM));
    } else {
        if (pthread_cond_init(&p.cv, NULL) == 0) {
            rc = run_pool(&p, origin, rows);
            pthread_cond_destroy(&p.cv);
        }
        pthread_mutex_destroy(&p.mu);
    }
    free(p.slot);
    free(p.prepared);
    free(p.state);
    free(rows);
    return rc < 0 ? MH__EXIT_FAIL : rc;
}
