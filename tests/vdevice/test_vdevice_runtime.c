/* test_vdevice_runtime.c - the virtual CUDA device's stand-in libraries
 * called directly through the CUDA runtime and driver APIs (label vdevice):
 * presets and settings, capacity and OOM, memory info with the context,
 * copies, event completion modes, the virtual memory API that expandable
 * segments use, the counts written at exit (MEMHIST_VDEVICE_STATS), and
 * stubs. Criterion runs each test in its own process, so
 * each sets the environment before the device reads it. */
#include <criterion/criterion.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vdev.h"

#define MIB (1024ull * 1024ull)

static void settings(const char *gpu, const char *memory, const char *context, const char *events)
{
    setenv("MEMHIST_VDEVICE_GPU", gpu, 1);
    setenv("MEMHIST_VDEVICE_MEMORY", memory, 1);
    setenv("MEMHIST_VDEVICE_CONTEXT", context, 1);
    setenv("MEMHIST_VDEVICE_EVENTS", events, 1);
    unsetenv("MEMHIST_VDEVICE_COUNT");
    unsetenv("LOCAL_WORLD_SIZE");
}

Test(vdevice, preset_properties)
{
    settings("rtx_4090", "", "0", "immediate");
    int n = 0;
    struct cudaDeviceProp p;
    cr_assert_eq(cudaGetDeviceCount(&n), cudaSuccess);
    cr_assert_eq(n, 1);
    cr_assert_eq(cudaGetDeviceProperties(&p, 0), cudaSuccess);
    const struct mh__vdev_gpu *g = mh__vdev_preset_find("RTX4090");
    cr_assert_str_eq(p.name, g->name);
    cr_assert_eq(p.totalGlobalMem, g->memory);
    cr_assert_eq(p.multiProcessorCount, g->sms);
    cr_assert_eq(p.major * 10 + p.minor, 89);
    char name[64];
    size_t total = 0;
    cr_assert_eq(cuDeviceGetName(name, sizeof name, 0), CUDA_SUCCESS);
    cr_assert_str_eq(name, g->name);
    cr_assert_eq(cuDeviceTotalMem(&total, 0), CUDA_SUCCESS);
    cr_assert_eq(total, g->memory);
    cr_assert_eq(cudaGetDeviceProperties(&p, 1), cudaErrorInvalidDevice);
    cr_assert_null(mh__vdev_config()->error);
}

Test(vdevice, bad_settings_fall_back_and_say_why)
{
    settings("no-such-gpu", "lots", "0", "whenever");
    const struct mh__vdev_config *c = mh__vdev_config();
    cr_assert_not_null(c->error);
    cr_assert_str_eq(c->gpu->key, "H100");
    cr_assert_eq(c->capacity, c->gpu->memory);
    cr_assert_eq(c->events_at_sync, 0);
}

Test(vdevice, devices_per_local_rank)
{
    settings("A10", "1GiB", "0", "immediate");
    setenv("LOCAL_WORLD_SIZE", "4", 1);
    int n = 0;
    cudaGetDeviceCount(&n);
    cr_assert_eq(n, 4);
}

