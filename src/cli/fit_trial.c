/* fit_trial.c - the runs of `memhist fit`: each trial is a child process
 * running this binary as `memhist -q simulate --no-report --gpu KEY
 * --device-memory C --steps N -o FILE -- COMMAND` with {NAME} replaced, in
 * a process group of its own, its output in FILE's .log and the virtual
 * device's counts in FILE's .vdev (MEMHIST_VDEVICE_STATS). Several run at
 * once; while they run, each one's host memory (the resident memory of
 * every process of its group, summed) is sampled a few times a second,
 * kept as its peak and held to the limit: a trial above it, or above
 * --timeout, is stopped. The progress line shows the trials running. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fit.h"

#define POLL_NS 200000000ull /* host memory and time are checked five times a second */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    interrupted = sig;
}

void mh__fit_trial_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t mh__fit_host_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return (uint64_t)kb * 1024;
}

/* The argv of the `memhist simulate` child. */
static char **child_argv(const struct mh__fit_opts *o, const struct mh__fit_trial *t, char **words,
                         char bufs[3][32])
{
    size_t nw = 0;
    while (words[nw])
        nw++;
    char **av = calloc(nw + 24, sizeof *av);
    if (!av)
        return NULL;
    size_t n = 0;
    snprintf(bufs[0], 32, "%" PRIu64, t->capacity);
    snprintf(bufs[1], 32, "%" PRIu64, o->context);
    snprintf(bufs[2], 32, "%" PRIu64, o->steps);
    const char *head[] = {o->self,
                          "-q",
                          "simulate",
                          "--no-report",
                          "--gpu",
                          o->cards[t->card].gpu->key,
                          "--device-memory",
                          bufs[0],
                          "--context-memory",
                          bufs[1],
                          "--steps",
                          bufs[2],
                          "-o",
                          t->path};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        av[n++] = (char *)head[i];
    if (o->alloc_conf) {
        av[n++] = "--alloc-conf";
        av[n++] = (char *)o->alloc_conf;
    }
    av[n++] = "--";
    for (size_t i = (size_t)o->cmd.nenv; i < nw; i++)
        av[n++] = words[i];
    av[n] = NULL;
    return av;
}

