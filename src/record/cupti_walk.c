/* cupti_walk.c - CUPTI activity records -> mh__events (see cupti_walk.h).
 *
 * A pure function of its input: cupti.c hands it the buffers CUPTI fills,
 * tests hand it buffers built by hand, and the fuzzer hands it noise. Fields
 * are read with memcpy at the documented offsets, so the buffer may have any
 * alignment, and every record is checked to lie inside `valid` first. */
#include "cupti_walk.h"

#include <string.h>

#include "memhist/error.h"

#define MH__CUPTI_INVALID_ID 0xFFFFFFFFu

/* CUPTI memory operation and pool operation types. */
enum { MEM_OP_ALLOC = 1, MEM_OP_RELEASE = 2 };
enum { POOL_OP_CREATED = 1, POOL_OP_DESTROYED = 2 };

struct api_name {
    uint32_t cbid;
    const char *name;
};

/* Runtime API calls worth a track: launches, copies, sets, allocations. */
static const struct api_name runtime_names[] = {
    {20, "cudaMalloc"},           {21, "cudaMallocPitch"},       {22, "cudaFree"},
    {25, "cudaMallocHost"},       {26, "cudaFreeHost"},          {27, "cudaHostAlloc"},
    {31, "cudaMemcpy"},           {32, "cudaMemcpy2D"},          {41, "cudaMemcpyAsync"},
    {49, "cudaMemset"},           {51, "cudaMemsetAsync"},       {160, "cudaMemcpyPeer"},
    {161, "cudaMemcpyPeerAsync"}, {206, "cudaMallocManaged"},    {211, "cudaLaunchKernel"},
    {214, "cudaLaunchKernel_ptsz"}, {215, "cudaMemcpy_ptds"},    {225, "cudaMemcpyAsync_ptsz"},
    {269, "cudaLaunchCooperativeKernel"}, {311, "cudaGraphLaunch"}, {373, "cudaMallocAsync"},
    {374, "cudaMallocAsync_ptsz"}, {375, "cudaFreeAsync"},       {376, "cudaFreeAsync_ptsz"},
    {391, "cudaMallocFromPoolAsync"}, {430, "cudaLaunchKernelExC"},
    {431, "cudaLaunchKernelExC_ptsz"},
};
static const uint32_t runtime_cbids[] = {20,  21,  22,  25,  26,  27,  31,  32,  41,
                                         49,  51,  160, 161, 206, 211, 214, 215, 225,
                                         269, 311, 373, 374, 375, 376, 391, 430, 431};

/* Driver API calls (the runtime calls these too; correlation ids differ). */
static const struct api_name driver_names[] = {
    {38, "cuMemFreeHost"},       {39, "cuMemHostAlloc"},       {243, "cuMemAlloc_v2"},
    {244, "cuMemAllocPitch_v2"}, {245, "cuMemFree_v2"},        {249, "cuMemsetD8_v2"},
    {251, "cuMemsetD32_v2"},     {276, "cuMemcpyHtoD_v2"},     {277, "cuMemcpyHtoDAsync_v2"},
    {278, "cuMemcpyDtoH_v2"},    {279, "cuMemcpyDtoHAsync_v2"}, {280, "cuMemcpyDtoD_v2"},
    {294, "cuMemAllocHost_v2"},  {305, "cuMemcpy"},            {306, "cuMemcpyAsync"},
    {307, "cuLaunchKernel"},     {371, "cuMemAllocManaged"},   {547, "cuMemAddressReserve"},
    {548, "cuMemAddressFree"},   {549, "cuMemCreate"},         {550, "cuMemRelease"},
    {551, "cuMemMap"},           {552, "cuMemUnmap"},          {598, "cuMemAllocAsync"},
    {600, "cuMemFreeAsync"},     {652, "cuLaunchKernelEx"},
};
static const uint32_t driver_cbids[] = {38,  39,  243, 244, 245, 249, 251, 276, 277,
                                        278, 279, 280, 294, 305, 306, 307, 371, 547,
                                        548, 549, 550, 551, 552, 598, 600, 652};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *mh__cupti_api_name(uint32_t kind, uint32_t cbid)
{
    const struct api_name *t = kind == MH__CUPTI_KIND_RUNTIME ? runtime_names : driver_names;
    size_t n = kind == MH__CUPTI_KIND_RUNTIME ? COUNT(runtime_names) : COUNT(driver_names);
    if (kind != MH__CUPTI_KIND_RUNTIME && kind != MH__CUPTI_KIND_DRIVER)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (t[i].cbid == cbid)
            return t[i].name;
    return NULL;
}

size_t mh__cupti_api_cbids(uint32_t kind, const uint32_t **cbids)
{
    if (kind == MH__CUPTI_KIND_RUNTIME) {
        *cbids = runtime_cbids;
        return COUNT(runtime_cbids);
    }
    *cbids = driver_cbids;
    return kind == MH__CUPTI_KIND_DRIVER ? COUNT(driver_cbids) : 0;
}

