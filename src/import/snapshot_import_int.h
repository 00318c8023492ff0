/* snapshot_import_int.h - internals of snapshot import. snapshot_iconv.c and
 * snapshot_itrace.c check each record (a segment, a trace entry, an
 * annotation: handed on by the streaming reader, or walked in a whole tree)
 * against the snapshot schema and convert it into the flat arrays below
 * (interning frames and strings in the writer); trace entries go to the
 * store of snapshot_istore.c; snapshot_ireplay.c rebuilds the starting state
 * by replaying the trace backwards and writes the events. */
#ifndef MH_IMPORT_SNAPSHOT_IMPORT_INT_H
#define MH_IMPORT_SNAPSHOT_IMPORT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/model.h"
#include "memhist/optsteps.h"
#include "memhist/writer.h"
#include "pickle_stream.h"
#include "pickle_value.h"
#include "snapshot_import.h"

struct mh__iseg {
    int device;
    uint64_t address, size, stream;
    uint32_t pool[2];
    uint32_t stack;
    uint8_t small, expandable;
};

struct mh__iblk {
    int device;
    uint64_t address, size, requested, stream;
    uint32_t stack;
    uint32_t pool[2];
    uint8_t state; /* enum mh_block_state */
};

/* One trace entry (kind is an mh_event_kind) or annotation. */
struct mh__ient {
    uint64_t time_ns, addr, size, stream;
    uint32_t stack, str, str2;
    uint32_t aux; /* segment events: the segment's own stack (MH_EVF_SEGMENT_STACK) */
    uint32_t pool[2];
    uint8_t kind, flags, has_pool;
    uint8_t backward; /* an alloc whose stack runs inside autograd's backward */
    uint8_t program;  /* an alloc whose stack reaches a script's top level (mh__imp_flags) */
    int8_t phase_hint; /* -1 = none */
    int64_t step_hint; /* INT64_MIN = none */
};

struct mh__inote {
    uint64_t time_ns;
    int device;
    int begin;   /* START */
    int is_step; /* name is "step N" */
    int64_t step;
    int range_kind; /* enum mh__range_kind of snapshot_isteps.c */
    uint32_t str; /* name, for ranges */
};

/* Optional trace-entry keys (meta "torch_entry_keys"): newer torch writes
 * them on every entry, with "N/A", "" and (0, 0) when there is nothing. */
#define MH__IK_COMPILE 1u
#define MH__IK_USER 2u
#define MH__IK_POOL 4u
#define MH__IK_FRAMES 8u

/* A device's entries: store positions [first, first + n), in order. */
struct mh__itrace {
    size_t first, n;
    uint64_t prev_ns; /* time of the last entry (synthetic times follow it) */
};

/* Converted trace entries in arrival order (snapshot_istore.c): in memory,
 * then in an unlinked temporary file. Zero it and set fd = -1 to start. */
struct mh__istore {
    struct mh__ient *mem; /* the entries, or the write buffer once spilled */
    size_t cap, nbuf;
    size_t total;
    int fd;
};
int mh__istore_add(struct mh__istore *s, const struct mh__ient *e);
int mh__istore_get(struct mh__istore *s, size_t first, size_t n, struct mh__ient *out);
int mh__istore_put(struct mh__istore *s, size_t first, size_t n, const struct mh__ient *in);
void mh__istore_free(struct mh__istore *s);

/* Handle kinds (pickle_value.h MH__PV_HANDLE) the streaming import keeps for
 * memoized frames and frame lists: u.i = id | in-backward bit << 32. */
#define MH__H_FRAME 1u
#define MH__H_STACK 2u
#define MH__H_BACKWARD (1ull << 32)
#define MH__H_PROGRAM (1ull << 33) /* see mh__imp_flags */

struct mh__imp {
    struct mh_writer *w;
    struct mh__import_info *info;
    char *err;
    size_t errlen;
    struct mh__iseg *segs;
    size_t nsegs, segcap;
    struct mh__iblk *blks;
    size_t nblks;
    struct mh__itrace *traces; /* per device index */
    int ndev, tracecap;
    int cur_dev;               /* device of the last entry stored */
    struct mh__istore store;
    int step_hints;            /* some entry carries memhist's step metadata */
    struct mh__inote *notes;
    size_t nnotes, notecap;
    unsigned entry_keys; /* MH__IK_* bits: optional keys torch wrote on every entry */
    uint64_t t_start;        /* time of the preexisting events */
    size_t seg_cur, blk_cur; /* per-device cursors into the sorted arrays */
    struct mh__progress progress;
    char what[300];          /* the piece of work being reported */
    uint64_t units, units_total, units_told;
    /* caches: tree node pointer -> interned id */
    struct mh__ptrmap *frame_ids, *stack_ids;
    int saw_frames;          /* some block or entry has a stack */
    uint32_t before_stack;   /* mh__imp_before_trace_stack's, once made */
};

