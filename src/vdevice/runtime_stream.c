/* runtime_stream.c - streams, events, host callbacks and stream capture on
 * the virtual device, part of the stand-in libcudart.so.13. Work is done
 * when it is issued (kernels do nothing), so streams are always idle and host
 * functions run at once. Events complete when recorded, or, with
 * MEMHIST_VDEVICE_EVENTS=sync, at the next synchronizing call (device, stream
 * or event synchronize, a blocking copy to the host), so blocks freed on
 * another stream are reused as late as the allocator allows. Graph capture
 * is refused ("not supported"): captured work would not be replayed. */
#include <stdlib.h>
#include <time.h>

#include "vdev_runtime.h"

struct vrt_stream {
    int dev, priority;
    unsigned int flags;
};

struct vrt_event {
    uint64_t epoch;
    int recorded;
    unsigned int flags;
    double ms;
};

static _Thread_local cudaError_t last_error;

cudaError_t mh__vrt_result(cudaError_t e)
{
    if (e != cudaSuccess)
        last_error = e;
    return e;
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

static int is_default(cudaStream_t s)
{
    return s == 0 || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

int mh__vrt_stream_device(cudaStream_t s)
{
    return is_default(s) ? mh__vdev_current() : ((struct vrt_stream *)s)->dev;
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int priority)
{
    struct vrt_stream *x = malloc(sizeof *x);
    if (!x)
        return mh__vrt_result(cudaErrorMemoryAllocation);
    x->dev = mh__vrt_device();
    x->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
    x->flags = flags;
    *s = (cudaStream_t)x;
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    return cudaStreamCreateWithPriority(s, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    return cudaStreamCreateWithPriority(s, 0, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (!is_default(s))
        free(s);
    return cudaSuccess;
}

cudaError_t cudaStreamGetPriority(cudaStream_t s, int *priority)
{
    *priority = is_default(s) ? 0 : ((struct vrt_stream *)s)->priority;
    return cudaSuccess;
}

cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned int *flags)
{
    *flags = is_default(s) ? 0 : ((struct vrt_stream *)s)->flags;
    return cudaSuccess;
}

cudaError_t cudaStreamGetDevice(cudaStream_t s, int *d)
{
    *d = mh__vrt_stream_device(s);
    return cudaSuccess;
}

cudaError_t cudaStreamGetId(cudaStream_t s, unsigned long long *id)
{
    *id = is_default(s) ? 0 : (unsigned long long)(uintptr_t)s;
    return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t s)
{
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    mh__vdev_synchronize();
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
    return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *data)
{
    fn(data);
    return cudaSuccess;
}

cudaError_t cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t cb, void *data,
                                  unsigned int flags)
{
    cb(s, cudaSuccess, data);
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status)
{
    *status = cudaStreamCaptureStatusNone;
    return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, enum cudaStreamCaptureStatus *status,
                                     unsigned long long *id, cudaGraph_t *graph,
                                     const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                     size_t *ndeps)
{
    *status = cudaStreamCaptureStatusNone;
    if (id)
        *id = 0;
    return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    static _Thread_local enum cudaStreamCaptureMode current = cudaStreamCaptureModeGlobal;
    enum cudaStreamCaptureMode old = current;
    current = *mode;
    *mode = old;
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    return mh__vrt_result(cudaErrorNotSupported);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    struct vrt_event *x = calloc(1, sizeof *x);
    if (!x)
        return mh__vrt_result(cudaErrorMemoryAllocation);
    x->flags = flags;
    *e = (cudaEvent_t)x;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    return cudaEventCreateWithFlags(e, 0);
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    free(e);
    return cudaSuccess;
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags)
{
    struct vrt_event *x = (struct vrt_event *)e;
    if (!x)
        return mh__vrt_result(cudaErrorInvalidResourceHandle);
    x->recorded = 1;
    x->epoch = mh__vdev_epoch();
    x->ms = now_ms();
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    return cudaEventRecordWithFlags(e, s, 0);
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
    struct vrt_event *x = (struct vrt_event *)e;
    if (!x)
        return mh__vrt_result(cudaErrorInvalidResourceHandle);
    if (mh__vdev_config()->events_at_sync && x->recorded && x->epoch >= mh__vdev_epoch())
        return cudaErrorNotReady; /* not an error: not recorded as the last one */
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    mh__vdev_synchronize();
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    const struct vrt_event *a = (const struct vrt_event *)start, *b = (const struct vrt_event *)end;
    if (!a || !b || !a->recorded || !b->recorded)
        return mh__vrt_result(cudaErrorInvalidResourceHandle);
    *ms = (float)(b->ms - a->ms);
    return cudaSuccess;
}
