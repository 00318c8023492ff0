/* layer_names.h - the layer an allocation belongs to, by name (the rules
 * are in layers.h). A namer is made once per analysis from the module
 * paths of its allocations, so that a path can be cut at a block kept as a
 * numbered attribute ("block2" of "block2.mlp.fc", beside "block1"). */
#ifndef MH_ANALYSIS_LAYER_NAMES_H
#define MH_ANALYSIS_LAYER_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "addrmap.h"
#include "memhist/reader.h"

/* Whether metadata `s` is a module path ("transformer.h.11.mlp",
 * "trunk_output.block1.block1-0"): dot-separated non-empty names without
 * spaces, control characters or any of :/\<>()[]{}"' (so not a file:line
 * label or a sentence). */
int mh__is_module_path(const char *s);

struct mh__layer_namer {
    const struct mh_reader *r; /* borrowed */
    const char **paths;        /* distinct module paths of the allocations, sorted when ready */
    size_t *block;             /* per path, when ready: the length of its block, 0 if none */
    size_t npaths, cap;
    struct mh__hmap seen; /* string ids added */
};

/* A namer with no paths yet: it cuts paths at an index only until its
 * paths are added and readied. */
void mh__layer_namer_init(struct mh__layer_namer *nm, const struct mh_reader *r);
/* Adds the metadata string of an allocation (any string id; 0 and strings
 * that are not module paths are left out); MH_ENOMEM. */
int mh__layer_namer_add(struct mh__layer_namer *nm, uint32_t str);
/* Sorts the paths added and finds their blocks: call once after the last
 * add, before naming; MH_ENOMEM. */
int mh__layer_namer_ready(struct mh__layer_namer *nm);
void mh__layer_namer_free(struct mh__layer_namer *nm);

/* The layer of the allocations torch tagged with `role` (enum
 * mh_tensor_role) made outside any module scope: "parameters", "buffers",
 * "gradients", "optimizer state"; NULL for another role. */
const char *mh__role_layer(int role);

/* Writes the layer name of an allocation (metadata `str`, `stack`) into buf:
 * its module path cut at its block; else, where most allocations of its site
 * were tagged with a role (`role`, site_roles.h), that role's layer, the same
 * whichever library made them (model.to(), an optimizer behind a wrapper);
 * else the module classes of its stack, or its stack's label. Returns buf. */
const char *mh__layer_name(const struct mh__layer_namer *nm, uint32_t str, uint32_t stack, int role,
                           char *buf, size_t len);

#endif