size_t mh__cupti_record_size(uint32_t kind)
{
    switch (kind) {
    case MH__CUPTI_KIND_MEMCPY: return MH__CUPTI_SIZE_MEMCPY6;
    case MH__CUPTI_KIND_MEMSET: return MH__CUPTI_SIZE_MEMSET4;
    case MH__CUPTI_KIND_DRIVER:
    case MH__CUPTI_KIND_RUNTIME:
    case MH__CUPTI_KIND_INTERNAL_LAUNCH_API: return MH__CUPTI_SIZE_API;
    case MH__CUPTI_KIND_CONCURRENT_KERNEL: return MH__CUPTI_SIZE_KERNEL10;
    case MH__CUPTI_KIND_EXTERNAL_CORRELATION: return MH__CUPTI_SIZE_EXTCORR;
    case MH__CUPTI_KIND_MEMORY2: return MH__CUPTI_SIZE_MEMORY4;
    case MH__CUPTI_KIND_MEMORY_POOL: return MH__CUPTI_SIZE_MEMORYPOOL3;
    default: return 0;
    }
}

static uint32_t rd32(const uint8_t *r, size_t off)
{
    uint32_t v;
    memcpy(&v, r + off, sizeof v);
    return v;
}

static uint64_t rd64(const uint8_t *r, size_t off)
{
    uint64_t v;
    memcpy(&v, r + off, sizeof v);
    return v;
}

static const char *rdptr(const uint8_t *r, size_t off)
{
    const char *p;
    memcpy(&p, r + off, sizeof p);
    return p;
}

static uint64_t stream_of(uint32_t id)
{
    return id == MH__CUPTI_INVALID_ID ? 0 : id;
}

/* Host memory kinds belong to no device. */
static int16_t memory_device(uint32_t memkind, uint32_t device)
{
    if (memkind == MH_MEM_PAGEABLE || memkind == MH_MEM_PINNED || device == MH__CUPTI_INVALID_ID)
        return -1;
    return (int16_t)device;
}

static int parse_memory(const uint8_t *r, struct mh__cupti_item *it)
{
    uint32_t op = rd32(r, MH__CUPTI_MEM_OP);
    if (op != MEM_OP_ALLOC && op != MEM_OP_RELEASE)
        return 0;
    uint32_t memkind = rd32(r, MH__CUPTI_MEM_KIND);
    it->ev.kind = op == MEM_OP_ALLOC ? MH_EV_DRIVER_ALLOC : MH_EV_DRIVER_FREE;
    it->ev.aux = memkind;
    it->ev.correlation = rd32(r, MH__CUPTI_MEM_CORR);
    it->ev.addr = rd64(r, MH__CUPTI_MEM_ADDR);
    it->ev.size = rd64(r, MH__CUPTI_MEM_BYTES);
    it->ev.time_ns = rd64(r, MH__CUPTI_MEM_TS);
    it->ev.device = memory_device(memkind, rd32(r, MH__CUPTI_MEM_DEVICE));
    it->ev.stream = stream_of(rd32(r, MH__CUPTI_MEM_STREAM));
    if (memkind == MH_MEM_DEVICE_STATIC || memkind == MH_MEM_MANAGED_STATIC)
        it->name = rdptr(r, MH__CUPTI_MEM_NAME);
    return 1;
}

/* Pool creation and destruction become driver events of the pool's size;
 * trims carry no address range and are ignored. */
static int parse_pool(const uint8_t *r, struct mh__cupti_item *it)
{
    uint32_t op = rd32(r, MH__CUPTI_POOL_OP);
    if (op != POOL_OP_CREATED && op != POOL_OP_DESTROYED)
        return 0;
    it->ev.kind = op == POOL_OP_CREATED ? MH_EV_DRIVER_ALLOC : MH_EV_DRIVER_FREE;
    it->ev.aux = r[MH__CUPTI_POOL_MANAGED] ? MH_MEM_MANAGED : MH_MEM_DEVICE;
    it->ev.correlation = rd32(r, MH__CUPTI_POOL_CORR);
    it->ev.addr = rd64(r, MH__CUPTI_POOL_ADDR);
    it->ev.size = rd64(r, MH__CUPTI_POOL_SIZE);
    it->ev.time_ns = rd64(r, MH__CUPTI_POOL_TS);
    it->ev.device = memory_device(MH_MEM_DEVICE, rd32(r, MH__CUPTI_POOL_DEVICE));
    return 1;
}

/* Start/end of a device record: 0 when timing was lost. */
static int timed(struct mh__cupti_item *it, uint64_t start, uint64_t end,
                 struct mh__cupti_walk_stats *st)
{
    if (start == 0 && end == 0) {
        st->no_timestamp++;
        return 0;
    }
    it->ev.time_ns = start;
    it->ev.dur_ns = end > start ? end - start : 0;
    return 1;
}

