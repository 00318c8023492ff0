/* cuda_driver.c - the CUDA driver API of the virtual device (stand-in
 * libcuda.so.1): devices, primary contexts, memory and the virtual memory API
 * that torch's expandable segments use, error strings. Every other driver
 * function is a generated stub answering CUDA_ERROR_NOT_SUPPORTED
 * (vdevice.cmake). cuInit answers "no device" and cuGetExportTable "not
 * supported", which keeps NVRTC (torch's jiterator) working as a no-op. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vdev.h"

struct vdev_ctx {
    int dev;
};
static struct vdev_ctx ctxs[MH__VDEV_MAX_DEVICES];

struct vdev_handle {
    int dev;
    size_t size;
};

static int bad_dev(CUdevice d)
{
    return d < 0 || d >= mh__vdev_config()->count;
}

CUresult cuInit(unsigned int flags)
{
    return CUDA_ERROR_NO_DEVICE;
}

CUresult cuDriverGetVersion(int *v)
{
    *v = 13020;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n)
{
    *n = mh__vdev_config()->count;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (bad_dev(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    if (bad_dev(d) || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", mh__vdev_config()->gpu->name);
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d)
{
    if (bad_dev(d))
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = mh__vdev_config()->capacity;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute attr, CUdevice d)
{
    if (bad_dev(d))
        return CUDA_ERROR_INVALID_DEVICE;
    *v = mh__vdev_attribute(attr, d);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice d)
{
    if (bad_dev(d))
        return CUDA_ERROR_INVALID_DEVICE;
    memset(uuid, 0, sizeof *uuid);
    memcpy(uuid->bytes, "memhist-vdev", 12);
    uuid->bytes[15] = (char)d;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned int *flags, int *active)
{
    if (bad_dev(d))
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = mh__vdev_context_active(d);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d)
{
    if (bad_dev(d))
        return CUDA_ERROR_INVALID_DEVICE;
    mh__vdev_context_touch(d);
    ctxs[d].dev = d;
    *ctx = (CUcontext)&ctxs[d];
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice d)
{
    return bad_dev(d) ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx)
{
    int d = mh__vdev_current();
    *ctx = mh__vdev_context_active(d) ? (CUcontext)&ctxs[d] : NULL;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    if (ctx) {
        int d = ((struct vdev_ctx *)ctx)->dev;
        mh__vdev_context_touch(d);
        mh__vdev_set_current(d);
    }
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *d)
{
    *d = mh__vdev_current();
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    mh__vdev_synchronize();
    return CUDA_SUCCESS;
}

CUresult cuMemGetInfo(size_t *free_bytes, size_t *total)
{
    int d = mh__vdev_current();
    mh__vdev_context_touch(d);
    mh__vdev_mem_info(d, free_bytes, total);
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *p, size_t size)
{
    int d = mh__vdev_current();
    mh__vdev_context_touch(d);
    void *ptr;
    if (mh__vdev_alloc(d, size, &ptr) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (CUdeviceptr)ptr;
    return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr p)
{
    return !p || mh__vdev_free((void *)p) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemsetD8(CUdeviceptr p, unsigned char v, size_t n)
{
    mh__vdev_memset((void *)p, v, n);
    return CUDA_SUCCESS;
}

CUresult cuMemsetD32Async(CUdeviceptr p, unsigned int v, size_t n, CUstream s)
{
    unsigned int *a = (unsigned int *)p;
    if (v == 0)
        mh__vdev_memset(a, 0, n * 4);
    else
        for (size_t i = 0; i < n; i++)
            a[i] = v;
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    void *b;
    size_t n;
    if (mh__vdev_ptr_device((void *)p, &b, &n) < 0)
        return CUDA_ERROR_NOT_FOUND;
    if (base)
        *base = (CUdeviceptr)b;
    if (size)
        *size = n;
    return CUDA_SUCCESS;
}

/* ---- the virtual memory API (expandable segments) ---- */

CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    *g = MH__VDEV_PAGE;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr,
                             unsigned long long flags)
{
    void *r = mh__vdev_reserve(mh__vdev_current(), size);
    if (!r)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (CUdeviceptr)r;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr p, size_t size)
{
    return mh__vdev_unreserve((void *)p, size) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags)
{
    if (prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_FABRIC)
        return CUDA_ERROR_NOT_PERMITTED; /* as on machines without fabric memory */
    int d = prop->location.id;
    if (size % MH__VDEV_PAGE)
        return CUDA_ERROR_INVALID_VALUE;
    mh__vdev_context_touch(d);
    if (mh__vdev_physical_take(d, size) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct vdev_handle *x = malloc(sizeof *x);
    if (!x) {
        mh__vdev_physical_give(d, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    x->dev = d, x->size = size;
    *h = (CUmemGenericAllocationHandle)(uintptr_t)x;
    return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
    struct vdev_handle *x = (struct vdev_handle *)(uintptr_t)h;
    if (!x)
        return CUDA_ERROR_INVALID_VALUE;
    mh__vdev_physical_give(x->dev, x->size);
    free(x);
    return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                  unsigned long long flags)
{
    return mh__vdev_map((void *)p, size) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemUnmap(CUdeviceptr p, size_t size)
{
    return mh__vdev_unmap((void *)p, size) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemSetAccess(CUdeviceptr p, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    return CUDA_SUCCESS;
}
