/* addrmap.h - the model's hash map from uint64 keys (addresses) to pointers
 * (hmap.c). The one model header other modules may use: the analyses in
 * src/analysis key their per-allocation tables by address with it, and the
 * hook library (src/pyhook, through libmemhist) its module and code tables. */
#ifndef MH_MODEL_ADDRMAP_H
#define MH_MODEL_ADDRMAP_H

#include <stddef.h>
#include <stdint.h>

struct mh__hslot {
    uint64_t key;
    void *val; /* NULL = empty slot */
};
struct mh__hmap {
    struct mh__hslot *slots;
    size_t cap; /* power of two, 0 before the first insert */
    size_t count;
};
void *mh__addrmap_get(const struct mh__hmap *h, uint64_t key);
int mh__addrmap_put(struct mh__hmap *h, uint64_t key, void *val); /* replaces; MH_ENOMEM */
void *mh__addrmap_del(struct mh__hmap *h, uint64_t key);          /* returns the removed value */
void mh__addrmap_destroy(struct mh__hmap *h);

#endif
