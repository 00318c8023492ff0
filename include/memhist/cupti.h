/* memhist/cupti.h - driver-level memory, kernels and copies through CUPTI.
 *
 * A CUPTI source feeding a recorder: allocations and frees seen by the CUDA
 * driver (cudaMalloc, cudaMallocAsync, pinned and managed memory, and the
 * virtual-memory calls cuMemMap/cuMemUnmap behind PyTorch's expandable
 * segments), kernels, memcpy/memset and the launching API calls with their
 * correlation ids. libcupti is loaded at run time with dlopen, never linked,
 * so libmemhist loads on machines without a GPU. CUPTI is process-wide, so
 * there is one source per process. When CUPTI cannot be used (no library, no
 * driver, another CUPTI client such as torch.profiler or Nsight), start fails
 * cleanly, says why, and records the reason in the file's "cupti" meta; the
 * rest of the recording is unaffected. */
#ifndef MEMHIST_CUPTI_H
#define MEMHIST_CUPTI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mh_recorder;

/* Options; all-zero means defaults. */
struct mh_cupti_opts {
    size_t buffer_bytes;        /* per activity buffer, 0 = 8 MiB (1 MiB..64 MiB) */
    size_t max_buffer_bytes;    /* cap on buffers held at once, 0 = 256 MiB */
    uint32_t flush_interval_ms; /* periodic cuptiActivityFlushAll(0), 0 = 500 */
    int memory_only;            /* 1: no kernels, copies or API calls */
    int no_vmm;                 /* 1: no callback subscriber for cuMemMap & co. */
    const char *library;        /* libcupti to load; NULL = env MEMHIST_CUPTI_LIB,
                                   then libcupti.so.13, libcupti.so */
};

/* Starts recording into `rec` (borrowed; it must stay open until
 * mh_cupti_stop). Returns 0, MH_ESTATE if already started, or
 * MH_EUNAVAILABLE with the reason in `why` (may be NULL) and in the
 * recorder's meta "cupti" ("unavailable: <reason>"). On success the meta
 * reads "enabled (CUPTI API <version>)". */
int mh_cupti_start(struct mh_recorder *rec, const struct mh_cupti_opts *opts, char *why,
                   size_t whylen);
/* Delivers every buffered record to the recorder (forced CUPTI flush, then
 * parsing on the caller's thread). Safe from any thread; call it before
 * _exit or on signals. Returns 0 or MH_ESTATE when not started. */
int mh_cupti_flush(void);
/* Disables collection, flushes and stops the background thread. The
 * recorder is not closed. Returns 0 (also when not started). */
int mh_cupti_stop(void);
/* 1 while started. */
int mh_cupti_active(void);

struct mh_cupti_counts {
    uint64_t buffers;          /* buffers parsed */
    uint64_t records;          /* activity records walked */
    uint64_t events;           /* events handed to the recorder */
    uint64_t emit_dropped;     /* events the recorder refused (full) */
    uint64_t buffers_declined; /* buffer requests refused at the cap */
    uint64_t records_dropped;  /* records CUPTI reports dropped */
    uint64_t no_timestamp;     /* device records without timing */
    uint64_t bad_buffers;      /* buffers that ended in a malformed record */
    uint64_t vmm_calls;        /* cuMem* virtual-memory calls seen */
};
void mh_cupti_get_counts(struct mh_cupti_counts *out);

/* Zero-code injection (CUDA_INJECTION64_PATH=libmemhist.so): the driver
 * calls InitializeInjection(), which records into its own file or, when a
 * recorder is registered here (or MEMHIST_INJECT_SHARED=1 and one is
 * registered later), into that one. The torch bridge registers its recorder
 * so both sources share one file. `rec` is borrowed; register NULL before
 * closing it. */
void mh_inject_set_recorder(struct mh_recorder *rec);
/* The recorder injection writes to (NULL if none). */
struct mh_recorder *mh_inject_recorder(void);

#ifdef __cplusplus
}
#endif
#endif
