/* runtime_device.c - the CUDA runtime's device calls on the virtual device:
 * count, current device, properties and attributes (from the preset), peer
 * access, versions, synchronization, the default memory pool. Part of the
 * stand-in libcudart.so.13. */
#include <stdio.h>
#include <string.h>

#include "vdev_runtime.h"

static int bad_dev(int d)
{
    return d < 0 || d >= mh__vdev_config()->count;
}

int mh__vrt_device(void)
{
    int d = mh__vdev_current();
    mh__vdev_context_touch(d);
    return d;
}

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = mh__vdev_config()->count;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *d)
{
    *d = mh__vdev_current();
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int d)
{
    if (bad_dev(d))
        return mh__vrt_result(cudaErrorInvalidDevice);
    mh__vdev_set_current(d);
    mh__vdev_context_touch(d);
    return cudaSuccess;
}

cudaError_t cudaInitDevice(int d, unsigned int dflags, unsigned int flags)
{
    if (bad_dev(d))
        return mh__vrt_result(cudaErrorInvalidDevice);
    mh__vdev_context_touch(d);
    return cudaSuccess;
}

cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
    return cudaSuccess;
}

cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
    *flags = 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr attr, int d)
{
    if (bad_dev(d))
        return mh__vrt_result(cudaErrorInvalidDevice);
    *v = mh__vdev_attribute(attr, d);
    return cudaSuccess;
}

static void fill_limits(struct cudaDeviceProp *p, int d)
{
    p->sharedMemPerBlock = (size_t)mh__vdev_attribute(cudaDevAttrMaxSharedMemoryPerBlock, d);
    p->sharedMemPerBlockOptin =
        (size_t)mh__vdev_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, d);
    p->sharedMemPerMultiprocessor =
        (size_t)mh__vdev_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, d);
    p->regsPerBlock = p->regsPerMultiprocessor = 65536;
    p->warpSize = 32;
    p->memPitch = 2147483647;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->totalConstMem = 65536;
    p->textureAlignment = 512;
    p->texturePitchAlignment = 32;
    p->maxThreadsPerMultiProcessor = 2048;
    p->maxBlocksPerMultiProcessor = 32;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
    if (bad_dev(d))
        return mh__vrt_result(cudaErrorInvalidDevice);
    const struct mh__vdev_config *c = mh__vdev_config();
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", c->gpu->name);
    memcpy(p->uuid.bytes, "memhist-vdev", 12);
    p->uuid.bytes[15] = (char)d;
    p->totalGlobalMem = c->capacity;
    p->major = c->gpu->major;
    p->minor = c->gpu->minor;
    p->multiProcessorCount = c->gpu->sms;
    p->memoryBusWidth = c->gpu->bus_width;
    p->l2CacheSize = c->gpu->l2_bytes;
    p->pciBusID = d + 1;
    fill_limits(p, d);
    p->concurrentKernels = p->unifiedAddressing = p->managedMemory = 1;
    p->canMapHostMemory = p->streamPrioritiesSupported = p->cooperativeLaunch = 1;
    p->globalL1CacheSupported = p->localL1CacheSupported = p->computePreemptionSupported = 1;
    p->memoryPoolsSupported = p->hostRegisterSupported = 1;
    p->asyncEngineCount = 2;
    p->clusterLaunch = c->gpu->major >= 9;
    p->hostNumaId = -1;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int d)
{
    if (bad_dev(d) || len <= 0)
        return mh__vrt_result(cudaErrorInvalidValue);
    snprintf(id, (size_t)len, "00000000:%02X:00.0", d + 1);
    return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int d, int peer)
{
    *can = !bad_dev(d) && !bad_dev(peer) && d != peer;
    return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags)
{
    return bad_dev(peer) ? mh__vrt_result(cudaErrorInvalidDevice) : cudaSuccess;
}

cudaError_t cudaDeviceDisablePeerAccess(int peer)
{
    return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    if (least)
        *least = 0;
    if (greatest)
        *greatest = -5;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
    *v = 13020;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = 13020;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    mh__vdev_synchronize();
    return cudaSuccess;
}

cudaError_t cudaDeviceReset(void)
{
    return cudaSuccess;
}

cudaError_t cudaDeviceGetLimit(size_t *v, enum cudaLimit limit)
{
    *v = limit == cudaLimitStackSize ? 1024 : 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t v)
{
    return cudaSuccess;
}

cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache c)
{
    return cudaSuccess;
}

/* One memory pool object per device; its attributes read as an idle pool. */
static int pools[MH__VDEV_MAX_DEVICES];

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int d)
{
    if (bad_dev(d))
        return mh__vrt_result(cudaErrorInvalidDevice);
    *pool = (cudaMemPool_t)&pools[d];
    return cudaSuccess;
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *pool, int d)
{
    return cudaDeviceGetDefaultMemPool(pool, d);
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value)
{
    if (attr == cudaMemPoolReuseFollowEventDependencies ||
        attr == cudaMemPoolReuseAllowOpportunistic ||
        attr == cudaMemPoolReuseAllowInternalDependencies)
        *(int *)value = 1;
    else
        *(unsigned long long *)value = 0;
    return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value)
{
    return cudaSuccess;
}

cudaError_t cudaMemPoolSetAccess(cudaMemPool_t pool, const struct cudaMemAccessDesc *d, size_t n)
{
    return cudaSuccess;
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep)
{
    return cudaSuccess;
}

cudaError_t cudaDeviceGetGraphMemAttribute(int d, enum cudaGraphMemAttributeType attr, void *value)
{
    *(unsigned long long *)value = 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceSetGraphMemAttribute(int d, enum cudaGraphMemAttributeType attr, void *value)
{
    return cudaSuccess;
}
