/* palette.h - the colours of the PNG plots.
 *
 * Group fills come from Paul Tol's "light" scheme, which is designed for
 * filled areas with labels and dark lines on top and stays distinguishable
 * with the common forms of colour blindness; lines and markers use dark,
 * high-contrast colours from Tol's schemes and Okabe-Ito. The category
 * fills are shared by the timeline and the flame graph. */
#ifndef MH_VIZ_PALETTE_H
#define MH_VIZ_PALETTE_H

#include <stdint.h>

#define MH__COL_BG 0xFFFFFFu
#define MH__COL_TEXT 0x222222u
#define MH__COL_MUTED 0x666666u     /* secondary text, tick labels */
#define MH__COL_AXIS 0x444444u
#define MH__COL_GRID 0xE8E8E8u
#define MH__COL_REST 0xBBBBBBu      /* all other allocations, aggregated */
#define MH__COL_ALLOCATED 0x000000u /* allocated curve */
#define MH__COL_RESERVED 0xAA3377u  /* reserved curve (Tol bright purple) */
#define MH__COL_RESERVED_FILL 0xE7C4D8u
#define MH__COL_DRIVER 0x0077BBu    /* driver memory outside the allocator (Tol vibrant blue) */
#define MH__COL_STEP 0x999999u      /* step boundaries */
#define MH__COL_OOM 0xCC3311u       /* out-of-memory events (Tol vibrant red) */
#define MH__COL_PEAK 0x111111u      /* peak marker: near-black, distinct from the allocated curve */
#define MH__COL_FRAG 0xEE7733u      /* fragmentation bars (Tol vibrant orange) */
/* segment view */
#define MH__COL_BLOCK_ALLOC 0x0072B2u   /* allocated block (Okabe-Ito blue) */
#define MH__COL_BLOCK_WASTE 0x9CCBE8u   /* rounding waste inside an allocated block */
#define MH__COL_BLOCK_PENDING 0xE69F00u /* freed, waiting for its stream (Okabe-Ito orange) */
#define MH__COL_BLOCK_FREE 0xEEEEEEu    /* inactive (cached, free) */
#define MH__COL_SEGMENT_EDGE 0x555555u

/* Number of distinct group colours before they repeat. */
#define MH__PALETTE_GROUPS 8
/* Fill colour of allocation group i (i >= 0; wraps around). */
uint32_t mh__palette_group(unsigned i);
/* Fill colour of a category (enum mh__category, whose MH__CAT_COUNT is
 * MH__PALETTE_CATEGORIES, "unknown" last; out of range: unknown's). */
#define MH__PALETTE_CATEGORIES 7
uint32_t mh__palette_category(int category);

#endif
