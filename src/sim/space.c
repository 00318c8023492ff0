/* space.c - the simulated device address space: which ranges are taken by
 * cudaMalloc'd segments and expandable reservations. New ranges go to the
 * lowest 2 MiB-aligned gap above the base (first fit), or to the address the
 * replay oracle asks for when it is free. Owns the sorted range array. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "sim_int.h"

#define SPACE_ALIGN (2ull * 1024 * 1024)

static int overlaps(const struct mh__sim *s, uint64_t addr, uint64_t size)
{
    for (size_t i = 0; i < s->nranges; i++) {
        const struct mh__sim_range *r = &s->ranges[i];
        if (addr < r->base + r->size && r->base < addr + size)
            return 1;
    }
    return 0;
}

static uint64_t first_fit(const struct mh__sim *s, uint64_t size)
{
    uint64_t at = s->o.base_addr;
    for (size_t i = 0; i < s->nranges; i++) {
        const struct mh__sim_range *r = &s->ranges[i];
        if (r->base + r->size <= at)
            continue;
        if (r->base >= at + size)
            break;
        at = (r->base + r->size + SPACE_ALIGN - 1) & ~(SPACE_ALIGN - 1);
    }
    return at;
}

int mh__space_take(struct mh__sim *s, uint64_t size, uint64_t want, uint64_t *addr)
{
    if (size == 0 || size > UINT64_MAX / 4)
        return MH_EINVAL;
    uint64_t at = want && want <= UINT64_MAX - size && !overlaps(s, want, size)
                      ? want
                      : first_fit(s, size);
    if (s->nranges == s->cap_ranges) {
        size_t nc = s->cap_ranges ? s->cap_ranges * 2 : 64;
        struct mh__sim_range *nr = realloc(s->ranges, nc * sizeof *nr);
        if (!nr)
            return MH_ENOMEM;
        s->ranges = nr;
        s->cap_ranges = nc;
    }
    size_t i = 0;
    while (i < s->nranges && s->ranges[i].base < at)
        i++;
    memmove(&s->ranges[i + 1], &s->ranges[i], (s->nranges - i) * sizeof *s->ranges);
    s->ranges[i].base = at;
    s->ranges[i].size = size;
    s->nranges++;
    *addr = at;
    return 0;
}

void mh__space_shrink(struct mh__sim *s, uint64_t addr, uint64_t size)
{
    for (size_t i = 0; i < s->nranges; i++)
        if (s->ranges[i].base == addr && size < s->ranges[i].size)
            s->ranges[i].size = size;
}

void mh__space_give(struct mh__sim *s, uint64_t addr)
{
    for (size_t i = 0; i < s->nranges; i++) {
        if (s->ranges[i].base == addr) {
            memmove(&s->ranges[i], &s->ranges[i + 1], (s->nranges - i - 1) * sizeof *s->ranges);
            s->nranges--;
            return;
        }
    }
}
