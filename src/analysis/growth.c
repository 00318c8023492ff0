/* growth.c - the growth observer (see growth.h): allocation groups by
 * device, stack and module, their live bytes (each live allocation named by
 * its block's MH__WORD_GROWTH word), and their live bytes at the
 * end of each of the device's last complete steps (a ring of RING ends,
 * indexed by the device's count of step ends, so a group created late
 * reads zeros for the ends before it existed). */
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "category_rule.h"
#include "growth.h"
#include "grow.h"

#define RING 9 /* K at most 8, plus the end before the window */
#define MAX_K 8
#define NDEV 256

struct grp {
    int device;
    uint32_t stack, module;
    uint64_t live;
    uint64_t ends[RING];
    uint32_t grown, streak;
    int64_t streak_start;
};

/* A live allocation, named by its block's MH__WORD_GROWTH word (index + 1). */
struct live_block {
    uint32_t grp;  /* index + 1 in groups; 0 = free slot */
    int16_t device;
    uint64_t addr, size;
};

struct mh__growth {
    struct mh__observer obs;
    struct grp *g;
    size_t ng, capg;
    struct mh__hmap *bykey; /* per device: rotl(stack << 32 | module, 6) -> group index + 1 */
    struct live_block *blk;
    size_t nblk, capblk;
    uint32_t *freeblk;      /* free live_block slots */
    size_t nfree, capfree;
    size_t ends[NDEV];      /* step ends seen per device */
    int64_t last_step[NDEV];
};

static uint64_t group_key(uint32_t stack, uint32_t module)
{
    uint64_t k = (uint64_t)stack << 32 | module;
    return k << 6 | k >> 58;
}

/* The group of (device, stack, module), created on first use; 0 on ENOMEM. */
static uint32_t group_of(struct mh__growth *g, int device, uint32_t stack, uint32_t module)
{
    struct mh__hmap *map = &g->bykey[device];
    uint64_t key = group_key(stack, module);
    uintptr_t i = (uintptr_t)mh__addrmap_get(map, key);
    if (i)
        return (uint32_t)i;
    if (g->ng >= UINT32_MAX - 1 || MH__GROW(g->g, g->ng, g->capg, 256) < 0)
        return 0;
    struct grp *p = &g->g[g->ng];
    memset(p, 0, sizeof *p);
    p->device = device;
    p->stack = stack;
    p->module = module;
    if (mh__addrmap_put(map, key, (void *)(uintptr_t)(g->ng + 1)) < 0)
        return 0;
    return (uint32_t)++g->ng;
}

/* Live bytes are the requested sizes: a block the allocator served whole from
 * a larger free block (it splits a large block only when more than 1 MiB
 * would be left) holds the same tensor in a bigger block, which is rounding
 * that moves from step to step, not growth. */
static int on_alloc(struct mh__growth *g, const struct mh_model *m, const struct mh_event *ev,
                    const struct mh_apply_result *res)
{
    uint32_t module = ev->str ? ev->str : mh_model_scope(m, ev->thread);
    uint32_t gi = group_of(g, ev->device, ev->stack, module);
    if (!gi)
        return MH_ENOMEM;
    size_t slot;
    if (g->nfree) {
        slot = g->freeblk[--g->nfree];
    } else {
        if (MH__GROW(g->blk, g->nblk, g->capblk, 1024) < 0)
            return MH_ENOMEM;
        slot = g->nblk++;
    }
    g->blk[slot] = (struct live_block){gi, ev->device, ev->addr, ev->size};
    g->g[gi - 1].live += ev->size;
    if (res->block_words)
        res->block_words[MH__WORD_GROWTH] = (uint32_t)slot + 1;
    return 0;
}

static int on_free(struct mh__growth *g, const struct mh_event *ev,
                   const struct mh_apply_result *res)
{
    size_t i = res->block_words ? res->block_words[MH__WORD_GROWTH] : 0;
    if (!i || i > g->nblk || !g->blk[i - 1].grp || g->blk[i - 1].addr != ev->addr ||
        g->blk[i - 1].device != ev->device)
        return 0;
    struct live_block *b = &g->blk[i - 1];
    g->g[b->grp - 1].live -= b->size;
    b->grp = 0;
    if (MH__GROW(g->freeblk, g->nfree, g->capfree, 1024) < 0)
        return MH_ENOMEM;
    g->freeblk[g->nfree++] = (uint32_t)(i - 1);
    return 0;
}

/* Device `device` completed its step `step`: every group of it notes its
 * live bytes. */
