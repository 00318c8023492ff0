/* test_record_cupti_walk.c - the CUPTI activity-buffer walker on hand-built
 * buffers: records written at the documented CUPTI 13.0 offsets (memory,
 * memory pool, kernel, memcpy, memset, runtime/driver API), launch -> kernel
 * correlation, and the bounds checks that stop a malformed buffer. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "cupti_walk.h"

#define MAX_ITEMS 64

struct collected {
    struct mh__cupti_item items[MAX_ITEMS];
    size_t n;
};

static int collect(void *user, const struct mh__cupti_item *it)
{
    struct collected *c = user;
    if (c->n < MAX_ITEMS)
        c->items[c->n++] = *it;
    return 0;
}

struct buf {
    uint8_t data[8192];
    size_t len;
};

static uint8_t *add_record(struct buf *b, uint32_t kind, size_t size)
{
    uint8_t *r = b->data + b->len;
    memset(r, 0, size);
    memcpy(r, &kind, 4);
    b->len += size;
    return r;
}

static void put32(uint8_t *r, size_t off, uint32_t v) { memcpy(r + off, &v, 4); }
static void put64(uint8_t *r, size_t off, uint64_t v) { memcpy(r + off, &v, 8); }
static void putptr(uint8_t *r, size_t off, const char *p) { memcpy(r + off, &p, sizeof p); }

static void add_memory(struct buf *b, uint32_t op, uint32_t memkind, uint64_t addr,
                       uint64_t bytes, uint64_t ts, uint32_t dev, uint32_t corr)
{
    uint8_t *r = add_record(b, MH__CUPTI_KIND_MEMORY2, MH__CUPTI_SIZE_MEMORY4);
    put32(r, MH__CUPTI_MEM_OP, op);
    put32(r, MH__CUPTI_MEM_KIND, memkind);
    put32(r, MH__CUPTI_MEM_CORR, corr);
    put64(r, MH__CUPTI_MEM_ADDR, addr);
    put64(r, MH__CUPTI_MEM_BYTES, bytes);
    put64(r, MH__CUPTI_MEM_TS, ts);
    put32(r, MH__CUPTI_MEM_DEVICE, dev);
    put32(r, MH__CUPTI_MEM_STREAM, 0xFFFFFFFFu);
}

static void add_kernel(struct buf *b, const char *name, uint64_t start, uint64_t end,
                       uint32_t dev, uint32_t stream, uint32_t corr)
{
    uint8_t *r = add_record(b, MH__CUPTI_KIND_CONCURRENT_KERNEL, MH__CUPTI_SIZE_KERNEL10);
    put64(r, MH__CUPTI_K_START, start);
    put64(r, MH__CUPTI_K_END, end);
    put32(r, MH__CUPTI_K_DEVICE, dev);
    put32(r, MH__CUPTI_K_STREAM, stream);
    put32(r, MH__CUPTI_K_CORR, corr);
    putptr(r, MH__CUPTI_K_NAME, name);
}

static void add_api(struct buf *b, uint32_t kind, uint32_t cbid, uint64_t start, uint64_t end,
                    uint32_t thread, uint32_t corr)
{
    uint8_t *r = add_record(b, kind, MH__CUPTI_SIZE_API);
    put32(r, MH__CUPTI_API_CBID, cbid);
    put64(r, MH__CUPTI_API_START, start);
    put64(r, MH__CUPTI_API_END, end);
    put32(r, MH__CUPTI_API_THREAD, thread);
    put32(r, MH__CUPTI_API_CORR, corr);
}

Test(cupti_walk, memory_alloc_and_free)
{
    struct buf b = {.len = 0};
    add_memory(&b, 1, 3, 0x7f0000000000ull, 1 << 20, 1000, 1, 55);
    add_memory(&b, 2, 3, 0x7f0000000000ull, 1 << 20, 2000, 1, 56);
    add_memory(&b, 1, 2, 0x1000, 4096, 3000, 0, 57); /* pinned host memory */
    struct collected c = {.n = 0};
    struct mh__cupti_walk_stats st;
    cr_assert_eq(mh__cupti_walk(b.data, b.len, collect, &c, &st), 0);
    cr_assert_eq(c.n, 3);
    cr_assert_eq(st.records, 3);
    cr_assert_eq(st.consumed, b.len);
    const struct mh_event *a = &c.items[0].ev, *f = &c.items[1].ev, *p = &c.items[2].ev;
    cr_assert_eq(a->kind, MH_EV_DRIVER_ALLOC);
    cr_assert_eq(a->aux, MH_MEM_DEVICE);
    cr_assert_eq(a->addr, 0x7f0000000000ull);
    cr_assert_eq(a->size, 1 << 20);
    cr_assert_eq(a->time_ns, 1000);
    cr_assert_eq(a->device, 1);
    cr_assert_eq(a->stream, 0, "invalid stream id maps to 0");
    cr_assert_eq(a->correlation, 55);
    cr_assert_eq(f->kind, MH_EV_DRIVER_FREE);
    cr_assert_eq(f->time_ns, 2000);
    cr_assert_eq(p->aux, MH_MEM_PINNED);
    cr_assert_eq(p->device, -1, "pinned memory belongs to the host");
}

