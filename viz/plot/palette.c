/* palette.c - the group fill colours (see palette.h). */
#include "palette.h"

/* Tol's light scheme without its pale grey (kept for "everything else"). */
static const uint32_t groups[MH_PALETTE_GROUPS] = {
    0x77AADDu, /* light blue */
    0xEE8866u, /* orange */
    0xEEDD88u, /* light yellow */
    0xFFAABBu, /* pink */
    0x99DDFFu, /* light cyan */
    0x44BB99u, /* mint */
    0xBBCC33u, /* pear */
    0xAAAA00u, /* olive */
};

uint32_t mh__palette_group(unsigned i)
{
    return groups[i % MH_PALETTE_GROUPS];
}