static void step_end(struct mh__growth *g, int device, int64_t step)
{
    size_t e = g->ends[device]++;
    for (size_t i = 0; i < g->ng; i++) {
        struct grp *p = &g->g[i];
        if (p->device != device)
            continue;
        uint64_t prev = e ? p->ends[(e - 1) % RING] : 0;
        if (p->live > prev) {
            p->grown++;
            if (!p->streak++)
                p->streak_start = step;
        } else {
            p->streak = 0;
        }
        p->ends[e % RING] = p->live;
    }
}

/* New complete steps in the model since the last look. */
static void check_steps(struct mh__growth *g, const struct mh_model *m)
{
    for (size_t i = 0; i < mh_model_device_count(m); i++) {
        int dev = mh_model_device_at(m, i);
        size_t n = mh_model_step_count(m, dev);
        struct mh_step_stats s;
        while (dev >= 0 && dev < NDEV && g->ends[dev] < n &&
               mh_model_step(m, dev, g->ends[dev], &s) == 0)
            step_end(g, dev, s.step);
    }
}

static int observe(void *user, struct mh__session *s, const struct mh_event *ev,
                   const struct mh_apply_result *res)
{
    struct mh__growth *g = user;
    const struct mh_model *m = mh__session_model(s);
    if (ev->kind == MH_EV_STEP_END || ev->kind == MH_EV_STEP_BEGIN) {
        check_steps(g, m);
        return 0;
    }
    if (ev->device < 0 || ev->device >= NDEV || !res || res->anomaly)
        return 0;
    if (ev->kind == MH_EV_ALLOC && res->block_size)
        return on_alloc(g, m, ev, res);
    if (ev->kind == MH_EV_FREE_REQUESTED ||
        (ev->kind == MH_EV_FREE_COMPLETED && res->allocated_delta < 0))
        return on_free(g, ev, res);
    return 0;
}

static int finish(void *user, struct mh__session *s)
{
    check_steps(user, mh__session_model(s)); /* steps the end of the input closed */
    return 0;
}

static void reset(struct mh__growth *g)
{
    for (size_t d = 0; d < NDEV; d++)
        mh__addrmap_destroy(&g->bykey[d]);
    free(g->g);
    free(g->blk);
    free(g->freeblk);
    struct mh__hmap *maps = g->bykey;
    struct mh__observer obs = g->obs;
    memset(g, 0, sizeof *g);
    g->bykey = maps;
    g->obs = obs;
}

static int begin(void *user, struct mh__session *s)
{
    (void)s;
    reset(user); /* a later pass starts over */
    return 0;
}

int mh__growth_new(struct mh__growth **out)
{
    struct mh__growth *g = calloc(1, sizeof *g);
    if (g)
        g->bykey = calloc(NDEV, sizeof *g->bykey);
    if (!g || !g->bykey) {
        free(g);
        return MH_ENOMEM;
    }
    g->obs = (struct mh__observer){"growth", g, begin, observe, finish};
    *out = g;
    return 0;
}

void mh__growth_free(struct mh__growth *g)
{
    if (!g)
        return;
    reset(g);
    free(g->bykey);
    free(g);
}

const struct mh__observer *mh__growth_observer(struct mh__growth *g)
{
    return &g->obs;
}

uint32_t mh__growth_window(size_t steps)
{
    if (steps < 3)
        return 0;
    size_t k = (steps - 1 + 1) / 2;
    return (uint32_t)(k < 2 ? 2 : k > MAX_K ? MAX_K : k);
}

static int by_rate_desc(const void *a, const void *b)
{
    const struct mh__growth_entry *x = a, *y = b;
    if (x->bytes_per_step != y->bytes_per_step)
        return x->bytes_per_step < y->bytes_per_step ? 1 : -1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

int mh__growth_get(const struct mh__growth *g, int device, struct mh__growth_entry **out, size_t *n,
                   uint32_t *k)
{
    *out = NULL;
    *n = 0;
    size_t steps = device >= 0 && device < NDEV ? g->ends[device] : 0;
    *k = mh__growth_window(steps);
    if (!*k)
        return 0;
    size_t last = steps - 1, base = steps - 1 - *k, cap = 0;
    for (size_t i = 0; i < g->ng; i++) {
        const struct grp *p = &g->g[i];
        if (p->device != device || p->streak < *k)
            continue;
        if (MH__GROW(*out, *n, cap, 16) < 0) {
            free(*out);
            *out = NULL;
            *n = 0;
            return MH_ENOMEM;
        }
        uint64_t now = p->ends[last % RING], then = p->ends[base % RING];
        (*out)[(*n)++] = (struct mh__growth_entry){device, p->stack, p->module, (now - then) / *k,
                                                  now, p->streak_start, p->grown, (uint32_t)steps};
    }
    if (*n)
        qsort(*out, *n, sizeof **out, by_rate_desc);
    return 0;
}