Test(vdevice, capacity_and_oom)
{
    settings("L4", "64MiB", "0", "immediate");
    void *a, *b, *c;
    cr_assert_eq(cudaMalloc(&a, 32 * MIB), cudaSuccess);
    cr_assert_eq(cudaMalloc(&b, 31 * MIB), cudaSuccess); /* rounded up to 32 MiB */
    cr_assert_eq(cudaMalloc(&c, 1), cudaErrorMemoryAllocation);
    cr_assert_null(c);
    cr_assert_eq(cudaGetLastError(), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cr_assert_eq(cudaFree(a), cudaSuccess);
    cr_assert_eq(cudaMalloc(&c, 2 * MIB), cudaSuccess);
    cr_assert_eq(c, a, "first fit reuses the freed range");
    cr_assert_eq(cudaFree(b), cudaSuccess);
    cr_assert_eq(cudaFree(b), cudaErrorInvalidValue, "double free is refused");
    struct cudaPointerAttributes at;
    cr_assert_eq(cudaPointerGetAttributes(&at, (char *)c + 100), cudaSuccess);
    cr_assert_eq(at.type, cudaMemoryTypeDevice);
    cr_assert_eq(at.device, 0);
    int host;
    cr_assert_eq(cudaPointerGetAttributes(&at, &host), cudaSuccess);
    cr_assert_eq(at.type, cudaMemoryTypeUnregistered);
}

/* MEMHIST_VDEVICE_STATS: a process's counts appended when it exits. */
Test(vdevice, stats_written_at_exit)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_vdevice_stats_%d", (int)getpid());
    unlink(path);
    pid_t pid = fork();
    if (pid == 0) {
        settings("L4", "64MiB", "4MiB", "immediate");
        setenv("MEMHIST_VDEVICE_STATS", path, 1);
        size_t free_bytes, total;
        void *a, *b;
        cudaMemGetInfo(&free_bytes, &total); /* before any refusal */
        cudaMalloc(&a, 32 * MIB);
        cudaMalloc(&b, 16 * MIB);
        if (cudaMalloc(&b, 32 * MIB) != cudaErrorMemoryAllocation)
            _exit(3);
        cudaMemGetInfo(&free_bytes, &total); /* after it */
        cudaMemGetInfo(&free_bytes, &total);
        exit(0); /* the destructor writes the line */
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "the stats file was written");
    char line[256] = "";
    cr_assert_not_null(fgets(line, sizeof line, f));
    fclose(f);
    unlink(path);
    int p, dev;
    unsigned long long peak, refused, info, late, cap;
    cr_assert_eq(sscanf(line,
                        "pid %d device %d peak_used %llu refused %llu mem_info %llu "
                        "mem_info_after_refusal %llu capacity %llu",
                        &p, &dev, &peak, &refused, &info, &late, &cap),
                 7, "%s", line);
    cr_assert_eq(p, pid);
    cr_assert_eq(dev, 0);
    cr_assert_eq(peak, 52 * MIB, "48 MiB allocated and the 4 MiB context: %llu", peak);
    cr_assert_eq(refused, 1);
    cr_assert_eq(info, 1);
    cr_assert_eq(late, 2);
    cr_assert_eq(cap, 64 * MIB);
}

Test(vdevice, context_takes_free_memory)
{
    settings("H100", "100MiB", "10MiB", "immediate");
    size_t free_bytes, total;
    cr_assert_eq(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    cr_assert_eq(total, 100 * MIB);
    cr_assert_eq(free_bytes, 90 * MIB);
    void *p;
    cr_assert_eq(cudaMalloc(&p, 7 * MIB), cudaSuccess);
    cudaMemGetInfo(&free_bytes, &total);
    cr_assert_eq(free_bytes, 82 * MIB, "7 MiB take 8 MiB of 2 MiB pages");
    cr_assert_eq(cudaMalloc(&p, 84 * MIB), cudaErrorMemoryAllocation);
}

Test(vdevice, copies_and_memsets)
{
    settings("A100-40GB", "256MiB", "0", "immediate");
    char *d, host[4096], back[4096];
    for (size_t i = 0; i < sizeof host; i++)
        host[i] = (char)(i * 7);
    cr_assert_eq(cudaMalloc((void **)&d, 8 * MIB), cudaSuccess);
    cr_assert_eq(cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice), cudaSuccess);
    cr_assert_eq(cudaMemcpy(back, d, sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
    cr_assert_eq(memcmp(host, back, sizeof host), 0);
    memset(d, 0x5a, 8 * MIB);
    cr_assert_eq(cudaMemsetAsync(d + 1, 0, 8 * MIB - 2, 0), cudaSuccess); /* pages given back */
    cr_assert_eq(d[0], 0x5a);
    cr_assert_eq(d[1], 0);
    cr_assert_eq(d[4 * MIB], 0);
    cr_assert_eq(d[8 * MIB - 2], 0);
    cr_assert_eq(d[8 * MIB - 1], 0x5a);
    cr_assert_eq(cudaMemset(d, 3, 16), cudaSuccess);
    cr_assert_eq(d[15], 3);
}

Test(vdevice, pinned_host_memory)
{
    settings("A10", "64MiB", "0", "immediate");
    void *h;
    struct cudaPointerAttributes at;
    cr_assert_eq(cudaHostAlloc(&h, 10000, cudaHostAllocDefault), cudaSuccess);
    cr_assert_eq(cudaPointerGetAttributes(&at, (char *)h + 9999), cudaSuccess);
    cr_assert_eq(at.type, cudaMemoryTypeHost);
    cr_assert_eq(cudaPointerGetAttributes(&at, (char *)h + 10000), cudaSuccess);
    cr_assert_eq(at.type, cudaMemoryTypeUnregistered, "one past the end is not pinned");
    cr_assert_eq(cudaFreeHost(h), cudaSuccess);
    cr_assert_eq(cudaPointerGetAttributes(&at, h), cudaSuccess);
    cr_assert_eq(at.type, cudaMemoryTypeUnregistered);
    static char buf[4096];
    cr_assert_eq(cudaHostRegister(buf, sizeof buf, 0), cudaSuccess);
    cudaPointerGetAttributes(&at, buf);
    cr_assert_eq(at.type, cudaMemoryTypeHost);
    cr_assert_eq(cudaHostUnregister(buf), cudaSuccess);
    cr_assert_eq(cudaHostUnregister(buf), cudaErrorHostMemoryNotRegistered);
}

Test(vdevice, events_complete_at_once)
{
    settings("T4", "64MiB", "0", "immediate");
    cudaEvent_t e;
    cr_assert_eq(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
    cr_assert_eq(cudaEventRecord(e, 0), cudaSuccess);
    cr_assert_eq(cudaEventQuery(e), cudaSuccess);
    cudaEventDestroy(e);
}

Test(vdevice, events_complete_at_next_synchronize)
{
    settings("T4", "64MiB", "0", "sync");
    cudaEvent_t e;
    cudaStream_t s;
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&e), cudaSuccess);
    cr_assert_eq(cudaEventRecord(e, s), cudaSuccess);
    cr_assert_eq(cudaEventQuery(e), cudaErrorNotReady);
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "not ready is no error");
    cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
    cr_assert_eq(cudaEventQuery(e), cudaSuccess);
    cr_assert_eq(cudaEventRecord(e, s), cudaSuccess);
    cr_assert_eq(cudaEventQuery(e), cudaErrorNotReady);
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
    cr_assert_eq(cudaEventQuery(e), cudaSuccess);
}

typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                              unsigned long long);

Test(vdevice, virtual_memory_api)
{
    settings("H100", "64MiB", "0", "immediate");
    create_fn create = NULL;
    enum cudaDriverEntryPointQueryResult st;
    cr_assert_eq(cudaGetDriverEntryPointByVersion("cuMemCreate", (void **)&create, 12000, 0, &st),
                 cudaSuccess);
    cr_assert_eq(st, cudaDriverEntryPointSuccess);
    cr_assert_eq((void *)create, (void *)cuMemCreate);
    void *info = NULL;
    cudaGetDriverEntryPointByVersion("cuMemGetInfo", &info, 12000, 0, &st);
    cr_assert_eq(info, (void *)cuMemGetInfo_v2, "base names map to the current version");

    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                                .requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC};
    CUmemGenericAllocationHandle h, h2;
    cr_assert_eq(create(&h, 2 * MIB, &prop, 0), CUDA_ERROR_NOT_PERMITTED, "fabric handles refused");
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    size_t gran = 0;
    cr_assert_eq(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
                 CUDA_SUCCESS);
    cr_assert_eq(gran, 2 * MIB);
    cr_assert_eq(create(&h, 48 * MIB, &prop, 0), CUDA_SUCCESS);
    cr_assert_eq(create(&h2, 32 * MIB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY, "capacity is shared");
    CUdeviceptr va;
    cr_assert_eq(cuMemAddressReserve(&va, 1024 * MIB, 0, 0, 0), CUDA_SUCCESS,
                 "reservations are free");
    cr_assert_eq(cuMemMap(va, 48 * MIB, 0, h, 0), CUDA_SUCCESS);
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    cr_assert_eq(cuMemSetAccess(va, 48 * MIB, &acc, 1), CUDA_SUCCESS);
    ((char *)va)[47 * MIB] = 1;
    struct cudaPointerAttributes at;
    cudaPointerGetAttributes(&at, (void *)(va + MIB));
    cr_assert_eq(at.type, cudaMemoryTypeDevice);
    cr_assert_eq(cuMemUnmap(va, 48 * MIB), CUDA_SUCCESS);
    cr_assert_eq(cuMemRelease(h), CUDA_SUCCESS);
    cr_assert_eq(create(&h2, 32 * MIB, &prop, 0), CUDA_SUCCESS);
    cr_assert_eq(cuMemAddressFree(va, 1024 * MIB), CUDA_SUCCESS);
}

/* Functions the virtual device has no behaviour for exist and say so. */
CUresult cuGraphCreate(CUgraph *g, unsigned int flags);

Test(vdevice, stubs_answer_not_supported)
{
    settings("H100", "64MiB", "0", "immediate");
    cudaGraph_t g;
    cudaStream_t s = 0;
    cr_assert_eq(cudaGraphCreate(&g, 0), cudaErrorNotSupported);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorNotSupported);
    CUgraph cg;
    cr_assert_eq(cuGraphCreate(&cg, 0), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert_eq(cuInit(0), CUDA_ERROR_NO_DEVICE);
    cr_assert_str_eq(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
}
