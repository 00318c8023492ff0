/* tables.h - memhist's tables as Arrow sees them: the columns of each
 * (tables.c, documented in docs/export.md) and their positions, which the
 * producers of src/export fill by. Internal to src/export. */
#ifndef MH_EXPORT_TABLES_H
#define MH_EXPORT_TABLES_H

#include "arrow_batch.h"

enum mh__table_id {
    MH__T_RUNS,
    MH__T_EVENTS,
    MH__T_STEPS,
    MH__T_STACKS,
    MH__T_FRAMES,
    MH__T_SEGMENTS,
    MH__T_COUNT
};

extern const struct mh__table_spec mh__tables[MH__T_COUNT];

/* The table named `name`, or -1. */
int mh__table_find(const char *name);

/* Every table begins with the file's run and rank. */
enum { MH__C_RUN, MH__C_RANK };

enum mh__events_col {
    MH__E_EVENT_INDEX = 2,
    MH__E_TIME,
    MH__E_KIND,
    MH__E_DEVICE,
    MH__E_ADDRESS,
    MH__E_SIZE,
    MH__E_BLOCK_SIZE,
    MH__E_STREAM,
    MH__E_POOL,
    MH__E_STACK,
    MH__E_MODULE,
    MH__E_NAME,
    MH__E_STEP,
    MH__E_PHASE,
    MH__E_CATEGORY,
    MH__E_FREE_INDEX,
    MH__E_THREAD,
    MH__E_DURATION,
    MH__E_ALLOCATED,
    MH__E_RESERVED,
    MH__E_PREEXISTING,
    MH__E_NCOLS
};

enum mh__runs_col {
    MH__R_PATH = 2,
    MH__R_SOURCE,
    MH__R_HOST,
    MH__R_PID,
    MH__R_WORLD_SIZE,
    MH__R_LOCAL_RANK,
    MH__R_RANK_PROCESS,
    MH__R_TORCH_VERSION,
    MH__R_LIBRARY_VERSION,
    MH__R_FORMAT_VERSION,
    MH__R_ALLOC_CONF,
    MH__R_START_NS,
    MH__R_FIRST_NS,
    MH__R_LAST_NS,
    MH__R_EVENTS,
    MH__R_DROPPED,
    MH__R_COMPLETE,
    MH__R_DAMAGED,
    MH__R_DEVICES,
    MH__R_PEAK_ALLOCATED,
    MH__R_PEAK_RESERVED,
    MH__R_SCHEMA_VERSION,
    MH__R_METADATA,
    MH__R_NCOLS
};

enum mh__steps_col {
    MH__S_DEVICE = 2,
    MH__S_PART,
    MH__S_STEP,
    MH__S_BEGIN,
    MH__S_END,
    MH__S_PEAK_ALLOCATED,
    MH__S_PEAK_RESERVED,
    MH__S_END_ALLOCATED,
    MH__S_END_RESERVED,
    MH__S_FRAGMENTATION,
    MH__S_ALLOC_AT_RPEAK,
    MH__S_INACTIVE_AT_RPEAK,
    MH__S_LARGEST_AT_RPEAK,
    MH__S_SEGMENTS,
    MH__S_SEGMENT_ALLOCS,
    MH__S_SEGMENT_FREES,
    MH__S_ALLOCS,
    MH__S_FREES,
    MH__S_RETRIES,
    MH__S_OOMS,
    MH__S_NCOLS
};

enum mh__stacks_col { MH__K_STACK = 2, MH__K_DEPTH, MH__K_FRAME, MH__K_NCOLS };

enum mh__frames_col { MH__F_FRAME = 2, MH__F_FILE, MH__F_FUNCTION, MH__F_LINE, MH__F_NCOLS };

enum mh__segments_col {
    MH__G_DEVICE = 2,
    MH__G_PEAK_INDEX,
    MH__G_SEG_ADDRESS,
    MH__G_SEG_SIZE,
    MH__G_STREAM,
    MH__G_POOL,
    MH__G_SMALL_POOL,
    MH__G_EXPANDABLE,
    MH__G_SEG_STACK,
    MH__G_ADDRESS,
    MH__G_SIZE,
    MH__G_REQUESTED,
    MH__G_STATE,
    MH__G_STACK,
    MH__G_MODULE,
    MH__G_ALLOC_STEP,
    MH__G_ALLOC_PHASE,
    MH__G_ALLOC_TIME,
    MH__G_CATEGORY,
    MH__G_NCOLS
};

/* The dictionaries of the name columns. */
extern const char *const mh__kind_names[];  /* MH_EV_KIND_COUNT, by kind */
extern const char *const mh__phase_names[]; /* MH_PHASE_COUNT; index 0 is never used */
extern const char *const mh__cat_names[];   /* MH__CAT_COUNT */
extern const char *const mh__part_names[];  /* "setup", "step", "tail" */
extern const char *const mh__state_names[]; /* enum mh_block_state */

/* Packs a memory pool id into one int64 (its first word high). */
static inline int64_t mh__pool_id(const uint32_t pool[2])
{
    return (int64_t)(((uint64_t)pool[0] << 32) | pool[1]);
}

#endif