/* Counts `n` units of the replay's progress and reports every so often. */
void mh__imp_progress(struct mh__imp *im, uint64_t n);
/* Sets the error message (printf style) and returns `code`. */
int mh__imp_fail(struct mh__imp *im, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The stack of a block live before the trace's first entry that the
 * snapshot gives no frames while it gives others some (the block was made
 * before torch's history recording started): one frame whose file is
 * "before recording" (src/format/FORMAT.md, "Frames"). 0 where the
 * snapshot has no frames at all or on error. */
uint32_t mh__imp_before_trace_stack(struct mh__imp *im);
/* Converts the snapshot dict (or a legacy list of segments). */
int mh__imp_convert(struct mh__imp *im, const struct mh__pv *root);
/* Schema helpers of snapshot_iconv.c used by snapshot_itrace.c. */
int mh__imp_convert_traces(struct mh__imp *im, const struct mh__pv *traces);
int mh__imp_convert_notes(struct mh__imp *im, const struct mh__pv *notes);
/* One element of `segments`, of `device_traces[dev]` and of
 * `external_annotations`: the whole-tree conversion calls them per element,
 * the streaming import (snapshot_istream.c) as the reader hands them on.
 * mh__imp_entry returns MH__PS_WHOLE when device dev's entries do not arrive
 * in one run. */
int mh__imp_segment(struct mh__imp *im, const struct mh__pv *s, uint64_t i);
int mh__imp_entry(struct mh__imp *im, int dev, uint64_t i, const struct mh__pv *d);
int mh__imp_note(struct mh__imp *im, const struct mh__pv *d);
/* A stack handle for a memoized frames list (converting it if needed), or
 * a frame handle for a frame dict already converted: 0, or 1 if none. */
int mh__imp_keep(struct mh__imp *im, const struct mh__pv *v, struct mh__pv *h);
/* Drops the caches keyed by tree nodes (the streaming reader frees them). */
void mh__imp_forget_nodes(struct mh__imp *im);
int mh__imp_frames(struct mh__imp *im, const struct mh__pv *list, const char *path, uint32_t *stack);
int mh__imp_visit(struct mh__imp *im, const struct mh__pv *v, const char *path);
int mh__imp_opt_u64(struct mh__imp *im, const struct mh__pv *d, const char *key, const char *path,
                    uint64_t dflt, uint64_t *out);
int mh__imp_pool(struct mh__imp *im, const struct mh__pv *v, const char *path, uint32_t pool[2]);
/* Backwards replay and event output (snapshot_ireplay.c), then the merged
 * forward events (snapshot_import.c). */
int mh__imp_emit(struct mh__imp *im);
int mh__imp_forward(struct mh__imp *im);
int mh__imp_put(struct mh__imp *im, const struct mh_event *ev);

/* Steps and phases from record_function annotations (snapshot_isteps.c),
 * with the torch bridge's semantics: step 0 opens at the first allocator
 * entry, Optimizer.step#... starts the optimizer phase and its end closes
 * the step (the next opens at the next entry, in the forward phase),
 * ProfilerStep#N ranges number the steps once seen, and an allocation made
 * inside autograd's backward starts the backward phase. */
enum mh__srange { MH__SR_OTHER = 0, MH__SR_OPTIMIZER, MH__SR_PROFILER };
struct mh__isteps {
    int on;            /* the snapshot has step annotations */
    int profiler_mode; /* ProfilerStep# seen: it numbers the steps */
    int begin_pending;
    int phase;
    int64_t step;
    struct mh_opt_steps opt; /* which Optimizer.step annotations end steps */
};
/* Kind of an annotation name; *step gets N of ProfilerStep#N. */
int mh__imp_range_kind(const char *name, size_t n, int64_t *step);
int mh__isteps_entry(struct mh__imp *im, struct mh__isteps *st, const struct mh__ient *e);
int mh__isteps_before_note(struct mh__imp *im, struct mh__isteps *st, const struct mh__inote *n);
int mh__isteps_note(struct mh__imp *im, struct mh__isteps *st, const struct mh__inote *n);
/* What an alloc's frames (a pickle list or stack handle) say, as
 * MH__H_BACKWARD (they run inside autograd's backward) and MH__H_PROGRAM
 * (they reach a script's top level, "<module>": the program's own thread,
 * never a hook autograd's thread runs); mh__imp_frame_flags: one frame
 * (dict or handle). */
uint64_t mh__imp_flags(const struct mh__pv *frames);
uint64_t mh__imp_frame_flags(const struct mh__pv *f);
/* The allocator_settings dict as the text of meta "torch_allocator_settings"
 * (snapshot_isettings.c) in *out (malloc'd; NULL if `dict` is not a dict).
 * Returns 0 or MH_ENOMEM / MH_ELIMIT. */
int mh__imp_settings_text(const struct mh__pv *dict, char **out);
/* Frees the arrays (not the writer). */
void mh__imp_free(struct mh__imp *im);

/* Live segments of one device by start address (snapshot_isegs.c); zero it
 * to start. Segments never overlap: an insert that would, or of an empty
 * segment, returns 1 and changes nothing. */
struct mh__isnode;
struct mh__isegset {
    struct mh__isnode *n;
    size_t cap, used, count;
    uint32_t root, free;
    uint64_t rng;
};
int mh__isegset_insert(struct mh__isegset *s, const struct mh__iseg *g); /* 0, 1, MH_ENOMEM */
/* The segment holding addr (valid until the next change), or NULL. */
struct mh__iseg *mh__isegset_find(struct mh__isegset *s, uint64_t addr);
void mh__isegset_remove(struct mh__isegset *s, uint64_t address); /* by start address */
/* A malloc'ed copy of the segments in address order, *n of them. */
int mh__isegset_sorted(const struct mh__isegset *s, struct mh__iseg **out, size_t *n);
void mh__isegset_free(struct mh__isegset *s);

/* Pointer -> uint32 map (open addressing). */
struct mh__ptrmap;
int mh__ptrmap_get(const struct mh__ptrmap *m, const void *key, uint32_t *val);
int mh__ptrmap_put(struct mh__ptrmap **m, const void *key, uint32_t val);
void mh__ptrmap_free(struct mh__ptrmap *m);

#endif
