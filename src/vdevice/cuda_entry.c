/* cuda_entry.c - the driver API's error strings and entry-point lookup
 * (cuGetProcAddress, which the runtime's cudaGetDriverEntryPoint* also
 * answers from), part of the stand-in libcuda.so.1. A requested name maps to
 * the versioned function the real driver would give for CUDA 12+ requests
 * ("cuMemGetInfo" -> cuMemGetInfo_v2); other names resolve to this
 * library's function of that name, a stub where the virtual device has no
 * behaviour. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "vdev.h"

static const struct {
    CUresult code;
    const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
     "operation not supported (memhist virtual device)"},
};

static int find_error(CUresult e)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == e)
            return (int)i;
    return -1;
}

CUresult cuGetErrorString(CUresult e, const char **s)
{
    int i = find_error(e);
    *s = i >= 0 ? errors[i].text : "unknown error";
    return i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult e, const char **s)
{
    int i = find_error(e);
    *s = i >= 0 ? errors[i].name : "CUDA_ERROR_UNKNOWN";
    return i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Base names whose current version has a suffix. */
static const char *const versioned[][2] = {
    {"cuDeviceTotalMem", "cuDeviceTotalMem_v2"},
    {"cuMemGetInfo", "cuMemGetInfo_v2"},
    {"cuMemAlloc", "cuMemAlloc_v2"},
    {"cuMemFree", "cuMemFree_v2"},
    {"cuMemGetAddressRange", "cuMemGetAddressRange_v2"},
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2"},
    {"cuDeviceGetUuid", "cuDeviceGetUuid_v2"},
    {"cuGetProcAddress", "cuGetProcAddress_v2"},
    {"cuLinkAddData", "cuLinkAddData_v2"},
    {"cuLinkCreate", "cuLinkCreate_v2"},
    {"cuCtxCreate", "cuCtxCreate_v4"},
    {"cuStreamBeginCapture", "cuStreamBeginCapture_v2"},
    {"cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo_v3"},
    {"cuMemsetD8", "cuMemsetD8_v2"},
};

static void *self(void)
{
    static void *h;
    if (!h) {
        Dl_info info;
        if (dladdr((void *)cuGetErrorString, &info) && info.dli_fname)
            h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    }
    return h;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *status)
{
    const char *name = symbol;
    for (size_t i = 0; i < sizeof versioned / sizeof versioned[0]; i++)
        if (strcmp(symbol, versioned[i][0]) == 0)
            name = versioned[i][1];
    void *h = self();
    *pfn = h ? dlsym(h, name) : NULL;
    if (status)
        *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
