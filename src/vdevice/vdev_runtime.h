/* vdev_runtime.h - what the files of the stand-in CUDA runtime (libcudart.so.13,
 * runtime_*.c) share: the per-thread last error and the stream and event
 * objects. The runtime keeps no device state of its own: devices, memory and
 * contexts are the core's (vdev.h, in the stand-in libcuda.so.1). */
#ifndef MH_VDEVICE_VDEV_RUNTIME_H
#define MH_VDEVICE_VDEV_RUNTIME_H

#include <cuda_runtime_api.h>

#include "vdev.h"

/* Not exported: the stand-in exports NVIDIA's functions and nothing else. */
#define MH__VRT_INTERNAL __attribute__((visibility("hidden")))

/* Records `e` as the thread's last error when it is one; returns it. */
MH__VRT_INTERNAL cudaError_t mh__vrt_result(cudaError_t e);
/* The device a stream belongs to (the current device for the default ones). */
MH__VRT_INTERNAL int mh__vrt_stream_device(cudaStream_t s);
/* Marks the current device's context as created (first real use). */
MH__VRT_INTERNAL int mh__vrt_device(void);

#endif
