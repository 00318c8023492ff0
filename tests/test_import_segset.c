/* test_import_segset.c - the importer's set of live segments
 * (snapshot_isegs.c) against a plain array under random inserts, removes
 * and lookups, and its order for a long descending run. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "snapshot_import_int.h"

#define SLOTS 512
#define UNIT 4096ull

/* The model: which unit each slot's segment starts at, 0 = none. */
struct model {
    uint64_t start[SLOTS], size[SLOTS];
};

static const struct mh__iseg *model_find(const struct model *m, uint64_t addr, int *slot)
{
    static struct mh__iseg g;
    for (int i = 0; i < SLOTS; i++)
        if (m->size[i] && addr >= m->start[i] && addr < m->start[i] + m->size[i]) {
            g.address = m->start[i];
            g.size = m->size[i];
            *slot = i;
            return &g;
        }
    return NULL;
}

static int model_overlaps(const struct model *m, uint64_t a, uint64_t n)
{
    for (int i = 0; i < SLOTS; i++)
        if (m->size[i] && a < m->start[i] + m->size[i] && m->start[i] < a + n)
            return 1;
    return 0;
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

Test(segset, matches_an_array)
{
    struct mh__isegset set;
    memset(&set, 0, sizeof set);
    struct model m;
    memset(&m, 0, sizeof m);
    uint64_t r = 88172645463325252ull;
    int inserted = 0, removed = 0, refused = 0;
    for (int step = 0; step < 20000; step++) {
        uint64_t a = (1 + rnd(&r) % (4 * SLOTS)) * UNIT, n = (1 + rnd(&r) % 8) * UNIT;
        int op = (int)(rnd(&r) % 3), slot = -1;
        const struct mh__iseg *want = model_find(&m, a, &slot);
        struct mh__iseg *got = mh__isegset_find(&set, a);
        cr_assert_eq(!got, !want, "find %llx", (unsigned long long)a);
        if (got)
            cr_assert(got->address == want->address && got->size == want->size);
        if (op == 0 && got) {
            mh__isegset_remove(&set, got->address);
            m.size[slot] = 0;
            removed++;
        } else if (op != 0) {
            struct mh__iseg g;
            memset(&g, 0, sizeof g);
            g.address = a;
            g.size = n;
            int over = model_overlaps(&m, a, n), free_slot = -1;
            for (int i = 0; i < SLOTS && free_slot < 0; i++)
                if (!m.size[i])
                    free_slot = i;
            if (free_slot < 0)
                continue;
            int rc = mh__isegset_insert(&set, &g);
            cr_assert_eq(rc, over, "insert %llx+%llx", (unsigned long long)a,
                         (unsigned long long)n);
            if (!over) {
                m.start[free_slot] = a;
                m.size[free_slot] = n;
                inserted++;
            } else {
                refused++;
            }
        }
    }
    cr_assert(inserted > 1000 && removed > 1000 && refused > 1000, "%d %d %d", inserted, removed,
              refused);
    struct mh__iseg *all;
    size_t n;
    cr_assert_eq(mh__isegset_sorted(&set, &all, &n), 0);
    size_t live = 0;
    for (int i = 0; i < SLOTS; i++)
        live += m.size[i] != 0;
    cr_assert_eq(n, live);
    for (size_t i = 1; i < n; i++)
        cr_assert_lt(all[i - 1].address + all[i - 1].size, all[i].address + 1);
    free(all);
    mh__isegset_free(&set);
}

Test(segset, descending_run_and_empty_segments)
{
    struct mh__isegset set;
    memset(&set, 0, sizeof set);
    struct mh__iseg g;
    memset(&g, 0, sizeof g);
    size_t n = 200000;
    g.size = 2 << 20;
    for (size_t i = n; i-- > 0;) {
        g.address = (1ull << 40) + i * g.size;
        cr_assert_eq(mh__isegset_insert(&set, &g), 0);
    }
    g.size = 0;
    cr_assert_eq(mh__isegset_insert(&set, &g), 1, "an empty segment is refused");
    g.address = UINT64_MAX - 10;
    g.size = 100;
    cr_assert_eq(mh__isegset_insert(&set, &g), 1, "a wrapping segment is refused");
    struct mh__iseg *all;
    size_t got;
    cr_assert_eq(mh__isegset_sorted(&set, &all, &got), 0);
    cr_assert_eq(got, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(all[i].address, (1ull << 40) + i * (2 << 20));
    free(all);
    mh__isegset_free(&set);
}
