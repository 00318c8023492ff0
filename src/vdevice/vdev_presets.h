/* vdev_presets.h - the GPU models the virtual device can pose as (name, SM count,
 * compute capability, memory), shared by the stand-in libraries
 * (src/vdevice) and `memhist simulate --gpu` (src/cli). */
#ifndef MH_VDEVICE_VDEV_PRESETS_H
#define MH_VDEVICE_VDEV_PRESETS_H

#include <stddef.h>
#include <stdint.h>

struct mh__vdev_gpu {
    const char *key;  /* what --gpu / MEMHIST_VDEVICE_GPU accept (case-insensitive) */
    const char *name; /* what cudaGetDeviceProperties / cuDeviceGetName report */
    int sms, major, minor;
    uint64_t memory; /* total device memory in bytes */
    int bus_width, l2_bytes;
};

size_t mh__vdev_preset_count(void);
const struct mh__vdev_gpu *mh__vdev_preset_at(size_t i);
/* NULL when `key` names no preset. */
const struct mh__vdev_gpu *mh__vdev_preset_find(const char *key);
/* Parses "80GiB", "512MiB", "24G", "1048576"; returns 0 or -1. */
int mh__vdev_parse_size(const char *text, uint64_t *out);

#endif
