/* runtime_misc.c - the CUDA runtime's module and kernel calls on the
 * virtual device: fat binary, function and variable registration (kept by
 * nobody: kernels never run), launches (no-ops), function attributes and
 * occupancy, loaded libraries, error names and strings, and driver entry
 * points (answered by the stand-in libcuda's cuGetProcAddress). Part of the
 * stand-in libcudart.so.13. */
#include <cuda.h>
#include <string.h>

#include "vdev_runtime.h"

/* The registration and launch-configuration entry points nvcc emits. */
void **__cudaRegisterFatBinary(void *fatbin);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaUnregisterFatBinary(void **handle);
void __cudaRegisterFunction(void **h, const char *host_fun, char *dev_fun, const char *name,
                            int limit, uint3 *tid, uint3 *bid, dim3 *bdim, dim3 *gdim, int *wsize);
void __cudaRegisterVar(void **h, char *host_var, char *dev_addr, const char *name, int ext,
                       size_t size, int constant, int global);
void __cudaRegisterManagedVar(void **h, void **host_var, char *dev_addr, const char *name, int ext,
                              size_t size, int constant, int global);
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, void *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shared, void *stream);
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *entry);

static void *fatbin_handle[4];

void **__cudaRegisterFatBinary(void *fatbin)
{
    return fatbin_handle;
}

void __cudaRegisterFatBinaryEnd(void **handle)
{
}
void __cudaUnregisterFatBinary(void **handle)
{
}
void __cudaRegisterFunction(void **h, const char *host_fun, char *dev_fun, const char *name,
                            int limit, uint3 *tid, uint3 *bid, dim3 *bdim, dim3 *gdim, int *wsize)
{
}
void __cudaRegisterVar(void **h, char *host_var, char *dev_addr, const char *name, int ext,
                       size_t size, int constant, int global)
{
}
void __cudaRegisterManagedVar(void **h, void **host_var, char *dev_addr, const char *name, int ext,
                              size_t size, int constant, int global)
{
}

static _Thread_local struct {
    dim3 grid, block;
    size_t shared;
    void *stream;
} call_config;

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, void *stream)
{
    call_config.grid = grid, call_config.block = block;
    call_config.shared = shared, call_config.stream = stream;
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shared, void *stream)
{
    *grid = call_config.grid, *block = call_config.block, *shared = call_config.shared;
    *(void **)stream = call_config.stream;
    return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *entry)
{
    *kernel = (cudaKernel_t)entry;
    return cudaSuccess;
}

cudaError_t cudaGetKernel(cudaKernel_t *kernel, const void *entry)
{
    return __cudaGetKernel(kernel, entry);
}

cudaError_t cudaGetFuncBySymbol(cudaFunction_t *f, const void *sym)
{
    *f = (cudaFunction_t)sym;
    return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void *f, dim3 grid, dim3 block, void **args, size_t shared,
                             cudaStream_t s)
{
    return cudaSuccess;
}

cudaError_t cudaLaunchCooperativeKernel(const void *f, dim3 grid, dim3 block, void **args,
                                        size_t shared, cudaStream_t s)
{
    return cudaSuccess;
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *f, void **args)
{
    return cudaSuccess;
}

cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *a, const void *f)
{
    memset(a, 0, sizeof *a);
    a->maxThreadsPerBlock = 1024;
    a->numRegs = 32;
    a->ptxVersion = a->binaryVersion = 90;
    a->maxDynamicSharedSizeBytes = 48 << 10;
    return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void *f, enum cudaFuncAttribute attr, int v)
{
    return cudaSuccess;
}

cudaError_t cudaFuncSetCacheConfig(const void *f, enum cudaFuncCache c)
{
    return cudaSuccess;
}

cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t k, enum cudaFuncAttribute attr, int v,
                                            int d)
{
    return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, const void *f, int block,
                                                                   size_t shared,
                                                                   unsigned int flags)
{
    int blocks = block > 0 ? 2048 / block : 1;
    *n = blocks < 1 ? 1 : blocks > 32 ? 32 : blocks;
    return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *f, int block,
                                                          size_t shared)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, f, block, shared, 0);
}

static int library_handle;

cudaError_t cudaLibraryLoadData(cudaLibrary_t *lib, const void *code, enum cudaJitOption *jo,
                                void **jv, unsigned int nj, enum cudaLibraryOption *lo, void **lv,
                                unsigned int nl)
{
    *lib = (cudaLibrary_t)&library_handle;
    return cudaSuccess;
}

cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t *lib, const char *file, enum cudaJitOption *jo,
                                    void **jv, unsigned int nj, enum cudaLibraryOption *lo,
                                    void **lv, unsigned int nl)
{
    *lib = (cudaLibrary_t)&library_handle;
    return cudaSuccess;
}

cudaError_t cudaLibraryUnload(cudaLibrary_t lib)
{
    return cudaSuccess;
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t *k, cudaLibrary_t lib, const char *name)
{
    *k = (cudaKernel_t)&library_handle;
    return cudaSuccess;
}

cudaError_t cudaLibraryGetKernelCount(unsigned int *n, cudaLibrary_t lib)
{
    *n = 0;
    return cudaSuccess;
}

cudaError_t cudaProfilerStart(void)
{
    return cudaSuccess;
}

cudaError_t cudaProfilerStop(void)
{
    return cudaSuccess;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fn, unsigned int version,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *status)
{
    CUdriverProcAddressQueryResult st;
    CUresult r = cuGetProcAddress(sym, fn, (int)version, flags, &st);
    if (status)
        *status =
            r == CUDA_SUCCESS ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess;
}

cudaError_t cudaGetDriverEntryPoint(const char *sym, void **fn, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *status)
{
    return cudaGetDriverEntryPointByVersion(sym, fn, 13000, flags, status);
}

static const struct {
    cudaError_t code;
    const char *name, *text;
} errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorNotSupported, "cudaErrorNotSupported",
     "operation not supported on the memhist virtual device"},
};

const char *cudaGetErrorName(cudaError_t e)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == e)
            return errors[i].name;
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == e)
            return errors[i].text;
    return "unknown error";
}
