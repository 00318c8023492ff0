// alloc_kernels.cu - a CUDA program without PyTorch whose memory and kernels
// are known exactly, for checking memhist's CUPTI recording on a GPU.
//
// It allocates with cudaMalloc, cudaMallocAsync and the driver's virtual
// memory API (cuMemCreate + cuMemMap, as PyTorch's expandable segments do),
// launches a known number of kernels, frees everything, and prints one JSON
// line describing what it did. tests/gpu/check_cuda_example.py runs it with
// CUDA_INJECTION64_PATH=libmemhist.so and compares the recording with it.
//
//   alloc_kernels [KERNELS]        (default 10)
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_RT(call)                                                                     \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            std::fprintf(stderr, "alloc_kernels: %s: %s\n", #call, cudaGetErrorString(e_)); \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

#define CHECK_DRV(call)                                                                    \
    do {                                                                                   \
        CUresult e_ = (call);                                                              \
        if (e_ != CUDA_SUCCESS) {                                                          \
            const char *s_ = "?";                                                          \
            cuGetErrorString(e_, &s_);                                                     \
            std::fprintf(stderr, "alloc_kernels: %s: %s\n", #call, s_);                    \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

__global__ void fill(float *p, size_t n, float v)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v;
}

static const size_t kMalloc[] = {1u << 20, 3u << 20, 10u << 20};
static const size_t kAsync = 5u << 20;

// Maps `chunks` granularity-sized physical chunks into one reserved range.
static int vmm_roundtrip(int device, size_t chunks, size_t *chunk_bytes)
{
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    size_t gran = 0;
    CHECK_DRV(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    *chunk_bytes = gran;
    CUdeviceptr base = 0;
    CHECK_DRV(cuMemAddressReserve(&base, gran * chunks, 0, 0, 0));
    CUmemGenericAllocationHandle h[8];
    for (size_t i = 0; i < chunks; i++) {
        CHECK_DRV(cuMemCreate(&h[i], gran, &prop, 0));
        CHECK_DRV(cuMemMap(base + i * gran, gran, 0, h[i], 0));
    }
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_DRV(cuMemSetAccess(base, gran * chunks, &access, 1));
    fill<<<(unsigned)((gran * chunks / 4 + 255) / 256), 256>>>((float *)base, gran * chunks / 4,
                                                                 2.0f);
    CHECK_RT(cudaDeviceSynchronize());
    for (size_t i = 0; i < chunks; i++) {
        CHECK_DRV(cuMemUnmap(base + i * gran, gran));
        CHECK_DRV(cuMemRelease(h[i]));
    }
    CHECK_DRV(cuMemAddressFree(base, gran * chunks));
    return 0;
}

int main(int argc, char **argv)
{
    int kernels = argc > 1 ? std::atoi(argv[1]) : 10;
    if (kernels < 1 || kernels > 100000) {
        std::fprintf(stderr, "usage: alloc_kernels [KERNELS 1..100000]\n");
        return 2;
    }
    int device = 0;
    CHECK_RT(cudaSetDevice(device));
    CHECK_RT(cudaFree(0)); // creates the context (and loads the injection)
    float *bufs[3];
    for (int i = 0; i < 3; i++)
        CHECK_RT(cudaMalloc(&bufs[i], kMalloc[i]));
    cudaStream_t stream;
    CHECK_RT(cudaStreamCreate(&stream));
    float *async_buf = nullptr;
    CHECK_RT(cudaMallocAsync(&async_buf, kAsync, stream));
    size_t n = kMalloc[2] / sizeof(float);
    for (int k = 0; k < kernels - 1; k++)
        fill<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(bufs[2], n, (float)k);
    CHECK_RT(cudaFreeAsync(async_buf, stream));
    CHECK_RT(cudaStreamSynchronize(stream));
    size_t chunks = 2, chunk_bytes = 0;
    if (vmm_roundtrip(device, chunks, &chunk_bytes) != 0) // launches the last kernel
        return 1;
    for (int i = 0; i < 3; i++)
        CHECK_RT(cudaFree(bufs[i]));
    CHECK_RT(cudaStreamDestroy(stream));
    CHECK_RT(cudaDeviceSynchronize());
    std::printf("{\"device\": %d, \"cudaMalloc\": [%zu, %zu, %zu], \"cudaMallocAsync\": [%zu], "
                "\"vmm_map\": [%zu, %zu], \"kernels\": %d, \"kernel_name\": \"fill\"}\n",
                device, kMalloc[0], kMalloc[1], kMalloc[2], kAsync, chunk_bytes, chunk_bytes,
                kernels);
    return 0;
}
