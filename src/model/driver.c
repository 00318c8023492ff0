/* driver.c - driver-level device allocations seen by CUPTI (DRIVER_ALLOC /
 * DRIVER_FREE, aux = enum mh_memory_kind). Only device memory (MH_MEM_DEVICE)
 * and VMM mappings (MH_MEM_VMM) are tracked. An allocation that lies inside
 * a live caching-allocator segment, or whose address a later SEGMENT_ALLOC or
 * SEGMENT_MAP starts a run of (CUPTI reports the cudaMalloc before PyTorch
 * reports the segment), belongs to PyTorch; the others count in
 * driver_outside (NCCL buffers, raw cudaMalloc, cuMemCreate). Owns one
 * record per live driver allocation. */
#include <stdlib.h>

#include "memhist/error.h"
#include "model_int.h"

struct mh__driver_alloc {
    uint64_t size;
    int outside; /* counted in driver_outside */
};

int mh__driver_tracked(const struct mh_event *ev)
{
    return ev->aux == MH_MEM_DEVICE || ev->aux == MH_MEM_VMM;
}

static int inside_segment(const struct mh__device *d, uint64_t addr, uint64_t size)
{
    const struct mh__segment *s = mh__seg_containing(d, addr);
    return s && size <= s->addr + s->size - addr;
}

int mh__apply_driver(struct mh_model *m, struct mh__device *d, const struct mh_event *ev)
{
    if (ev->kind == MH_EV_DRIVER_FREE) {
        struct mh__driver_alloc *a = mh__addrmap_del(&d->drivers, ev->addr);
        if (a && a->outside)
            d->stats.driver_outside -= a->size;
        free(a);
        return 0;
    }
    struct mh__driver_alloc *a = mh__addrmap_get(&d->drivers, ev->addr);
    if (a) { /* a missed free: replace the old record */
        if (a->outside)
            d->stats.driver_outside -= a->size;
    } else {
        if (!(a = malloc(sizeof *a)))
            return MH_ENOMEM;
        if (mh__addrmap_put(&d->drivers, ev->addr, a)) {
            free(a);
            return MH_ENOMEM;
        }
    }
    a->size = ev->size;
    a->outside = !inside_segment(d, ev->addr, ev->size);
    if (a->outside)
        d->stats.driver_outside += a->size;
    return 0;
}

/* Walks the run of driver allocations that tile [addr, addr+size) from its
 * start (one cudaMalloc, or one cuMemMap per page) and attributes them. */
void mh__driver_claim(struct mh__device *d, uint64_t addr, uint64_t size)
{
    uint64_t end = addr + size;
    while (addr < end) {
        struct mh__driver_alloc *a = mh__addrmap_get(&d->drivers, addr);
        if (!a || a->size == 0)
            return;
        if (a->outside) {
            d->stats.driver_outside -= a->size;
            a->outside = 0;
        }
        if (a->size > UINT64_MAX - addr)
            return;
        addr += a->size;
    }
}

void mh__driver_destroy(struct mh__device *d)
{
    for (size_t i = 0; i < d->drivers.cap; i++)
        free(d->drivers.slots[i].val);
    mh__addrmap_destroy(&d->drivers);
}