Test(cupti_walk, memory_pool_created_and_destroyed)
{
    struct buf b = {.len = 0};
    for (uint32_t op = 1; op <= 3; op++) {
        uint8_t *r = add_record(&b, MH__CUPTI_KIND_MEMORY_POOL, MH__CUPTI_SIZE_MEMORYPOOL3);
        put32(r, MH__CUPTI_POOL_OP, op);
        put32(r, MH__CUPTI_POOL_DEVICE, 2);
        put64(r, MH__CUPTI_POOL_ADDR, 0xA000);
        put64(r, MH__CUPTI_POOL_SIZE, 64 << 20);
        put64(r, MH__CUPTI_POOL_TS, 10 * op);
    }
    struct collected c = {.n = 0};
    struct mh__cupti_walk_stats st;
    cr_assert_eq(mh__cupti_walk(b.data, b.len, collect, &c, &st), 0);
    cr_assert_eq(c.n, 2, "trims yield no event");
    cr_assert_eq(st.ignored, 1);
    cr_assert_eq(c.items[0].ev.kind, MH_EV_DRIVER_ALLOC);
    cr_assert_eq(c.items[0].ev.size, 64 << 20);
    cr_assert_eq(c.items[0].ev.device, 2);
    cr_assert_eq(c.items[1].ev.kind, MH_EV_DRIVER_FREE);
    cr_assert_eq(c.items[1].ev.time_ns, 20);
}

Test(cupti_walk, kernel_copy_set)
{
    static const char kname[] = "_Z10add_kernelPfS_";
    struct buf b = {.len = 0};
    add_kernel(&b, kname, 5000, 7500, 0, 7, 902);
    uint8_t *r = add_record(&b, MH__CUPTI_KIND_MEMCPY, MH__CUPTI_SIZE_MEMCPY6);
    r[MH__CUPTI_CPY_KIND] = 1; /* HtoD */
    put64(r, MH__CUPTI_CPY_BYTES, 4096);
    put64(r, MH__CUPTI_CPY_START, 100);
    put64(r, MH__CUPTI_CPY_END, 400);
    put32(r, MH__CUPTI_CPY_DEVICE, 0);
    put32(r, MH__CUPTI_CPY_STREAM, 3);
    put32(r, MH__CUPTI_CPY_CORR, 11);
    put32(r, MH__CUPTI_CPY_RTCORR, 10);
    r = add_record(&b, MH__CUPTI_KIND_MEMSET, MH__CUPTI_SIZE_MEMSET4);
    put64(r, MH__CUPTI_SET_BYTES, 512);
    put64(r, MH__CUPTI_SET_START, 800);
    put64(r, MH__CUPTI_SET_END, 900);
    put32(r, MH__CUPTI_SET_DEVICE, 1);
    put32(r, MH__CUPTI_SET_STREAM, 4);
    put32(r, MH__CUPTI_SET_CORR, 12);
    struct collected c = {.n = 0};
    cr_assert_eq(mh__cupti_walk(b.data, b.len, collect, &c, NULL), 0);
    cr_assert_eq(c.n, 3);
    const struct mh__cupti_item *k = &c.items[0];
    cr_assert_eq(k->ev.kind, MH_EV_KERNEL);
    cr_assert_eq(k->ev.time_ns, 5000);
    cr_assert_eq(k->ev.dur_ns, 2500);
    cr_assert_eq(k->ev.stream, 7);
    cr_assert_eq(k->ev.correlation, 902);
    cr_assert_eq(k->name, kname, "the raw name pointer is passed through");
    cr_assert_eq(k->name_static, 0);
    cr_assert_eq(c.items[1].ev.kind, MH_EV_MEMCPY);
    cr_assert_eq(c.items[1].ev.aux, 1);
    cr_assert_eq(c.items[1].ev.size, 4096);
    cr_assert_eq(c.items[1].ev.dur_ns, 300);
    cr_assert_eq(c.items[1].ev.correlation, 10, "runtime correlation preferred");
    cr_assert_eq(c.items[2].ev.kind, MH_EV_MEMSET);
    cr_assert_eq(c.items[2].ev.size, 512);
    cr_assert_eq(c.items[2].ev.device, 1);
}

