/* palette.c - the group and category fill colours (see palette.h). */
#include "palette.h"

/* Tol's light scheme without its pale grey (kept for "everything else"). */
static const uint32_t groups[MH__PALETTE_GROUPS] = {
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
    return groups[i % MH__PALETTE_GROUPS];
}

/* Fills of the categories, in enum order: Paul Tol's "muted" scheme, chosen
 * to stay distinct from the allocation-site colours (Tol's "light") and
 * from the reserved (purple) and allocated (black) curves drawn on top;
 * "unknown" is the pale grey. */
uint32_t mh__palette_category(int category)
{
    static const uint32_t fill[MH__PALETTE_CATEGORIES] = {
        0x88CCEEu, /* parameter: cyan */
        0xCC6677u, /* gradient: rose */
        0x999933u, /* optimizer_state: olive */
        0xDDCC77u, /* activation: sand */
        0x44AA99u, /* temporary: teal */
        0x117733u, /* input: green */
        0xDDDDDDu, /* unknown: pale grey */
    };
    int known = category >= 0 && category < MH__PALETTE_CATEGORIES;
    return fill[known ? category : MH__PALETTE_CATEGORIES - 1];
}
