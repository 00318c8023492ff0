/* cupti_walk.h - the CUPTI activity-buffer walker (internal to libmemhist).
 *
 * Turns a buffer of CUPTI activity records (CUDA 13.0 layouts: Memory4,
 * MemoryPool3, Kernel10, Memcpy6, Memset4, API, ExternalCorrelation) into
 * mh__events without calling CUPTI, so it runs on machines without a GPU and
 * under a fuzzer. Records sit back to back at their struct size; the walk
 * stops at the first unknown kind or short record and never reads past
 * `valid` bytes. Field offsets are declared here, not taken from CUPTI headers,
 * so libmemhist builds without the CUDA toolkit (sizes and offsets: x86-64
 * Linux, CUPTI_API_VERSION 130001; see reference/cupti.md). */
#ifndef MH_RECORD_CUPTI_WALK_H
#define MH_RECORD_CUPTI_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/event.h"

/* Activity kinds (CUpti_ActivityKind values). */
enum {
    MH__CUPTI_KIND_MEMCPY = 1,
    MH__CUPTI_KIND_MEMSET = 2,
    MH__CUPTI_KIND_DRIVER = 4,
    MH__CUPTI_KIND_RUNTIME = 5,
    MH__CUPTI_KIND_CONCURRENT_KERNEL = 10,
    MH__CUPTI_KIND_EXTERNAL_CORRELATION = 39,
    MH__CUPTI_KIND_INTERNAL_LAUNCH_API = 48,
    MH__CUPTI_KIND_MEMORY2 = 49,
    MH__CUPTI_KIND_MEMORY_POOL = 50
};

/* Record sizes (sizeof of the struct CUPTI 13.0 uses for each kind). */
enum {
    MH__CUPTI_SIZE_MEMCPY6 = 96,
    MH__CUPTI_SIZE_MEMSET4 = 88,
    MH__CUPTI_SIZE_API = 40,
    MH__CUPTI_SIZE_KERNEL10 = 216,
    MH__CUPTI_SIZE_EXTCORR = 24,
    MH__CUPTI_SIZE_MEMORY4 = 128,
    MH__CUPTI_SIZE_MEMORYPOOL3 = 80
};

/* Field offsets used by the walker (and by tests that build buffers). */
enum {
    /* CUpti_ActivityMemory4 */
    MH__CUPTI_MEM_OP = 4, MH__CUPTI_MEM_KIND = 8, MH__CUPTI_MEM_CORR = 12, MH__CUPTI_MEM_ADDR = 16,
    MH__CUPTI_MEM_BYTES = 24, MH__CUPTI_MEM_TS = 32, MH__CUPTI_MEM_DEVICE = 52,
    MH__CUPTI_MEM_STREAM = 60, MH__CUPTI_MEM_NAME = 64, MH__CUPTI_MEM_ASYNC = 72,
    MH__CUPTI_MEM_POOL_ADDR = 88,
    /* CUpti_ActivityMemoryPool3 */
    MH__CUPTI_POOL_OP = 4, MH__CUPTI_POOL_CORR = 12, MH__CUPTI_POOL_DEVICE = 20,
    MH__CUPTI_POOL_ADDR = 32, MH__CUPTI_POOL_SIZE = 40, MH__CUPTI_POOL_TS = 56,
    MH__CUPTI_POOL_MANAGED = 72,
    /* CUpti_ActivityKernel10 */
    MH__CUPTI_K_START = 16, MH__CUPTI_K_END = 24, MH__CUPTI_K_DEVICE = 40, MH__CUPTI_K_STREAM = 48,
    MH__CUPTI_K_CORR = 92, MH__CUPTI_K_NAME = 104,
    /* CUpti_ActivityMemcpy6 */
    MH__CUPTI_CPY_KIND = 4, MH__CUPTI_CPY_BYTES = 8, MH__CUPTI_CPY_START = 16, MH__CUPTI_CPY_END = 24,
    MH__CUPTI_CPY_DEVICE = 32, MH__CUPTI_CPY_STREAM = 40, MH__CUPTI_CPY_CORR = 44,
    MH__CUPTI_CPY_RTCORR = 48,
    /* CUpti_ActivityMemset4 */
    MH__CUPTI_SET_BYTES = 8, MH__CUPTI_SET_START = 16, MH__CUPTI_SET_END = 24,
    MH__CUPTI_SET_DEVICE = 32, MH__CUPTI_SET_STREAM = 40, MH__CUPTI_SET_CORR = 44,
    MH__CUPTI_SET_MEMKIND = 50,
    /* CUpti_ActivityAPI */
    MH__CUPTI_API_CBID = 4, MH__CUPTI_API_START = 8, MH__CUPTI_API_END = 16,
    MH__CUPTI_API_THREAD = 28, MH__CUPTI_API_CORR = 32
};

/* One walked record. `ev` has every field but the interned strings set;
 * `name` is the record's name to intern into ev.str (NULL if none). For kernel
 * and static-variable names it is the raw pointer stored in the record, never
 * dereferenced by the walker: only the caller knows whether it may follow it
 * (CUPTI's buffers: yes, until the buffer is released; fuzz input: no). API
 * names point to static strings (`name_static` set). */
struct mh__cupti_item {
    struct mh_event ev;
    const char *name;
    int name_static;
};

/* Called per event; a non-zero return stops the walk and is returned. */
typedef int (*mh__cupti_item_fn)(void *user, const struct mh__cupti_item *item);

struct mh__cupti_walk_stats {
    uint64_t records;     /* complete records seen */
    uint64_t events;      /* items delivered */
    uint64_t ignored;     /* records that yield no event (filtered cbids, trims, ...) */
    uint64_t no_timestamp;/* device records with start == end == 0 (lost timing) */
    size_t consumed;      /* bytes walked */
};

/* Walks `valid` bytes of `buf` (any alignment). Returns 0 at the clean end,
 * MH_EFORMAT at an unknown kind, MH_ETRUNCATED at a short record (items
 * before it were delivered), or the callback's non-zero value. `st` may be
 * NULL; it is zeroed first. */
int mh__cupti_walk(const uint8_t *buf, size_t valid, mh__cupti_item_fn fn, void *user,
                   struct mh__cupti_walk_stats *st);

/* Record size for an activity kind, 0 for kinds the walker does not know. */
size_t mh__cupti_record_size(uint32_t kind);

/* Name of a runtime (domain kind MH__CUPTI_KIND_RUNTIME) or driver API cbid
 * that memhist records as an MH_EV_API_CALL (launches, copies, memsets,
 * allocations, frees); NULL for every other cbid. */
const char *mh__cupti_api_name(uint32_t kind, uint32_t cbid);
/* The cbids with a name, for enabling them one by one; returns the count and
 * sets *cbids to a static array. */
size_t mh__cupti_api_cbids(uint32_t kind, const uint32_t **cbids);

#endif