Test(cupti_walk, kernel_without_timestamps_is_skipped)
{
    struct buf b = {.len = 0};
    add_kernel(&b, "k", 0, 0, 0, 7, 1);
    add_kernel(&b, "k", 10, 20, 0, 7, 2);
    struct collected c = {.n = 0};
    struct mh__cupti_walk_stats st;
    cr_assert_eq(mh__cupti_walk(b.data, b.len, collect, &c, &st), 0);
    cr_assert_eq(c.n, 1);
    cr_assert_eq(st.no_timestamp, 1);
    cr_assert_eq(c.items[0].ev.correlation, 2);
}

Test(cupti_walk, api_records_filtered_and_named)
{
    struct buf b = {.len = 0};
    add_api(&b, MH__CUPTI_KIND_RUNTIME, 211, 100, 150, 4242, 902); /* cudaLaunchKernel */
    add_api(&b, MH__CUPTI_KIND_RUNTIME, 3, 160, 170, 4242, 903);   /* not recorded */
    add_api(&b, MH__CUPTI_KIND_DRIVER, 243, 200, 260, 4243, 904);  /* cuMemAlloc_v2 */
    add_api(&b, MH__CUPTI_KIND_RUNTIME, 20, 300, 320, 4242, 905);  /* cudaMalloc */
    struct collected c = {.n = 0};
    struct mh__cupti_walk_stats st;
    cr_assert_eq(mh__cupti_walk(b.data, b.len, collect, &c, &st), 0);
    cr_assert_eq(c.n, 3);
    cr_assert_eq(st.ignored, 1);
    cr_assert_eq(c.items[0].ev.kind, MH_EV_API_CALL);
    cr_assert_str_eq(c.items[0].name, "cudaLaunchKernel");
    cr_assert_eq(c.items[0].name_static, 1);
    cr_assert_eq(c.items[0].ev.thread, 4242);
    cr_assert_eq(c.items[0].ev.dur_ns, 50);
    cr_assert_eq(c.items[0].ev.aux, 211);
    cr_assert_str_eq(c.items[1].name, "cuMemAlloc_v2");
    cr_assert_eq(c.items[1].ev.thread, 4243);
    cr_assert_str_eq(c.items[2].name, "cudaMalloc");
}

/* Launches and kernels arrive in separate records; the correlation id joins them. */
Test(cupti_walk, kernels_correlate_to_launches)
{
    struct buf b = {.len = 0};
    for (uint32_t i = 0; i < 4; i++)
        add_api(&b, MH__CUPTI_KIND_RUNTIME, 211, 100 * i, 100 * i + 10, 7, 500 + i);
    for (uint32_t i = 0; i < 4; i++)
        add_kernel(&b, "k", 1000 + 100 * (3 - i), 1050 + 100 * (3 - i), 0, 1, 503 - i);
    struct collected c = {.n = 0};
    cr_assert_eq(mh__cupti_walk(b.data, b.len, collect, &c, NULL), 0);
    cr_assert_eq(c.n, 8);
    for (size_t k = 4; k < 8; k++) {
        const struct mh_event *kern = &c.items[k].ev;
        const struct mh_event *launch = NULL;
        for (size_t a = 0; a < 4; a++)
            if (c.items[a].ev.correlation == kern->correlation)
                launch = &c.items[a].ev;
        cr_assert_not_null(launch, "kernel %u has a launch", kern->correlation);
        cr_assert_leq(launch->time_ns, kern->time_ns, "a kernel starts after its launch");
    }
}

