/* site_roles.c - the role of each allocation site (site_roles.h). */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "grow.h"
#include "site_roles.h"

static uint64_t site_key(uint32_t str, uint32_t stack)
{
    return ((uint64_t)str << 32 | stack) + 1; /* never 0 */
}

static int is_role(uint8_t role)
{
    return role > MH_ROLE_NONE && role < MH_ROLE_OUTPUT;
}

int mh__site_roles_note(struct mh__site_roles *sr, const struct mh__alloc_rec *r)
{
    uint64_t key = site_key(r->str, r->stack);
    uintptr_t at = (uintptr_t)mh__addrmap_get(&sr->index, key);
    if (!at && !is_role(r->role))
        return 0; /* a site with no tagged record yet */
    if (!at) {
        if (MH__GROW(sr->counts, sr->n, sr->cap, 16) < 0)
            return MH_ENOMEM;
        memset(&sr->counts[sr->n], 0, sizeof sr->counts[sr->n]);
        at = ++sr->n;
        if (mh__addrmap_put(&sr->index, key, (void *)at) < 0)
            return MH_ENOMEM;
    }
    struct mh__site_count *c = &sr->counts[at - 1];
    if (is_role(r->role))
        c->tagged[r->role]++;
    else
        c->untagged++;
    return 0;
}

int mh__site_roles_of(const struct mh__site_roles *sr, uint32_t str, uint32_t stack)
{
    uintptr_t at = (uintptr_t)mh__addrmap_get(&sr->index, site_key(str, stack));
    if (!at)
        return MH_ROLE_NONE;
    const struct mh__site_count *c = &sr->counts[at - 1];
    int best = MH_ROLE_NONE;
    uint64_t total = c->untagged;
    for (int role = MH_ROLE_PARAMETER; role < MH_ROLE_OUTPUT; role++) {
        total += c->tagged[role];
        if (!best || c->tagged[role] > c->tagged[best])
            best = role;
    }
    return 2 * (uint64_t)c->tagged[best] >= total ? best : MH_ROLE_NONE;
}

void mh__site_roles_free(struct mh__site_roles *sr)
{
    mh__addrmap_destroy(&sr->index);
    free(sr->counts);
    memset(sr, 0, sizeof *sr);
}
