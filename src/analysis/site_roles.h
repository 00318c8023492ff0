/* site_roles.h - the role torch gave the allocations of each site.
 *
 * A site is an allocation's metadata string and stack (what names its
 * layer, layer_names.h). Fed the records of the first pass as their lives
 * end (lifetimes.c), it counts per site the records tagged with each role
 * (MH_EV_TAG from the module and optimizer hooks) and the untagged ones
 * since the site's first tagged record, so that a site where parameters,
 * gradients or optimizer state are made outside any module scope (model.to()
 * before the first forward, an optimizer step behind a wrapper such as
 * accelerate's) is named by that role, not by the source line of whichever
 * library called torch. Memory grows with the sites that made tagged
 * records, never with the events. */
#ifndef MH_ANALYSIS_SITE_ROLES_H
#define MH_ANALYSIS_SITE_ROLES_H

#include <stdint.h>

#include "addrmap.h"
#include "categories.h"

struct mh__site_roles {
    struct mh__hmap index; /* site key -> index + 1 into counts */
    struct mh__site_count {
        uint32_t tagged[MH_ROLE_OUTPUT]; /* records per role (PARAMETER .. OPTIMIZER_STATE) */
        uint32_t untagged;               /* records without a role since the first tagged */
    } *counts;
    size_t n, cap;
};

/* Counts record `r` whose life ended (or that is live at the end);
 * MH_ENOMEM. A zeroed struct is empty. */
int mh__site_roles_note(struct mh__site_roles *sr, const struct mh__alloc_rec *r);
/* The role (enum mh_tensor_role) of most records of site (str, stack) when
 * those are at least half of its records counted, else MH_ROLE_NONE. */
int mh__site_roles_of(const struct mh__site_roles *sr, uint32_t str, uint32_t stack);
void mh__site_roles_free(struct mh__site_roles *sr);

#endif
