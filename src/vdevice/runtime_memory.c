/* runtime_memory.c - the CUDA runtime's memory calls on the virtual device:
 * device, managed and pinned host allocations, memory info, pointer
 * attributes, copies and memsets (real memmove/memset on host memory, so
 * data copied to the device reads back; device-to-device copies are skipped
 * and large zero-fills give pages back, so device memory costs host memory
 * only where the host wrote to it). Part of the
 * stand-in libcudart.so.13. */
#include <stdlib.h>
#include <string.h>

#include "vdev_runtime.h"

static cudaError_t device_alloc(int d, void **p, size_t size)
{
    mh__vdev_context_touch(d);
    if (mh__vdev_alloc(d, size, p) < 0) {
        *p = NULL;
        return mh__vrt_result(cudaErrorMemoryAllocation);
    }
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t size)
{
    return device_alloc(mh__vdev_current(), p, size);
}

cudaError_t cudaFree(void *p)
{
    if (!p) { /* cudaFree(0): the classic way to create the context */
        mh__vrt_device();
        return cudaSuccess;
    }
    return mh__vdev_free(p) == 0 ? cudaSuccess : mh__vrt_result(cudaErrorInvalidValue);
}

cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s)
{
    return device_alloc(mh__vrt_stream_device(s), p, size);
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    return cudaFree(p);
}

cudaError_t cudaMallocManaged(void **p, size_t size, unsigned int flags)
{
    return cudaMalloc(p, size);
}

cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags)
{
    if (posix_memalign(p, 4096, size ? size : 1)) {
        *p = NULL;
        return mh__vrt_result(cudaErrorMemoryAllocation);
    }
    if (mh__vdev_pin(*p, size) < 0) {
        free(*p);
        *p = NULL;
        return mh__vrt_result(cudaErrorMemoryAllocation);
    }
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t size)
{
    return cudaHostAlloc(p, size, 0);
}

cudaError_t cudaFreeHost(void *p)
{
    if (p && mh__vdev_unpin(p) < 0)
        return mh__vrt_result(cudaErrorInvalidValue);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaHostRegister(void *p, size_t size, unsigned int flags)
{
    return mh__vdev_pin(p, size) == 0 ? cudaSuccess : mh__vrt_result(cudaErrorMemoryAllocation);
}

cudaError_t cudaHostUnregister(void *p)
{
    return mh__vdev_unpin(p) == 0 ? cudaSuccess : mh__vrt_result(cudaErrorHostMemoryNotRegistered);
}

cudaError_t cudaHostGetDevicePointer(void **dp, void *hp, unsigned int flags)
{
    *dp = hp;
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    mh__vdev_mem_info(mh__vrt_device(), free_bytes, total);
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    void *base;
    size_t size;
    int d = mh__vdev_ptr_device(p, &base, &size);
    memset(a, 0, sizeof *a);
    if (d >= 0) {
        a->type = cudaMemoryTypeDevice;
        a->device = d;
        a->devicePointer = (void *)p;
    } else if (mh__vdev_is_pinned(p)) { /* mapped: the device sees it at the same address */
        a->type = cudaMemoryTypeHost;
        a->device = mh__vdev_current();
        a->devicePointer = a->hostPointer = (void *)p;
    } else {
        a->type = cudaMemoryTypeUnregistered;
        a->device = -2;
        a->hostPointer = (void *)p;
    }
    return cudaSuccess;
}

/* Copies between host and device are real, so data put on the device reads
 * back. Copies from device to device are skipped: kernels compute no values
 * anyway, and copying would make untouched (free) pages cost host memory. */
static void move(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    void *base;
    size_t size;
    if (!n || kind == cudaMemcpyDeviceToDevice)
        return;
    if (kind == cudaMemcpyDefault && mh__vdev_ptr_device(dst, &base, &size) >= 0 &&
        mh__vdev_ptr_device(src, &base, &size) >= 0)
        return;
    memmove(dst, src, n);
}

static cudaError_t copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    move(dst, src, n, kind);
    if (kind == cudaMemcpyDeviceToHost)
        mh__vdev_synchronize(); /* a blocking copy waits for the device */
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    return copy(dst, src, n, kind);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    move(dst, src, n, kind);
    return cudaSuccess;
}

cudaError_t cudaMemcpyPeer(void *dst, int dd, const void *src, int sd, size_t n)
{
    return copy(dst, src, n, cudaMemcpyDeviceToDevice);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dd, const void *src, int sd, size_t n,
                                cudaStream_t s)
{
    return cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t s)
{
    for (size_t r = 0; r < height; r++)
        move((char *)dst + r * dpitch, (const char *)src + r * spitch, width, kind);
    return cudaSuccess;
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind)
{
    cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, 0);
    return copy(dst, dst, 0, kind);
}

/* Symbols (__device__ variables) live in host memory registered by
 * __cudaRegisterVar: the host shadow is the "device" copy. */
cudaError_t cudaMemcpyToSymbol(const void *sym, const void *src, size_t n, size_t off,
                               enum cudaMemcpyKind k)
{
    memmove((char *)sym + off, src, n);
    return cudaSuccess;
}

cudaError_t cudaMemcpyToSymbolAsync(const void *sym, const void *src, size_t n, size_t off,
                                    enum cudaMemcpyKind k, cudaStream_t s)
{
    return cudaMemcpyToSymbol(sym, src, n, off, k);
}

cudaError_t cudaMemcpyFromSymbol(void *dst, const void *sym, size_t n, size_t off,
                                 enum cudaMemcpyKind k)
{
    memmove(dst, (const char *)sym + off, n);
    return cudaSuccess;
}

cudaError_t cudaGetSymbolAddress(void **p, const void *sym)
{
    *p = (void *)sym;
    return cudaSuccess;
}

cudaError_t cudaGetSymbolSize(size_t *size, const void *sym)
{
    *size = 0;
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
    mh__vdev_memset(p, v, n);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int v, size_t n)
{
    return cudaMemsetAsync(p, v, n, 0);
}

cudaError_t cudaMemset2DAsync(void *p, size_t pitch, int v, size_t width, size_t height,
                              cudaStream_t s)
{
    for (size_t r = 0; r < height; r++)
        memset((char *)p + r * pitch, v, width);
    return cudaSuccess;
}

cudaError_t cudaMemPrefetchAsync(const void *p, size_t n, struct cudaMemLocation loc,
                                 unsigned int flags, cudaStream_t s)
{
    return cudaSuccess;
}
