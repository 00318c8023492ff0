/* vdev.h - the virtual CUDA device's core, shared by its stand-in libraries.
 *
 * The core (settings, device memory, contexts, the synchronization epoch)
 * lives in the stand-in libcuda.so.1; libcudart.so.13 and libnvidia-ml.so.1
 * link against it, so the runtime and the driver API see one set of devices
 * and one capacity per device. Device memory is host virtual memory: one
 * MAP_NORESERVE range per device for cudaMalloc/cuMemAlloc, plus address
 * reservations for the virtual memory API (expandable segments). Capacity is
 * counted apart from the address space. Kernels do nothing.
 *
 * Settings, read once from the environment at first use:
 *   MEMHIST_VDEVICE_GPU      preset name (vdev_presets.c; default H100)
 *   MEMHIST_VDEVICE_MEMORY   capacity per device, e.g. 24GiB (default: the preset's)
 *   MEMHIST_VDEVICE_COUNT    number of devices, 1 to 16 (default 1, or
 *                            $LOCAL_WORLD_SIZE under torchrun: a device per rank)
 *   MEMHIST_VDEVICE_CONTEXT  memory a CUDA context takes on its device (default 512MiB)
 *   MEMHIST_VDEVICE_EVENTS   "immediate" (default): events complete when recorded;
 *                            "sync": at the next synchronizing call
 *   MEMHIST_VDEVICE_STATS    a file the counts of vdev_stats.c are appended to at exit */
#ifndef MH_VDEVICE_VDEV_H
#define MH_VDEVICE_VDEV_H

#include <stddef.h>
#include <stdint.h>

#include "vdev_presets.h"

#define MH__VDEV_MAX_DEVICES 16
#define MH__VDEV_PAGE (2u << 20) /* allocation granularity of device memory */

struct mh__vdev_config {
    int count;
    uint64_t capacity; /* total memory per device */
    uint64_t context;  /* taken from it when a device's context is created */
    int events_at_sync;
    const struct mh__vdev_gpu *gpu;
    const char *error; /* a bad setting, NULL if none (the defaults are used instead) */
};

const struct mh__vdev_config *mh__vdev_config(void);

/* Device memory. Return 0, or -1 when out of capacity or address space. */
int mh__vdev_alloc(int dev, size_t size, void **ptr);
int mh__vdev_free(void *ptr); /* -1 if ptr is not an allocation's start */
/* Physical memory of the virtual memory API: counted only. */
int mh__vdev_physical_take(int dev, size_t size);
void mh__vdev_physical_give(int dev, size_t size);
/* Address reservations (no capacity) and mapping them. */
void *mh__vdev_reserve(int dev, size_t size);
int mh__vdev_unreserve(void *ptr, size_t size);
int mh__vdev_map(void *ptr, size_t size);
int mh__vdev_unmap(void *ptr, size_t size);
/* The device whose memory holds p, or -1 for host memory. */
int mh__vdev_ptr_device(const void *p, void **base, size_t *size);
/* Pinned host memory: registered ranges, so pointer attributes say "host". */
int mh__vdev_pin(void *p, size_t size);
int mh__vdev_unpin(void *p); /* -1 if p starts no registered range */
int mh__vdev_is_pinned(const void *p);
void mh__vdev_mem_info(int dev, size_t *free_bytes, size_t *total);
/* memset that gives pages back instead of writing zeros to large ranges. */
void mh__vdev_memset(void *p, int value, size_t n);

/* What the device saw (vdev_stats.c, written at exit to
 * $MEMHIST_VDEVICE_STATS): memory in use now, context included (the peak is
 * kept), an allocation refused for want of capacity, a free-memory query. */
void mh__vdev_stats_in_use(int dev, uint64_t bytes);
void mh__vdev_stats_refused(int dev);
void mh__vdev_stats_mem_info(int dev);

/* Contexts: created on a device's first use; take config.context bytes. */
void mh__vdev_context_touch(int dev);
int mh__vdev_context_active(int dev);

/* A device attribute (the driver's and the runtime's numbering agree);
 * 0 for attributes the virtual device has no value for. */
int mh__vdev_attribute(int attr, int dev);

/* The calling thread's current device (cudaSetDevice, cuCtxSetCurrent). */
int mh__vdev_current(void);
void mh__vdev_set_current(int dev);

/* Events recorded in "sync" mode complete at the next synchronizing call. */
uint64_t mh__vdev_epoch(void);
void mh__vdev_synchronize(void);

#endif