static int parse_kernel(const uint8_t *r, struct mh__cupti_item *it, struct mh__cupti_walk_stats *st)
{
    if (!timed(it, rd64(r, MH__CUPTI_K_START), rd64(r, MH__CUPTI_K_END), st))
        return 0;
    it->ev.kind = MH_EV_KERNEL;
    it->ev.device = (int16_t)rd32(r, MH__CUPTI_K_DEVICE);
    it->ev.stream = stream_of(rd32(r, MH__CUPTI_K_STREAM));
    it->ev.correlation = rd32(r, MH__CUPTI_K_CORR);
    it->name = rdptr(r, MH__CUPTI_K_NAME);
    return 1;
}

static int parse_memcpy(const uint8_t *r, struct mh__cupti_item *it, struct mh__cupti_walk_stats *st)
{
    if (!timed(it, rd64(r, MH__CUPTI_CPY_START), rd64(r, MH__CUPTI_CPY_END), st))
        return 0;
    it->ev.kind = MH_EV_MEMCPY;
    it->ev.aux = r[MH__CUPTI_CPY_KIND];
    it->ev.size = rd64(r, MH__CUPTI_CPY_BYTES);
    it->ev.device = (int16_t)rd32(r, MH__CUPTI_CPY_DEVICE);
    it->ev.stream = stream_of(rd32(r, MH__CUPTI_CPY_STREAM));
    /* the runtime record's id when the copy came through the runtime */
    uint32_t rt = rd32(r, MH__CUPTI_CPY_RTCORR);
    it->ev.correlation = rt ? rt : rd32(r, MH__CUPTI_CPY_CORR);
    return 1;
}

static int parse_memset(const uint8_t *r, struct mh__cupti_item *it, struct mh__cupti_walk_stats *st)
{
    if (!timed(it, rd64(r, MH__CUPTI_SET_START), rd64(r, MH__CUPTI_SET_END), st))
        return 0;
    uint16_t memkind;
    memcpy(&memkind, r + MH__CUPTI_SET_MEMKIND, sizeof memkind);
    it->ev.kind = MH_EV_MEMSET;
    it->ev.aux = memkind;
    it->ev.size = rd64(r, MH__CUPTI_SET_BYTES);
    it->ev.device = (int16_t)rd32(r, MH__CUPTI_SET_DEVICE);
    it->ev.stream = stream_of(rd32(r, MH__CUPTI_SET_STREAM));
    it->ev.correlation = rd32(r, MH__CUPTI_SET_CORR);
    return 1;
}

static int parse_api(uint32_t kind, const uint8_t *r, struct mh__cupti_item *it)
{
    uint32_t cbid = rd32(r, MH__CUPTI_API_CBID);
    const char *name = mh__cupti_api_name(kind, cbid);
    if (!name)
        return 0;
    uint64_t start = rd64(r, MH__CUPTI_API_START), end = rd64(r, MH__CUPTI_API_END);
    it->ev.kind = MH_EV_API_CALL;
    it->ev.time_ns = start;
    it->ev.dur_ns = end > start ? end - start : 0;
    it->ev.thread = rd32(r, MH__CUPTI_API_THREAD);
    it->ev.correlation = rd32(r, MH__CUPTI_API_CORR);
    it->ev.aux = cbid;
    it->ev.device = -1;
    it->name = name;
    it->name_static = 1;
    return 1;
}

/* Fills `it` from one complete record; 1 if it yields an event. */
static int parse_record(uint32_t kind, const uint8_t *r, struct mh__cupti_item *it,
                        struct mh__cupti_walk_stats *st)
{
    memset(it, 0, sizeof *it);
    switch (kind) {
    case MH__CUPTI_KIND_MEMORY2: return parse_memory(r, it);
    case MH__CUPTI_KIND_MEMORY_POOL: return parse_pool(r, it);
    case MH__CUPTI_KIND_CONCURRENT_KERNEL: return parse_kernel(r, it, st);
    case MH__CUPTI_KIND_MEMCPY: return parse_memcpy(r, it, st);
    case MH__CUPTI_KIND_MEMSET: return parse_memset(r, it, st);
    case MH__CUPTI_KIND_RUNTIME:
    case MH__CUPTI_KIND_DRIVER: return parse_api(kind, r, it);
    default: return 0; /* external correlation, internal launch API */
    }
}

int mh__cupti_walk(const uint8_t *buf, size_t valid, mh__cupti_item_fn fn, void *user,
                   struct mh__cupti_walk_stats *st)
{
    struct mh__cupti_walk_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    if (!buf)
        return valid ? MH_EINVAL : 0;
    size_t off = 0;
    while (off < valid) {
        if (valid - off < 8) /* not even a CUpti_Activity header */
            return MH_ETRUNCATED;
        uint32_t kind = rd32(buf, off);
        size_t size = mh__cupti_record_size(kind);
        if (size == 0)
            return MH_EFORMAT;
        if (valid - off < size)
            return MH_ETRUNCATED;
        struct mh__cupti_item it;
        st->records++;
        if (parse_record(kind, buf + off, &it, st)) {
            st->events++;
            int rc = fn(user, &it);
            if (rc != 0) {
                st->consumed = off + size;
                return rc;
            }
        } else {
            st->ignored++;
        }
        off += size;
        st->consumed = off;
    }
    return 0;
}
