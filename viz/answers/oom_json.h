/* oom_json.h - one OOM case of src/analysis (oom_explain.h) as a JSON
 * object: the request, the allocator's state, the free blocks, the verdict,
 * what was live by layer and by stack, the settings checked by replay and
 * the checkpointing plan. `memhist oom --json` (and report's) and
 * `memhist view`'s OOM cards write the same object; they differ only in how
 * a live stack is named, which the caller's callback writes. */
#ifndef MH_VIZ_OOM_JSON_H
#define MH_VIZ_OOM_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"

struct mh__oom_case;

struct mh__oom_json_opts {
    size_t top; /* the most layers listed as live */
    /* writes the key and value that name a live stack (a label; an id of a
     * string table) into the stack's object */
    void (*stack)(void *ctx, struct mh__json *j, uint32_t stack);
    void *ctx;
};

void mh__oom_case_json(struct mh__json *j, const struct mh__oom_case *c,
                       const struct mh__oom_json_opts *o);

#endif
