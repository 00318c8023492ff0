/* plot_sites.c - what the timeline's coloured groups are made of (see
 * plot_int.h). An allocation's site is the pair (module scope or user
 * metadata, allocation stack), as `memhist layers` keys its layers: when
 * the recording has module scopes, sites are named by module (the layer
 * name: "transformer.h.3"), otherwise by allocation stack as before. Both
 * passes ask for the site of every allocation and free of the device: an
 * allocation's from its event (metadata, else the thread's innermost scope,
 * as the categories take it), a free's from the allocation it ends (a map
 * of live block addresses). Memory: the distinct pairs and the live blocks. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "stacks.h"
#include "plot_int.h"

static int add_site(struct mh__plot_sites *ps, uint32_t str, uint32_t stack, uint32_t *site)
{
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 256;
        uint32_t *a = realloc(ps->str, cap * sizeof *a);
        if (!a)
            return MH_ENOMEM;
        ps->str = a;
        uint32_t *b = realloc(ps->stack, cap * sizeof *b);
        if (!b)
            return MH_ENOMEM;
        ps->stack = b;
        ps->cap = cap;
    }
    ps->str[ps->n] = str;
    ps->stack[ps->n] = stack;
    *site = (uint32_t)ps->n++;
    uint64_t key = ((uint64_t)str << 32 | stack) + 1;
    return mh__addrmap_put(&ps->pairs, key, (void *)(uintptr_t)(*site + 1));
}

int mh__plot_site_of(struct mh__plot_sites *ps, struct mh__hmap *live, const struct mh_model *m,
                     const struct mh_event *ev, const struct mh_apply_result *res, uint32_t *site)
{
    if (ev->kind == MH_EV_ALLOC && res->allocated_delta > 0) {
        uint32_t str = ev->str ? ev->str : mh_model_scope(m, ev->thread);
        uint64_t key = ((uint64_t)str << 32 | res->block_stack) + 1;
        uintptr_t v = (uintptr_t)mh__addrmap_get(&ps->pairs, key);
        int rc = 0;
        if (v)
            *site = (uint32_t)(v - 1);
        else if ((rc = add_site(ps, str, res->block_stack, site)) < 0)
            return rc;
        return mh__addrmap_put(live, ev->addr, (void *)(uintptr_t)(*site + 1));
    }
    uintptr_t v = (uintptr_t)mh__addrmap_del(live, ev->addr);
    if (v) {
        *site = (uint32_t)(v - 1);
        return 0;
    }
    /* a block alive before the file began: its stack alone */
    uint64_t key = (uint64_t)res->block_stack + 1;
    v = (uintptr_t)mh__addrmap_get(&ps->pairs, key);
    if (v) {
        *site = (uint32_t)(v - 1);
        return 0;
    }
    return add_site(ps, 0, res->block_stack, site);
}

uint32_t mh__plot_site_find(const struct mh__plot_sites *ps, struct mh__hmap *live,
                            const struct mh_model *m, const struct mh_event *ev,
                            const struct mh_apply_result *res)
{
    uint64_t key = (uint64_t)res->block_stack + 1;
    if (ev->kind == MH_EV_ALLOC && res->allocated_delta > 0) {
        uint32_t str = ev->str ? ev->str : mh_model_scope(m, ev->thread);
        key = ((uint64_t)str << 32 | res->block_stack) + 1;
    } else {
        uintptr_t v = (uintptr_t)mh__addrmap_del(live, ev->addr);
        if (v)
            return (uint32_t)(v - 1);
    }
    uintptr_t v = (uintptr_t)mh__addrmap_get(&ps->pairs, key);
    if (!v)
        return UINT32_MAX;
    if (ev->kind == MH_EV_ALLOC && res->allocated_delta > 0 &&
        mh__addrmap_put(live, ev->addr, (void *)v) < 0)
        return UINT32_MAX;
    return (uint32_t)(v - 1);
}

int mh__plot_sites_namer(const struct mh__plot_sites *ps, const struct mh_reader *r,
                         struct mh__layer_namer *nm)
{
    int rc = 0;
    mh__layer_namer_init(nm, r);
    for (size_t i = 0; i < ps->n && rc == 0; i++)
        rc = mh__layer_namer_add(nm, ps->str[i]);
    return rc < 0 ? rc : mh__layer_namer_ready(nm);
}

const char *mh__plot_site_label(const struct mh__layer_namer *nm, const struct mh__plot_sites *ps,
                                uint32_t site, char *buf, size_t len)
{
    if (site >= ps->n)
        return mh__stack_label(nm->r, 0, buf, len);
    if (ps->scopes)
        return mh__layer_name(nm, ps->str[site], ps->stack[site], MH_ROLE_NONE, buf, len);
    return mh__stack_label(nm->r, ps->stack[site], buf, len);
}

void mh__plot_sites_free(struct mh__plot_sites *ps)
{
    mh__addrmap_destroy(&ps->pairs);
    mh__addrmap_destroy(&ps->live);
    free(ps->str);
    free(ps->stack);
    memset(ps, 0, sizeof *ps);
}