static void run_child(const struct mh__fit_trial *t, char **words, int nenv, char **av)
{
    setpgid(0, 0);
    int fd = open(t->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int in = open("/dev/null", O_RDONLY);
    if (fd < 0 || in < 0)
        _exit(127);
    dup2(in, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (mh__fit_command_apply_env(words, nenv) < 0 || setenv("MEMHIST_VDEVICE_STATS", t->stats, 1))
        _exit(127);
    unsetenv("MEMHIST_STOP_AFTER_STEPS");
    execv(av[0], av);
    dprintf(2, "memhist: fit: cannot run %s: %s\n", av[0], strerror(errno));
    _exit(127);
}

int mh__fit_trial_start(const struct mh__fit_opts *o, struct mh__fit_trial *t)
{
    char bufs[3][32];
    char **words = mh__fit_command_expand(&o->cmd, t->value);
    char **av = words ? child_argv(o, t, words, bufs) : NULL;
    if (!av) {
        free(words);
        mh__cli_error("fit: out of memory");
        return -1;
    }
    unlink(t->stats);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0)
        run_child(t, words, o->cmd.nenv, av);
    free(av);
    free(words);
    if (pid < 0) {
        mh__cli_error("fit: cannot start a run: %s", strerror(errno));
        return -1;
    }
    setpgid(pid, pid); /* (also done by the child: whichever runs first) */
    t->pid = (int)pid;
    t->started_ns = now_ns();
    t->running = 1;
    t->host_peak = 0;
    return 0;
}

/* Resident bytes of every process in process group `pgid`. */
static uint64_t group_resident(int pgid)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    uint64_t pages = 0;
    char path[64], buf[1024];
    while (d && (e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        char *p = strrchr(buf, ')');
        int pgrp = 0;
        unsigned long long rss = 0;
        /* after "(comm)": state ppid pgrp, then fields 6..23, then rss (24) */
        if (p &&
            sscanf(p + 1,
                   " %*c %*d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                   "%*d %*d %*d %*u %*u %llu",
                   &pgrp, &rss) == 2 &&
            pgrp == pgid)
            pages += rss;
    }
    if (d)
        closedir(d);
    return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void progress_what(const struct mh__fit *f, const struct mh__fit_trial *t, char *buf,
                          size_t len)
{
    char v[64];
    snprintf(buf, len, "fit: %s on %s", mh__fit_value_text(f->o, t->value, v, sizeof v),
             f->o->cards[t->card].label);
}

/* Seconds a trial takes: the mean of those finished, 30 s before any. */
static double expected_seconds(const struct mh__fit *f)
{
    double sum = 0;
    int n = 0;
    for (int i = 0; i < f->ntrials; i++)
        if (f->trials[i].done) {
            sum += f->trials[i].seconds;
            n++;
        }
    return n ? sum / n : 30.0;
}

static void watch(struct mh__fit *f, uint64_t now)
{
    double expect = expected_seconds(f);
    for (int i = 0; i < f->ntrials; i++) {
        struct mh__fit_trial *t = &f->trials[i];
        if (!t->running)
            continue;
        uint64_t rss = group_resident(t->pid);
        if (rss > t->host_peak)
            t->host_peak = rss;
        double secs = (double)(now - t->started_ns) / 1e9;
        if (!t->stopped && f->host_limit && rss > f->host_limit)
            t->stopped = MH__FIT_HOST_LIMIT;
        else if (!t->stopped && f->o->timeout_s && secs > (double)f->o->timeout_s)
            t->stopped = MH__FIT_TIMEOUT;
        if (t->stopped)
            kill(-t->pid, SIGKILL);
        char what[128];
        progress_what(f, t, what, sizeof what);
        uint64_t total = (uint64_t)(expect * 1000) + 1, done = (uint64_t)(secs * 1000);
        mh__cli_progress(what, done < total ? done : total - 1, total);
    }
}

static void finish(struct mh__fit *f, struct mh__fit_trial *t, int status, const struct rusage *ru)
{
    char what[128];
    t->running = 0;
    t->seconds = (double)(now_ns() - t->started_ns) / 1e9;
    t->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    uint64_t maxrss = (uint64_t)ru->ru_maxrss * 1024; /* the largest process of the tree */
    if (maxrss > t->host_peak)
        t->host_peak = maxrss;
    progress_what(f, t, what, sizeof what);
    mh__cli_progress(what, 1, 1);
}

static void stop_running(struct mh__fit *f, int sig)
{
    for (int i = 0; i < f->ntrials; i++)
        if (f->trials[i].running)
            kill(-f->trials[i].pid, sig);
    for (int i = 0; i < f->ntrials; i++) {
        struct mh__fit_trial *t = &f->trials[i];
        int st;
        struct rusage ru;
        if (!t->running)
            continue;
        while (wait4(t->pid, &st, 0, &ru) < 0 && errno == EINTR)
            ;
        finish(f, t, st, &ru);
    }
}

void mh__fit_trial_stop_all(struct mh__fit *f)
{
    stop_running(f, SIGKILL);
}

int mh__fit_trial_wait(struct mh__fit *f)
{
    uint64_t last = 0;
    for (;;) {
        int running = 0;
        for (int i = 0; i < f->ntrials; i++)
            running += f->trials[i].running;
        if (!running)
            return -1;
        if (interrupted) {
            stop_running(f, SIGTERM); /* the programs finish their recordings */
            return -2;
        }
        int st;
        struct rusage ru;
        pid_t pid = wait4(-1, &st, WNOHANG, &ru);
        for (int i = 0; pid > 0 && i < f->ntrials; i++)
            if (f->trials[i].running && f->trials[i].pid == pid) {
                finish(f, &f->trials[i], st, &ru);
                return i;
            }
        uint64_t now = now_ns();
        if (now - last >= POLL_NS) {
            watch(f, now);
            last = now;
        }
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
}
