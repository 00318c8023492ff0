/* vdev_memory.c - the virtual device's memory: one MAP_NORESERVE range per device
 * from which cudaMalloc/cuMemAlloc take 2 MiB-aligned extents (first fit),
 * address reservations for the virtual memory API, the registry of pinned
 * host memory (cudaHostAlloc, cudaHostRegister), and the capacity count
 * that makes allocations fail as on a full GPU. Part of the stand-in
 * libcuda.so.1. Pages are only backed by host memory once written; large
 * zero-fills give them back (madvise), so untouched or zeroed device memory
 * costs no host RAM. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "vdev.h"

struct extent {
    uintptr_t base;
    size_t size;
    int dev;
};

struct extents {
    struct extent *v;
    size_t n, cap;
};

struct device_mem {
    uintptr_t base; /* the device's allocation range; 0 until first use */
    size_t range;
    uint64_t used;         /* allocations + physical memory of the VM API */
    struct extents allocs; /* sorted by base */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct device_mem devs[MH__VDEV_MAX_DEVICES];
static struct extents reservations;
static struct extents pinned; /* page-locked host memory (dev -1) */

static size_t round_page(size_t n)
{
    return (n + MH__VDEV_PAGE - 1) / MH__VDEV_PAGE * MH__VDEV_PAGE;
}

static int insert_at(struct extents *e, size_t i, struct extent x)
{
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 64;
        struct extent *v = realloc(e->v, cap * sizeof *v);
        if (!v)
            return -1;
        e->v = v, e->cap = cap;
    }
    memmove(e->v + i + 1, e->v + i, (e->n - i) * sizeof *e->v);
    e->v[i] = x;
    e->n++;
    return 0;
}

static void remove_at(struct extents *e, size_t i)
{
    memmove(e->v + i, e->v + i + 1, (e->n - i - 1) * sizeof *e->v);
    e->n--;
}

/* Twice the capacity of address space, so fragmentation of addresses never
 * fails an allocation that capacity allows. */
