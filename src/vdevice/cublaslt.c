/* cublaslt.c - the stand-in cuBLASLt (libcublasLt.so.13): descriptors and
 * layouts are plain allocations, the heuristic offers one algorithm needing
 * no workspace, and matmuls succeed without computing. Everything else is a
 * generated stub that succeeds (vdevice.cmake). */
#include <cublasLt.h>
#include <stdlib.h>
#include <string.h>

static cublasStatus_t make(void **p, size_t size)
{
    *p = calloc(1, size);
    return *p ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
    return make((void **)h, 64);
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

size_t cublasLtGetVersion(void)
{
    return CUBLAS_VERSION;
}

size_t cublasLtGetCudartVersion(void)
{
    return 13020;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c,
                                        cudaDataType_t s)
{
    return make((void **)d, sizeof(cublasLtMatmulDescOpaque_t));
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
    free(d);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t, uint64_t rows,
                                          uint64_t cols, int64_t ld)
{
    return make((void **)l, sizeof(cublasLtMatrixLayoutOpaque_t));
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
    free(l);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    return make((void **)p, sizeof(cublasLtMatmulPreferenceOpaque_t));
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
    free(p);
    return CUBLAS_STATUS_SUCCESS;
}

static void one_algorithm(cublasLtMatmulHeuristicResult_t *r)
{
    memset(r, 0, sizeof *r);
    r->state = CUBLAS_STATUS_SUCCESS;
    r->wavesCount = 1.0f;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t op,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int *returned)
{
    if (requested < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    one_algorithm(&results[0]);
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t h, cublasLtMatmulDesc_t op,
                                       cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                       cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                       const cublasLtMatmulAlgo_t *algo,
                                       cublasLtMatmulHeuristicResult_t *result)
{
    cublasLtMatmulAlgo_t keep = *algo;
    one_algorithm(result);
    result->algo = keep;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoInit(cublasLtHandle_t h, cublasComputeType_t c, cudaDataType_t s,
                                      cudaDataType_t a, cudaDataType_t b, cudaDataType_t ct,
                                      cudaDataType_t d, int id, cublasLtMatmulAlgo_t *algo)
{
    memset(algo, 0, sizeof *algo);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t *algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr,
                                                    void *buf, size_t size, size_t *written)
{
    memset(buf, 0, size);
    if (written)
        *written = size;
    return CUBLAS_STATUS_SUCCESS;
}
