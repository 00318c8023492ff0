/* arrow_node.h - ArrowArray and ArrowSchema structs that own what they
 * point to, with the release callbacks the C data interface asks for: a
 * release frees the node's buffers and releases the children and the
 * dictionary still in it (a consumer may have moved some out, which it
 * marks by clearing their release). Internal to src/export. */
#ifndef MH_EXPORT_ARROW_NODE_H
#define MH_EXPORT_ARROW_NODE_H

#include <stdint.h>

#include "memhist/arrow.h"

/* Makes `a` an array of `length` rows (`nulls` of them null) owning the
 * malloc'ed buffers `bufs[0..nbufs)` (NULL entries allowed: an absent
 * validity bitmap), with `nkids` zeroed children and, if `dict`, a zeroed
 * dictionary for the caller to fill. On MH_ENOMEM the buffers are freed
 * and `a` is left released. */
int mh__array_init(struct ArrowArray *a, int64_t length, int64_t nulls, int nbufs, void **bufs,
                   int nkids, int dict);

/* Makes `s` a field of `format` named `name` (both static), with `flags`,
 * `nkids` zeroed children, a zeroed dictionary if `dict` and the metadata
 * `meta` (`meta_len` bytes, copied; NULL for none). MH_ENOMEM. */
int mh__schema_init(struct ArrowSchema *s, const char *format, const char *name, int64_t flags,
                    int nkids, int dict, const char *meta, size_t meta_len);

#endif