static int ensure_range(int dev)
{
    struct device_mem *d = &devs[dev];
    if (d->base)
        return 0;
    size_t range = round_page(2 * mh__vdev_config()->capacity + MH__VDEV_PAGE);
    void *p = mmap(NULL, range + MH__VDEV_PAGE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    d->base = ((uintptr_t)p + MH__VDEV_PAGE - 1) / MH__VDEV_PAGE * MH__VDEV_PAGE;
    d->range = range;
    return 0;
}

/* Whether `size` more bytes fit on the device; counts the refusal, or the
 * use the caller then makes, for vdev_stats.c. */
static int fits(int dev, size_t size)
{
    const struct mh__vdev_config *c = mh__vdev_config();
    uint64_t ctx = mh__vdev_context_active(dev) ? c->context : 0;
    if (devs[dev].used + ctx + size > c->capacity) {
        mh__vdev_stats_refused(dev);
        return 0;
    }
    mh__vdev_stats_in_use(dev, devs[dev].used + ctx + size);
    return 1;
}

int mh__vdev_alloc(int dev, size_t size, void **ptr)
{
    if (dev < 0 || dev >= mh__vdev_config()->count)
        return -1;
    size = round_page(size ? size : 1);
    pthread_mutex_lock(&lock);
    struct device_mem *d = &devs[dev];
    int rc = -1;
    if (fits(dev, size) && ensure_range(dev) == 0) {
        uintptr_t at = d->base;
        size_t i = 0;
        for (; i < d->allocs.n && d->allocs.v[i].base - at < size; i++)
            at = d->allocs.v[i].base + d->allocs.v[i].size;
        if (at + size <= d->base + d->range &&
            insert_at(&d->allocs, i, (struct extent){at, size, dev}) == 0) {
            d->used += size;
            *ptr = (void *)at;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static long find(const struct extents *e, uintptr_t p, int exact)
{
    size_t lo = 0, hi = e->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (e->v[mid].base + e->v[mid].size <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < e->n && e->v[lo].base <= p && (exact ? e->v[lo].base == p : 1))
        return (long)lo;
    return -1;
}

int mh__vdev_free(void *ptr)
{
    int rc = -1;
    pthread_mutex_lock(&lock);
    for (int dev = 0; dev < MH__VDEV_MAX_DEVICES && rc < 0; dev++) {
        struct device_mem *d = &devs[dev];
        long i = d->base ? find(&d->allocs, (uintptr_t)ptr, 1) : -1;
        if (i >= 0) {
            madvise(ptr, d->allocs.v[i].size, MADV_DONTNEED);
            d->used -= d->allocs.v[i].size;
            remove_at(&d->allocs, (size_t)i);
            rc = 0;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

int mh__vdev_physical_take(int dev, size_t size)
{
    if (dev < 0 || dev >= mh__vdev_config()->count)
        return -1;
    pthread_mutex_lock(&lock);
    int ok = fits(dev, size);
    if (ok)
        devs[dev].used += size;
    pthread_mutex_unlock(&lock);
    return ok ? 0 : -1;
}

void mh__vdev_physical_give(int dev, size_t size)
{
    pthread_mutex_lock(&lock);
    if (dev >= 0 && dev < MH__VDEV_MAX_DEVICES)
        devs[dev].used -= size <= devs[dev].used ? size : devs[dev].used;
    pthread_mutex_unlock(&lock);
}

void *mh__vdev_reserve(int dev, size_t size)
{
    size_t len = round_page(size);
    void *p = mmap(NULL, len + MH__VDEV_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    uintptr_t base = ((uintptr_t)p + MH__VDEV_PAGE - 1) / MH__VDEV_PAGE * MH__VDEV_PAGE;
    pthread_mutex_lock(&lock);
    size_t i = 0;
    while (i < reservations.n && reservations.v[i].base < base)
        i++;
    int rc = insert_at(&reservations, i, (struct extent){base, len, dev});
    pthread_mutex_unlock(&lock);
    if (rc < 0) {
        munmap(p, len + MH__VDEV_PAGE);
        return NULL;
    }
    return (void *)base;
}

int mh__vdev_unreserve(void *ptr, size_t size)
{
    pthread_mutex_lock(&lock);
    long i = find(&reservations, (uintptr_t)ptr, 1);
    if (i >= 0)
        remove_at(&reservations, (size_t)i);
    pthread_mutex_unlock(&lock);
    /* the alignment slack around the range stays reserved: harmless */
    return i >= 0 ? munmap(ptr, round_page(size)) : -1;
}

int mh__vdev_map(void *ptr, size_t size)
{
    return mprotect(ptr, size, PROT_READ | PROT_WRITE);
}

int mh__vdev_unmap(void *ptr, size_t size)
{
    madvise(ptr, size, MADV_DONTNEED);
    return mprotect(ptr, size, PROT_NONE);
}

int mh__vdev_ptr_device(const void *p, void **base, size_t *size)
{
    uintptr_t a = (uintptr_t)p;
    int dev = -1;
    pthread_mutex_lock(&lock);
    for (int d = 0; d < MH__VDEV_MAX_DEVICES && dev < 0; d++) {
        if (!devs[d].base || a < devs[d].base || a >= devs[d].base + devs[d].range)
            continue;
        long i = find(&devs[d].allocs, a, 0);
        dev = d;
        *base = i >= 0 ? (void *)devs[d].allocs.v[i].base : (void *)a;
        *size = i >= 0 ? devs[d].allocs.v[i].size : 0;
    }
    long i = dev < 0 ? find(&reservations, a, 0) : -1;
    if (i >= 0) {
        dev = reservations.v[i].dev;
        *base = (void *)reservations.v[i].base;
        *size = reservations.v[i].size;
    }
    pthread_mutex_unlock(&lock);
    return dev;
}

void mh__vdev_mem_info(int dev, size_t *free_bytes, size_t *total)
{
    const struct mh__vdev_config *c = mh__vdev_config();
    pthread_mutex_lock(&lock);
    uint64_t used = devs[dev].used + (mh__vdev_context_active(dev) ? c->context : 0);
    pthread_mutex_unlock(&lock);
    mh__vdev_stats_mem_info(dev);
    *total = c->capacity;
    *free_bytes = used < c->capacity ? c->capacity - used : 0;
}

void mh__vdev_memset(void *p, int value, size_t n)
{
    uintptr_t a = (uintptr_t)p, page = 4096;
    uintptr_t lo = (a + page - 1) & ~(page - 1), hi = (a + n) & ~(page - 1);
    if (value == 0 && n >= (1u << 20) && hi > lo) {
        memset(p, 0, lo - a);
        madvise((void *)lo, hi - lo, MADV_DONTNEED); /* reads back as zeros */
        memset((void *)hi, 0, a + n - hi);
        return;
    }
    memset(p, value, n);
}

int mh__vdev_pin(void *p, size_t size)
{
    pthread_mutex_lock(&lock);
    size_t i = 0;
    while (i < pinned.n && pinned.v[i].base < (uintptr_t)p)
        i++;
    int rc = insert_at(&pinned, i, (struct extent){(uintptr_t)p, size ? size : 1, -1});
    pthread_mutex_unlock(&lock);
    return rc;
}

int mh__vdev_unpin(void *p)
{
    pthread_mutex_lock(&lock);
    long i = find(&pinned, (uintptr_t)p, 1);
    if (i >= 0)
        remove_at(&pinned, (size_t)i);
    pthread_mutex_unlock(&lock);
    return i >= 0 ? 0 : -1;
}

int mh__vdev_is_pinned(const void *p)
{
    pthread_mutex_lock(&lock);
    long i = find(&pinned, (uintptr_t)p, 0);
    pthread_mutex_unlock(&lock);
    return i >= 0;
}
