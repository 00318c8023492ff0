/* torch_support.c - torch-independent helpers of the torch bridge (see
 * torch_support.h). */
#include "torch_support.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "memhist/error.h"
#include "memhist/recorder.h"
#include "memhist/torch.h"

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, by_value);
    return v[n / 2];
}

int mh__tick_fit(const uint64_t *ticks, const uint64_t *ns, size_t n, struct mh__tick_fit *out)
{
    if (n < 4)
        return MH_EINVAL;
    double *v = malloc(n * sizeof *v);
    if (!v)
        return MH_ENOMEM;
    size_t half = n / 2, m = 0;
    for (size_t i = 0; i + half < n; i++) {
        int64_t dt = (int64_t)(ticks[i + half] - ticks[i]);
        int64_t dn = (int64_t)(ns[i + half] - ns[i]);
        if (dt > 0 && dn > 0)
            v[m++] = (double)dn / (double)dt;
    }
    if (m == 0) {
        free(v);
        return MH_EINVAL;
    }
    double scale = median(v, m);
    for (size_t i = 0; i < n; i++)
        v[i] = (double)(int64_t)(ns[i] - ns[0]) - (double)(int64_t)(ticks[i] - ticks[0]) * scale;
    out->scale = scale;
    out->ticks0 = ticks[0];
    out->ns0 = ns[0] + (uint64_t)(int64_t)median(v, n);
    free(v);
    return 0;
}

int mh__tick_fit_refine(const struct mh__tick_fit *old, double scale, uint64_t t, uint64_t n,
                        uint64_t horizon_ns, struct mh__tick_fit *out)
{
    if (!(scale > 0) || !horizon_ns)
        return MH_EINVAL;
    uint64_t at = mh__tick_to_ns(old, t);
    double offset = (double)(int64_t)(n - at); /* how far the old fit reads behind */
    if (offset >= (double)horizon_ns / 2 || -offset >= (double)horizon_ns / 2)
        return MH_EINVAL;
    out->ticks0 = t;
    out->ns0 = at;
    out->scale = scale * ((double)horizon_ns + offset) / (double)horizon_ns;
    return 0;
}

enum mh__range_kind mh__range_kind(const char *name, int64_t *step)
{
    static const char profiler[] = "ProfilerStep#", optimizer[] = "Optimizer.step#";
    size_t n = strlen(name);
    if (strncmp(name, profiler, sizeof profiler - 1) == 0) {
        *step = strtoll(name + sizeof profiler - 1, NULL, 10);
        return MH__RANGE_PROFILER_STEP;
    }
    if (strncmp(name, optimizer, sizeof optimizer - 1) == 0 && n > 20 &&
        strcmp(name + n - 5, ".step") == 0)
        return MH__RANGE_OPTIMIZER_STEP;
    return MH__RANGE_OTHER;
}

static int env_true(const char *name)
{
    const char *v = getenv(name);
    return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
                 !strcasecmp(v, "on"));
}

const char *mh__torch_alloc_conf_env(void)
{
    const char *v = getenv("PYTORCH_ALLOC_CONF");
    return v && *v ? v : getenv("PYTORCH_CUDA_ALLOC_CONF");
}

int mh__torch_env_check(char *why, size_t len)
{
    static const char *const vars[] = {"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"};
    for (size_t i = 0; i < 2; i++) {
        const char *v = getenv(vars[i]);
        if (v && strstr(v, "backend:cudaMallocAsync")) {
            snprintf(why, len,
                     "%s selects backend:cudaMallocAsync, which has no allocator trace hook; "
                     "memhist records only the native caching allocator (remove that setting "
                     "to record)",
                     vars[i]);
            return MH_EUNSUPPORTED;
        }
    }
    if (env_true("PYTORCH_NO_CUDA_MEMORY_CACHING")) {
        snprintf(why, len, "PYTORCH_NO_CUDA_MEMORY_CACHING=1 disables the caching allocator, "
                           "which then reports no events; unset it to record");
        return MH_EUNSUPPORTED;
    }
    return 0;
}


void mh__torch_record_devices(struct mh_recorder *rec, int count)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    int (*get_dev)(int *, int) = cuda ? (int (*)(int *, int))dlsym(cuda, "cuDeviceGet") : NULL;
    int (*get_name)(char *, int, int) = cuda ? (int (*)(char *, int, int))dlsym(cuda, "cuDeviceGetName") : NULL;
    int (*total_mem)(size_t *, int) = cuda ? (int (*)(size_t *, int))dlsym(cuda, "cuDeviceTotalMem_v2") : NULL;
    for (int i = 0; i < count; i++) {
        char name[256] = "";
        size_t total = 0;
        int dev = -1;
        if (get_dev && get_dev(&dev, i) == 0) {
            if (get_name)
                get_name(name, (int)sizeof name, dev);
            if (total_mem)
                total_mem(&total, dev);
        }
        mh_recorder_set_device(rec, i, name, total);
    }
}

/* Metadata strings interned outside the allocator lock: one writer at a time
 * (the bridge's API lock), lock-free readers; entries are published by
 * `meta_count` and never change afterwards. */
#define META_CAP 256
static char *meta_text[META_CAP];
static uint32_t meta_ids[META_CAP];
static _Atomic size_t meta_count;

uint32_t mh__torch_meta_id(const char *s)
{
    size_t n = atomic_load_explicit(&meta_count, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (strcmp(meta_text[i], s) == 0)
            return meta_ids[i];
    return 0;
}

int mh__torch_meta_add(struct mh_recorder *rec, const char *text)
{
    size_t n = atomic_load_explicit(&meta_count, memory_order_relaxed);
    for (size_t i = 0; i < n; i++)
        if (strcmp(meta_text[i], text) == 0)
            return 0;
    if (n == META_CAP)
        return MH_ELIMIT;
    int64_t id = mh_intern_string(rec, text, strlen(text));
    if (id < 0)
        return (int)id;
    if (!(meta_text[n] = strdup(text)))
        return MH_ENOMEM;
    meta_ids[n] = (uint32_t)id;
    atomic_store_explicit(&meta_count, n + 1, memory_order_release);
    return 0;
}

int mh__torch_opts_check(const struct mh_torch_opts *o, char *why, size_t len)
{
    if (!o)
        return 0;
    if (o->stacks < MH_TORCH_STACKS_DEFAULT || o->stacks > MH_TORCH_STACKS_ALL) {
        snprintf(why, len, "invalid stacks option %d", o->stacks);
        return MH_EINVAL;
    }
    if (o->max_frames < 0 || o->max_frames > MH_TORCH_FRAMES_MAX) {
        snprintf(why, len, "invalid frames option %d: 1 to %d frames per stack (0: %d)",
                 o->max_frames, MH_TORCH_FRAMES_MAX, MH_TORCH_FRAMES_MAX);
        return MH_EINVAL;
    }
    return 0;
}