Test(cupti_walk, unknown_kind_stops)
{
    struct buf b = {.len = 0};
    add_memory(&b, 1, 3, 0x1000, 64, 1, 0, 1);
    add_record(&b, 77, 64);
    add_memory(&b, 1, 3, 0x2000, 64, 2, 0, 2);
    struct collected c = {.n = 0};
    struct mh__cupti_walk_stats st;
    cr_assert_eq(mh__cupti_walk(b.data, b.len, collect, &c, &st), MH_EFORMAT);
    cr_assert_eq(c.n, 1, "records before the unknown kind are kept");
    cr_assert_eq(st.consumed, MH__CUPTI_SIZE_MEMORY4);
}

Test(cupti_walk, short_record_stops)
{
    struct buf b = {.len = 0};
    add_memory(&b, 1, 3, 0x1000, 64, 1, 0, 1);
    add_kernel(&b, "k", 1, 2, 0, 0, 1);
    struct collected c = {.n = 0};
    for (size_t cut = 1; cut < MH__CUPTI_SIZE_KERNEL10; cut += 7) {
        c.n = 0;
        int rc = mh__cupti_walk(b.data, b.len - cut, collect, &c, NULL);
        cr_assert_eq(rc, MH_ETRUNCATED, "cut %zu", cut);
        cr_assert_eq(c.n, 1);
    }
    cr_assert_eq(mh__cupti_walk(b.data, 3, collect, &c, NULL), MH_ETRUNCATED);
    cr_assert_eq(mh__cupti_walk(b.data, 0, collect, &c, NULL), 0);
    cr_assert_eq(mh__cupti_walk(NULL, 0, collect, &c, NULL), 0);
}

Test(cupti_walk, unaligned_buffer)
{
    struct buf b = {.len = 0};
    add_memory(&b, 1, 3, 0xABC000, 4096, 9, 0, 3);
    uint8_t *odd = malloc(b.len + 1);
    memcpy(odd + 1, b.data, b.len);
    struct collected c = {.n = 0};
    cr_assert_eq(mh__cupti_walk(odd + 1, b.len, collect, &c, NULL), 0);
    cr_assert_eq(c.n, 1);
    cr_assert_eq(c.items[0].ev.addr, 0xABC000);
    free(odd);
}

static int stop_after_one(void *user, const struct mh__cupti_item *it)
{
    (*(int *)user)++;
    return 42;
}

Test(cupti_walk, callback_stops_walk)
{
    struct buf b = {.len = 0};
    add_memory(&b, 1, 3, 0x1000, 64, 1, 0, 1);
    add_memory(&b, 1, 3, 0x2000, 64, 2, 0, 2);
    int calls = 0;
    cr_assert_eq(mh__cupti_walk(b.data, b.len, stop_after_one, &calls, NULL), 42);
    cr_assert_eq(calls, 1);
}

Test(cupti_walk, record_sizes_and_cbid_tables)
{
    cr_assert_eq(mh__cupti_record_size(MH__CUPTI_KIND_MEMORY2), 128);
    cr_assert_eq(mh__cupti_record_size(MH__CUPTI_KIND_CONCURRENT_KERNEL), 216);
    cr_assert_eq(mh__cupti_record_size(MH__CUPTI_KIND_MEMCPY), 96);
    cr_assert_eq(mh__cupti_record_size(MH__CUPTI_KIND_MEMSET), 88);
    cr_assert_eq(mh__cupti_record_size(MH__CUPTI_KIND_RUNTIME), 40);
    cr_assert_eq(mh__cupti_record_size(MH__CUPTI_KIND_MEMORY_POOL), 80);
    cr_assert_eq(mh__cupti_record_size(MH__CUPTI_KIND_EXTERNAL_CORRELATION), 24);
    cr_assert_eq(mh__cupti_record_size(3), 0, "KIND_KERNEL is never used");
    const uint32_t *cbids;
    size_t n = mh__cupti_api_cbids(MH__CUPTI_KIND_RUNTIME, &cbids);
    cr_assert_gt(n, 10);
    for (size_t i = 0; i < n; i++)
        cr_assert_not_null(mh__cupti_api_name(MH__CUPTI_KIND_RUNTIME, cbids[i]));
    n = mh__cupti_api_cbids(MH__CUPTI_KIND_DRIVER, &cbids);
    for (size_t i = 0; i < n; i++)
        cr_assert_not_null(mh__cupti_api_name(MH__CUPTI_KIND_DRIVER, cbids[i]));
    cr_assert_null(mh__cupti_api_name(MH__CUPTI_KIND_MEMCPY, 211));
}
