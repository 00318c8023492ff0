/* tables.h - memhist's tables as Arrow sees them: the columns of each
 * (tables.c, documented in docs/export.md) and their positions, which the
 * producers of src/export fill by. Internal to src/export. */
#ifndef MH_EXPORT_TABLES_H
#define MH_EXPORT_TABLES_H

#include "arrow_batch.h"

enum mh_table_id {
    MH_T_RUNS,
    MH_T_EVENTS,
    MH_T_STEPS,
    MH_T_STACKS,
    MH_T_FRAMES,
    MH_T_SEGMENTS,
    MH_T_COUNT
};

extern const struct mh_table_spec mh__tables[MH_T_COUNT];

/* The table named `name`, or -1. */
int mh__table_find(const char *name);

/* Every table begins with the file's run and rank. */
enum { MH_C_RUN, MH_C_RANK };

enum mh_events_col {
    MH_E_EVENT_INDEX = 2,
    MH_E_TIME,
    MH_E_KIND,
    MH_E_DEVICE,
    MH_E_ADDRESS,
    MH_E_SIZE,
    MH_E_BLOCK_SIZE,
    MH_E_STREAM,
    MH_E_POOL,
    MH_E_STACK,
    MH_E_MODULE,
    MH_E_NAME,
    MH_E_STEP,
    MH_E_PHASE,
    MH_E_CATEGORY,
    MH_E_FREE_INDEX,
    MH_E_THREAD,
    MH_E_DURATION,
    MH_E_ALLOCATED,
    MH_E_RESERVED,
    MH_E_PREEXISTING,
    MH_E_NCOLS
};

enum mh_runs_col {
    MH_R_PATH = 2,
    MH_R_SOURCE,
    MH_R_HOST,
    MH_R_PID,
    MH_R_WORLD_SIZE,
    MH_R_LOCAL_RANK,
    MH_R_RANK_PROCESS,
    MH_R_TORCH_VERSION,
    MH_R_LIBRARY_VERSION,
    MH_R_FORMAT_VERSION,
    MH_R_ALLOC_CONF,
    MH_R_START_NS,
    MH_R_FIRST_NS,
    MH_R_LAST_NS,
    MH_R_EVENTS,
    MH_R_DROPPED,
    MH_R_COMPLETE,
    MH_R_DAMAGED,
    MH_R_DEVICES,
    MH_R_PEAK_ALLOCATED,
    MH_R_PEAK_RESERVED,
    MH_R_SCHEMA_VERSION,
    MH_R_METADATA,
    MH_R_NCOLS
};

enum mh_steps_col {
    MH_S_DEVICE = 2,
    MH_S_PART,
    MH_S_STEP,
    MH_S_BEGIN,
    MH_S_END,
    MH_S_PEAK_ALLOCATED,
    MH_S_PEAK_RESERVED,
    MH_S_END_ALLOCATED,
    MH_S_END_RESERVED,
    MH_S_FRAGMENTATION,
    MH_S_ALLOC_AT_RPEAK,
    MH_S_INACTIVE_AT_RPEAK,
    MH_S_LARGEST_AT_RPEAK,
    MH_S_SEGMENTS,
    MH_S_SEGMENT_ALLOCS,
    MH_S_SEGMENT_FREES,
    MH_S_ALLOCS,
    MH_S_FREES,
    MH_S_RETRIES,
    MH_S_OOMS,
    MH_S_NCOLS
};

enum mh_stacks_col { MH_K_STACK = 2, MH_K_DEPTH, MH_K_FRAME, MH_K_NCOLS };

enum mh_frames_col { MH_F_FRAME = 2, MH_F_FILE, MH_F_FUNCTION, MH_F_LINE, MH_F_NCOLS };

enum mh_segments_col {
    MH_G_DEVICE = 2,
    MH_G_PEAK_INDEX,
    MH_G_SEG_ADDRESS,
    MH_G_SEG_SIZE,
    MH_G_STREAM,
    MH_G_POOL,
    MH_G_SMALL_POOL,
    MH_G_EXPANDABLE,
    MH_G_SEG_STACK,
    MH_G_ADDRESS,
    MH_G_SIZE,
    MH_G_REQUESTED,
    MH_G_STATE,
    MH_G_STACK,
    MH_G_MODULE,
    MH_G_ALLOC_STEP,
    MH_G_ALLOC_PHASE,
    MH_G_ALLOC_TIME,
    MH_G_CATEGORY,
    MH_G_NCOLS
};

/* The dictionaries of the name columns. */
extern const char *const mh__kind_names[];  /* MH_EV_KIND_COUNT, by kind */
extern const char *const mh__phase_names[]; /* MH_PHASE_COUNT; index 0 is never used */
extern const char *const mh__cat_names[];   /* MH_CAT_COUNT */
extern const char *const mh__part_names[];  /* "setup", "step", "tail" */
extern const char *const mh__state_names[]; /* enum mh_block_state */

/* Packs a memory pool id into one int64 (its first word high). */
static inline int64_t mh__pool_id(const uint32_t pool[2])
{
    return (int64_t)(((uint64_t)pool[0] << 32) | pool[1]);
}

#endif
