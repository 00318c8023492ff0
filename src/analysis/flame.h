/* flame.h - the allocations live at one moment as a tree of frames, the data
 * behind `memhist flame` (viz/flame draws it as an SVG flame graph or writes
 * it as folded stacks).
 *
 * Sits after the lifetimes (categories.h) in the offline data flow: the live
 * set at an event index is the lifetimes' records live there (the same set
 * `memhist report` counts), and each record becomes a path from the root:
 *   by module: its module path split at the dots ("transformer.h.11.mlp" ->
 *              transformer, h, 11, mlp): the name torch tagged it with (a
 *              parameter's "transformer.h.11.mlp.c_fc.weight"), else its
 *              metadata or the module scope it was allocated in; an
 *              allocation with none goes under "<no module>" followed by its
 *              Python stack;
 *   by stack:  its stack, outermost frame first, each frame "func (path:line)",
 *              the path relative to its package or the program's directory
 *              (stacks.h: mh__display_path), else its last two components;
 *   an allocation with no stack ends in "<no stack>".
 * Widths are block bytes; each node also keeps its bytes per category. Frame
 * names are made safe once, when a node is made: well-formed UTF-8 with
 * control characters as \xNN, ';' as \x3b, never empty, so they can be
 * written as folded stacks and (XML-escaped) as SVG text. Children are kept
 * in natural name order (h.2 before h.10), so every output is deterministic. */
#ifndef MH_ANALYSIS_FLAME_H
#define MH_ANALYSIS_FLAME_H

#include <stddef.h>
#include <stdint.h>

#include "categories.h"
#include "memhist/reader.h"

#define MH__FLAME_NONE UINT32_MAX
#define MH__FLAME_NO_MODULE "<no module>"
#define MH__FLAME_NO_STACK "<no stack>"

/* Kinds of frame, for outputs that word them differently. */
enum mh__flame_kind { MH__FLAME_ROOT, MH__FLAME_MODULE, MH__FLAME_FRAME, MH__FLAME_OTHER };

struct mh__flame_node {
    const char *name;   /* safe frame name (owned by the tree) */
    const char *detail; /* longer safe text for titles ("file:line func"), or NULL */
    uint32_t parent, first_child, next_sibling; /* MH__FLAME_NONE when absent */
    uint32_t depth;                             /* root 0 */
    uint8_t kind;                               /* enum mh__flame_kind */
    uint64_t bytes;                             /* this node and everything under it */
    uint64_t self;                              /* allocations whose path ends here */
    uint64_t count;                             /* allocations under it */
    uint64_t by_category[MH__CAT_COUNT];
};

struct mh__flame;

/* A tree holding only its root, named `root_name`. */
int mh__flame_new(const char *root_name, struct mh__flame **out);
void mh__flame_free(struct mh__flame *f);

/* The node at the end of the path `names[0..n)` under `parent` (made as
 * needed, each new one of `kind`; `details` may be NULL or hold NULLs).
 * Returns the node index in *node; 0 or MH_ENOMEM. */
int mh__flame_path(struct mh__flame *f, uint32_t parent, const char *const *names,
                   const char *const *details, size_t n, int kind, uint32_t *node);
/* Adds one allocation of `bytes` and `category` ending at `node`. */
void mh__flame_add(struct mh__flame *f, uint32_t node, uint64_t bytes, int category);
/* Sorts every node's children (natural name order); call before reading. */
void mh__flame_finish(struct mh__flame *f);

/* The nodes (borrowed; index 0 is the root). */
const struct mh__flame_node *mh__flame_nodes(const struct mh__flame *f, size_t *n);
/* The category with the most bytes under a node (the lowest on a tie). */
int mh__flame_main_category(const struct mh__flame_node *node);
/* Writes `name` made safe (see above) into buf; returns buf. */
const char *mh__flame_safe_name(const char *name, char *buf, size_t len);

/* Calls fn for every node with self bytes, depth first in child order:
 * `stack` is the path from the root's child to the node, names joined with
 * ';' (the folded-stack format). Stops at fn's first non-zero return and
 * returns it; MH_ENOMEM; 0. */
int mh__flame_fold(const struct mh__flame *f,
                   int (*fn)(void *user, const char *stack, uint64_t bytes), void *user);

/* ---- the live set at one moment ------------------------------------------- */
enum mh__flame_by { MH__FLAME_BY_AUTO, MH__FLAME_BY_MODULE, MH__FLAME_BY_STACK };

/* Builds the tree of what `device` has live right after event `index`
 * (finished). `by` MH__FLAME_BY_AUTO means by module when any of those
 * allocations has a module path, else by stack; *used (may be NULL) says
 * which. Definitions come from `r` (borrowed for the call). The root is
 * named "all". An empty live set gives a tree with the root alone. */
int mh__flame_live(const struct mh__lifetimes *lt, const struct mh_reader *r, int device,
                   uint64_t index, int by, struct mh__flame **out, int *used);

/* ---- the moment ------------------------------------------------------------- */
struct mh__flame_moment {
    uint64_t index;   /* the state right after this event */
    uint64_t time_ns; /* from the first event */
    int64_t step;     /* -1 before the first step */
    uint64_t value;   /* the peak's allocated bytes, the OOM's request, or 0 */
};

/* Where `at` (enum mh__moment_kind, moment.h) is for `device` of an
 * analysed file: its allocated peak, its last OOM, or `at_ns` after the
 * first event (the last event at or before it; found by one more pass
 * over the file). Returns 0, MH_EINVAL with a
 * one-line message in `err` (no OOM on the device, a time past the end),
 * or another negative code. */
struct mh__analysis;
int mh__flame_moment(const struct mh__analysis *a, int device, int at, uint64_t at_ns,
                     struct mh__flame_moment *out, char *err, size_t errlen);

#endif
