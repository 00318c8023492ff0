/* test_model_util.h - helpers shared by the model tests: event constructors
 * and a full consistency check of a device's replayed state (blocks tile
 * their segments in address order, and every counter equals the sum over
 * the live blocks and segments). Header-only; each test includes it once. */
#ifndef TEST_MODEL_UTIL_H
#define TEST_MODEL_UTIL_H

#include <criterion/criterion.h>
#include <string.h>

#include "memhist/error.h"
#include "memhist/model.h"

static inline struct mh_event tev(unsigned kind, uint64_t addr, uint64_t size)
{
    struct mh_event e;
    memset(&e, 0, sizeof e);
    e.kind = (uint8_t)kind;
    e.addr = addr;
    e.size = size;
    return e;
}

static inline int tapply(struct mh_model *m, unsigned kind, uint64_t addr, uint64_t size)
{
    struct mh_event e = tev(kind, addr, size);
    struct mh_apply_result r;
    cr_assert_eq(mh_model_apply(m, &e, &r), 0);
    return r.anomaly;
}

static inline struct mh_model *tmodel(const char *conf)
{
    struct mh_model_opts o;
    struct mh_model *m;
    memset(&o, 0, sizeof o);
    if (conf)
        cr_assert_eq(mh_alloc_conf_parse(conf, &o.conf, NULL, 0), 0);
    cr_assert_eq(mh_model_new(&o, &m), 0);
    return m;
}

struct tcheck {
    uint64_t seg_addr, seg_end, next_addr, last_end;
    uint64_t allocated, active, requested, reserved, inactive_split, largest_free;
    uint64_t seg_allocated, seg_active, seg_requested, seg_inactive;
    uint32_t segments, blocks_in_seg, seg_nblocks, allocated_blocks;
    int seg_expandable, prev_inactive, adjacent_free, bad;
};

static inline void tcheck_close_segment(struct tcheck *c)
{
    if (!c->segments)
        return;
    if (c->next_addr != c->seg_end || c->blocks_in_seg != c->seg_nblocks)
        c->bad = 1;
    if (c->seg_allocated || c->seg_active || c->seg_requested)
        c->bad = 1; /* per-segment sums are counted down to zero */
    if (!c->seg_expandable && c->seg_nblocks > 1)
        c->inactive_split += c->seg_inactive;
}

static inline int tcheck_block(void *user, const struct mh_segment_view *s,
                               const struct mh_block_view *b)
{
    struct tcheck *c = user;
    if (b->address == s->address) { /* first block of a new segment */
        tcheck_close_segment(c);
        if (c->segments && s->address < c->last_end)
            c->bad = 1;
        c->segments++;
        c->reserved += s->size;
        c->seg_addr = s->address;
        c->seg_end = s->address + s->size;
        c->last_end = c->seg_end;
        c->next_addr = s->address;
        c->blocks_in_seg = 0;
        c->seg_nblocks = s->nblocks;
        c->seg_allocated = s->allocated;
        c->seg_active = s->active;
        c->seg_requested = s->requested;
        c->seg_inactive = 0;
        c->seg_expandable = s->expandable;
        c->prev_inactive = 0;
    }
    if (b->address != c->next_addr || b->size == 0)
        c->bad = 1;
    c->next_addr = b->address + b->size;
    c->blocks_in_seg++;
    if (b->state == MH_BLOCK_ALLOCATED) {
        c->allocated += b->size;
        c->allocated_blocks++;
        c->seg_allocated -= b->size;
    }
    if (b->state != MH_BLOCK_INACTIVE) {
        c->active += b->size;
        c->requested += b->requested;
        c->seg_active -= b->size;
        c->seg_requested -= b->requested;
        c->prev_inactive = 0;
    } else {
        c->seg_inactive += b->size;
        if (b->size > c->largest_free)
            c->largest_free = b->size;
        if (c->prev_inactive)
            c->adjacent_free = 1;
        c->prev_inactive = 1;
    }
    return 0;
}

/* Asserts that device `dev` of m is consistent. `merged` also requires that
 * no two inactive blocks are neighbours (true after any valid sequence). */
static inline void tcheck_device(const struct mh_model *m, int dev, int merged, const char *where)
{
    struct tcheck c;
    struct mh_mem_stats st;
    memset(&c, 0, sizeof c);
    mh_model_stats(m, dev, &st);
    mh_model_foreach_block(m, dev, tcheck_block, &c);
    tcheck_close_segment(&c);
    cr_assert(!c.bad, "%s: blocks do not tile segments", where);
    cr_assert(!merged || !c.adjacent_free, "%s: unmerged free neighbours", where);
    cr_assert_eq(c.allocated, st.allocated, "%s: allocated %llu vs %llu", where,
                 (unsigned long long)c.allocated, (unsigned long long)st.allocated);
    cr_assert_eq(c.reserved, st.reserved, "%s: reserved %llu vs %llu", where,
                 (unsigned long long)c.reserved, (unsigned long long)st.reserved);
    cr_assert_eq(c.active, st.active, "%s: active", where);
    cr_assert_eq(c.requested, st.requested, "%s: requested", where);
    cr_assert_eq(c.segments, st.segments, "%s: segments", where);
    cr_assert_eq(c.allocated_blocks, st.allocated_blocks, "%s: allocated blocks", where);
    cr_assert_eq(c.inactive_split, st.inactive_split, "%s: inactive_split %llu vs %llu", where,
                 (unsigned long long)c.inactive_split, (unsigned long long)st.inactive_split);
    cr_assert_eq(c.largest_free, mh_model_largest_free(m, dev, UINT64_MAX, -1), "%s: largest free",
                 where);
}

#endif
