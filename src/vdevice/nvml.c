/* nvml.c - the stand-in NVML (libnvidia-ml.so.1): device count, handles,
 * names, memory and driver version of the virtual devices, and a GPU fabric
 * state of "not supported", which makes torch's expandable segments use
 * POSIX handles. Other NVML functions are generated stubs answering "not
 * supported". NVML's own header is not needed: its calls take
 * plain integers, strings and opaque handles. */
#include <stdio.h>
#include <string.h>

#include "vdev.h"

#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3

struct nvml_memory {
    unsigned long long total, free, used;
};

static int handles[MH__VDEV_MAX_DEVICES];

int nvmlInit_v2(void)
{
    return NVML_SUCCESS;
}

int nvmlInit(void)
{
    return NVML_SUCCESS;
}

int nvmlInitWithFlags(unsigned int flags)
{
    return NVML_SUCCESS;
}

int nvmlShutdown(void)
{
    return NVML_SUCCESS;
}

const char *nvmlErrorString(int r)
{
    return r == NVML_SUCCESS               ? "Success"
           : r == NVML_ERROR_NOT_SUPPORTED ? "Not Supported"
                                           : "Invalid Argument";
}

int nvmlDeviceGetCount_v2(unsigned int *n)
{
    *n = (unsigned int)mh__vdev_config()->count;
    return NVML_SUCCESS;
}

int nvmlDeviceGetCount(unsigned int *n)
{
    return nvmlDeviceGetCount_v2(n);
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev)
{
    if (i >= (unsigned int)mh__vdev_config()->count)
        return NVML_ERROR_INVALID_ARGUMENT;
    handles[i] = (int)i;
    *dev = &handles[i];
    return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex(unsigned int i, void **dev)
{
    return nvmlDeviceGetHandleByIndex_v2(i, dev);
}

/* Bus ids as cudaDeviceGetPCIBusId gives them: "00000000:<dev + 1>:00.0". */
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, void **dev)
{
    unsigned int domain, bus;
    if (sscanf(bus_id, "%x:%x", &domain, &bus) != 2 || bus < 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    return nvmlDeviceGetHandleByIndex_v2(bus - 1, dev);
}

int nvmlDeviceGetHandleByPciBusId(const char *bus_id, void **dev)
{
    return nvmlDeviceGetHandleByPciBusId_v2(bus_id, dev);
}

int nvmlDeviceGetIndex(void *dev, unsigned int *i)
{
    *i = (unsigned int)*(int *)dev;
    return NVML_SUCCESS;
}

int nvmlDeviceGetName(void *dev, char *name, unsigned int len)
{
    if (!len)
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(name, len, "%s", mh__vdev_config()->gpu->name);
    return NVML_SUCCESS;
}

int nvmlDeviceGetMemoryInfo(void *dev, struct nvml_memory *m)
{
    size_t free_bytes, total;
    mh__vdev_mem_info(*(int *)dev, &free_bytes, &total);
    m->total = total, m->free = free_bytes, m->used = total - free_bytes;
    return NVML_SUCCESS;
}

/* No process holds memory on a virtual device as far as NVML knows (torch
 * lists them in its OOM message). */
int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count, void *infos)
{
    *count = 0;
    return NVML_SUCCESS;
}

int nvmlDeviceGetComputeRunningProcesses_v2(void *dev, unsigned int *count, void *infos)
{
    *count = 0;
    return NVML_SUCCESS;
}

int nvmlDeviceGetComputeRunningProcesses(void *dev, unsigned int *count, void *infos)
{
    *count = 0;
    return NVML_SUCCESS;
}

/* The GPU fabric (multi-node NVLink) query: answered, with the state "not
 * supported", as on GPUs outside an NVLink fabric, so torch's expandable
 * segments use POSIX handles without warning. Only the fields every version
 * of nvmlGpuFabricInfo(V)_t shares are written: status at byte 20, state
 * (an unsigned char) at byte 28. */
int nvmlDeviceGetGpuFabricInfoV(void *dev, void *info)
{
    int status = NVML_ERROR_NOT_SUPPORTED;
    memcpy((char *)info + 20, &status, sizeof status);
    ((unsigned char *)info)[28] = 0; /* NVML_GPU_FABRIC_STATE_NOT_SUPPORTED */
    return NVML_SUCCESS;
}

int nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    *v = 13020;
    return NVML_SUCCESS;
}

int nvmlSystemGetCudaDriverVersion(int *v)
{
    return nvmlSystemGetCudaDriverVersion_v2(v);
}

int nvmlSystemGetDriverVersion(char *v, unsigned int len)
{
    if (!len)
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(v, len, "memhist-vdevice");
    return NVML_SUCCESS;
}
