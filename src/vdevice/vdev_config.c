/* vdev_config.c - the virtual device's settings (vdev.h lists them), read from
 * the environment once, and the device contexts and synchronization epoch.
 * Part of the stand-in libcuda.so.1. A bad setting falls back to the default
 * and is kept in config.error (libraries never print; `memhist simulate`
 * validates the same settings before it starts the program). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "vdev.h"

static struct mh__vdev_config cfg;
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;
static atomic_int contexts[MH__VDEV_MAX_DEVICES];
static atomic_uint_fast64_t epoch;
static _Thread_local int current;

static void read_config(void)
{
    const char *gpu = getenv("MEMHIST_VDEVICE_GPU"), *mem = getenv("MEMHIST_VDEVICE_MEMORY");
    const char *count = getenv("MEMHIST_VDEVICE_COUNT"), *ctx = getenv("MEMHIST_VDEVICE_CONTEXT");
    const char *events = getenv("MEMHIST_VDEVICE_EVENTS");
    cfg.gpu = mh__vdev_preset_find(gpu && *gpu ? gpu : "H100");
    if (!cfg.gpu) {
        cfg.error = "MEMHIST_VDEVICE_GPU names no preset";
        cfg.gpu = mh__vdev_preset_find("H100");
    }
    cfg.capacity = cfg.gpu->memory;
    uint64_t v;
    if (mem && *mem) {
        if (mh__vdev_parse_size(mem, &v) == 0 && v >= MH__VDEV_PAGE)
            cfg.capacity = v;
        else
            cfg.error = "MEMHIST_VDEVICE_MEMORY is not a size of at least 2MiB";
    }
    cfg.count = 1;
    const char *ranks = getenv("LOCAL_WORLD_SIZE"); /* torchrun: one device per local rank */
    if (!(count && *count) && ranks && atoi(ranks) > 1 && atoi(ranks) <= MH__VDEV_MAX_DEVICES)
        cfg.count = atoi(ranks);
    if (count && *count) {
        char *end;
        long n = strtol(count, &end, 10);
        if (*end || n < 1 || n > MH__VDEV_MAX_DEVICES)
            cfg.error = "MEMHIST_VDEVICE_COUNT is not a number from 1 to 16";
        else
            cfg.count = (int)n;
    }
    cfg.context = 512ull << 20;
    if (ctx && *ctx) {
        if (mh__vdev_parse_size(ctx, &v) == 0 && v < cfg.capacity)
            cfg.context = v;
        else
            cfg.error = "MEMHIST_VDEVICE_CONTEXT is not a size below the capacity";
    }
    if (events && *events) {
        if (strcmp(events, "sync") == 0)
            cfg.events_at_sync = 1;
        else if (strcmp(events, "immediate") != 0)
            cfg.error = "MEMHIST_VDEVICE_EVENTS is neither immediate nor sync";
    }
}

const struct mh__vdev_config *mh__vdev_config(void)
{
    pthread_once(&cfg_once, read_config);
    return &cfg;
}

void mh__vdev_context_touch(int dev)
{
    if (dev >= 0 && dev < MH__VDEV_MAX_DEVICES)
        atomic_store(&contexts[dev], 1);
}

int mh__vdev_context_active(int dev)
{
    return dev >= 0 && dev < MH__VDEV_MAX_DEVICES && atomic_load(&contexts[dev]);
}

uint64_t mh__vdev_epoch(void)
{
    return atomic_load(&epoch);
}

void mh__vdev_synchronize(void)
{
    atomic_fetch_add(&epoch, 1);
}

int mh__vdev_current(void)
{
    return current;
}

void mh__vdev_set_current(int dev)
{
    current = dev;
}
