/* inject.c - zero-code recording through CUDA_INJECTION64_PATH.
 *
 * When CUDA_INJECTION64_PATH names libmemhist.so, the CUDA driver loads it
 * during cuInit and calls InitializeInjection(). That opens a recorder (or
 * joins one already registered in the process, such as the torch bridge's),
 * starts the CUPTI source (cupti.c) and registers an atexit handler that
 * flushes CUPTI and closes the recorder it opened. `memhist record -- PROGRAM`
 * sets these variables for programs that do not use PyTorch.
 *
 * Environment:
 *   MEMHIST_OUT            output file ("%p" = pid, "%r" = $RANK); default
 *                          "memhist-%p.memhist" in the working directory
 *   MEMHIST_INJECT_SHARED  "1": never open a file here; record into the
 *                          recorder registered with mh_inject_set_recorder
 *                          (starting CUPTI when it is registered, if later)
 *   MEMHIST_CUPTI_LIB      libcupti to load instead of libcupti.so.13
 *   MEMHIST_CUPTI_KERNELS  "0": driver memory only (no kernels, copies, API calls)
 *   MEMHIST_CUPTI_VMM      "0": no callback subscriber for cuMemMap & co.
 *
 * Owns: the registry of the shared recorder and, when it opened one, that
 * recorder. Never prints: problems go to the file's "cupti" meta. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memhist/cupti.h"
#include "memhist/recorder.h"

static pthread_mutex_t inject_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mh_recorder *shared_rec; /* registered by the process (borrowed) */
static struct mh_recorder *owned_rec;  /* opened here, closed at exit */
static struct mh_recorder *cupti_rec;  /* the recorder CUPTI feeds */
static int injected, pending_shared, exit_registered;

static int env_is(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v && strcmp(v, value) == 0;
}

/* MEMHIST_OUT with %p and %r expanded. */
static void output_path(char *out, size_t len)
{
    const char *tmpl = getenv("MEMHIST_OUT");
    const char *rank = getenv("RANK");
    if (!tmpl || !*tmpl)
        tmpl = "memhist-%p.memhist";
    size_t n = 0;
    for (const char *p = tmpl; *p && n + 1 < len; p++) {
        int w = 0;
        if (p[0] == '%' && p[1] == 'p') {
            w = snprintf(out + n, len - n, "%ld", (long)getpid());
            p++;
        } else if (p[0] == '%' && p[1] == 'r') {
            w = snprintf(out + n, len - n, "%s", rank && *rank ? rank : "0");
            p++;
        } else {
            out[n] = *p;
            w = 1;
        }
        n += w > 0 ? (size_t)w : 0;
        if (n >= len)
            n = len - 1;
    }
    out[n] = '\0';
}

static void start_cupti(struct mh_recorder *rec)
{
    struct mh_cupti_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.memory_only = env_is("MEMHIST_CUPTI_KERNELS", "0");
    opts.no_vmm = env_is("MEMHIST_CUPTI_VMM", "0");
    char why[256];
    if (mh_cupti_start(rec, &opts, why, sizeof why) == 0)
        cupti_rec = rec;
}

static void at_exit(void)
{
    pthread_mutex_lock(&inject_lock);
    if (cupti_rec) {
        mh_cupti_stop();
        cupti_rec = NULL;
    }
    struct mh_recorder *rec = owned_rec;
    owned_rec = NULL;
    pthread_mutex_unlock(&inject_lock);
    mh_recorder_close(rec);
}

static struct mh_recorder *open_own(void)
{
    char path[4096], pid[32];
    output_path(path, sizeof path);
    struct mh_recorder *rec = NULL;
    if (mh_recorder_open(path, NULL, &rec) != 0)
        return NULL;
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    mh_recorder_set_meta(rec, "pid", pid);
    mh_recorder_set_meta(rec, "recorded_by", "CUDA injection (CUDA_INJECTION64_PATH)");
    return rec;
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
    pthread_mutex_lock(&inject_lock);
    if (injected) {
        pthread_mutex_unlock(&inject_lock);
        return 1;
    }
    injected = 1;
    struct mh_recorder *rec = shared_rec;
    if (!rec && env_is("MEMHIST_INJECT_SHARED", "1")) {
        pending_shared = 1; /* start when the process registers its recorder */
    } else if (!rec) {
        rec = owned_rec = open_own();
    }
    if (rec)
        start_cupti(rec);
    if (!exit_registered && atexit(at_exit) == 0)
        exit_registered = 1;
    pthread_mutex_unlock(&inject_lock);
    return 1;
}

void mh_inject_set_recorder(struct mh_recorder *rec)
{
    pthread_mutex_lock(&inject_lock);
    if (!rec && cupti_rec && cupti_rec == shared_rec) {
        mh_cupti_stop(); /* the shared recorder is about to close */
        cupti_rec = NULL;
    }
    shared_rec = rec;
    if (rec && pending_shared && !cupti_rec) {
        pending_shared = 0;
        start_cupti(rec);
    }
    pthread_mutex_unlock(&inject_lock);
}

struct mh_recorder *mh_inject_recorder(void)
{
    pthread_mutex_lock(&inject_lock);
    struct mh_recorder *rec = cupti_rec ? cupti_rec : (owned_rec ? owned_rec : shared_rec);
    pthread_mutex_unlock(&inject_lock);
    return rec;
}
