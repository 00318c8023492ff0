/* whatif_jobs.c - independent what-if replays run two at a time (see
 * whatif_check.h, mh__whatif_run_all): the calling thread and one more take
 * the jobs in order. Each replay reads the input with cursors of its own
 * and owns its simulator and model, and a job's result does not depend on
 * which thread ran it or when, so the results are those of running the jobs
 * one after the other. Where no thread can be started the caller runs them
 * all. Owns nothing past the call. */
#include <pthread.h>
#include <unistd.h>

#include "whatif_int.h"

#define JOB_THREADS 2

struct batch {
    const struct mh__whatif_input *in;
    struct mh__whatif_job *jobs;
    size_t n, next;
    pthread_mutex_t mu;
};

static void *work(void *arg)
{
    struct batch *b = arg;
    for (;;) {
        pthread_mutex_lock(&b->mu);
        size_t i = b->next < b->n ? b->next++ : b->n;
        pthread_mutex_unlock(&b->mu);
        if (i == b->n)
            return NULL;
        struct mh__whatif_job *j = &b->jobs[i];
        j->rc = mh__whatif_replay(b->in, &j->ro, j->baseline, &j->out, &j->res);
    }
}

static size_t helpers(size_t n)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t t = n < JOB_THREADS ? n : JOB_THREADS;
    if (cpus == 1)
        t = 1;
    return t ? t - 1 : 0;
}

int mh__whatif_jobs(const struct mh__whatif_input *in, struct mh__whatif_job *jobs, size_t n)
{
    struct batch b = {.in = in, .jobs = jobs, .n = n};
    pthread_t tid[JOB_THREADS];
    size_t started = 0, want = helpers(n);
    if (pthread_mutex_init(&b.mu, NULL) != 0)
        want = 0;
    while (started < want && pthread_create(&tid[started], NULL, work, &b) == 0)
        started++;
    if (want)
        work(&b);
    else /* no lock: the caller alone */
        for (size_t i = 0; i < n; i++)
            jobs[i].rc =
                mh__whatif_replay(in, &jobs[i].ro, jobs[i].baseline, &jobs[i].out, &jobs[i].res);
    for (size_t i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    if (want)
        pthread_mutex_destroy(&b.mu);
    for (size_t i = 0; i < n; i++)
        if (jobs[i].rc < 0)
            return jobs[i].rc;
    return 0;
}
