/* tables.c - the columns of memhist's tables (see tables.h): the one list
 * of names and types, which docs/export.md documents and a test compares
 * with it. A column's position is its enum in tables.h. */
#include <string.h>

#include "categories.h"
#include "tables.h"

const char *const mh__kind_names[] = {
#define MH__X_KIND_NAME(name, value, text) [value] = text,
    MH_EVENT_KIND_LIST(MH__X_KIND_NAME)
#undef MH__X_KIND_NAME
};
const char *const mh__phase_names[] = {"none", "forward", "backward", "optimizer"};
const char *const mh__cat_names[] = {"parameter", "gradient", "optimizer_state", "activation",
                                     "temporary", "input",    "unknown"};
const char *const mh__part_names[] = {"setup", "step", "tail"};
const char *const mh__state_names[] = {"inactive", "allocated", "pending_free"};

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define RUN_RANK                                                                                   \
    {"run", MH__COL_NAMES, 0, NULL, 0},                                                             \
    {                                                                                              \
        "rank", MH__COL_I32, 1, NULL, 0                                                             \
    }
#define I64(name)                                                                                  \
    {                                                                                              \
        name, MH__COL_I64, 0, NULL, 0                                                               \
    }
#define I64N(name)                                                                                 \
    {                                                                                              \
        name, MH__COL_I64, 1, NULL, 0                                                               \
    }
#define NAMES(name, list, nullable)                                                                \
    {                                                                                              \
        name, MH__COL_NAMES, nullable, list, N(list)                                                \
    }

static const struct mh__col_spec runs[] = {
    RUN_RANK,
    {"path", MH__COL_UTF8, 0, NULL, 0},
    {"source", MH__COL_UTF8, 1, NULL, 0},
    {"host", MH__COL_UTF8, 1, NULL, 0},
    I64N("pid"),
    {"world_size", MH__COL_I32, 1, NULL, 0},
    {"local_rank", MH__COL_I32, 1, NULL, 0},
    {"rank_process", MH__COL_UTF8, 1, NULL, 0},
    {"torch_version", MH__COL_UTF8, 1, NULL, 0},
    {"library_version", MH__COL_UTF8, 1, NULL, 0},
    {"format_version", MH__COL_I32, 0, NULL, 0},
    {"alloc_conf", MH__COL_UTF8, 1, NULL, 0},
    I64N("start_ns"),
    I64N("first_time_ns"),
    I64N("last_time_ns"),
    I64("events"),
    I64("dropped"),
    {"complete", MH__COL_BOOL, 0, NULL, 0},
    {"damaged", MH__COL_BOOL, 0, NULL, 0},
    {"devices", MH__COL_I32, 0, NULL, 0},
    I64N("peak_allocated"),
    I64N("peak_reserved"),
    {"schema_version", MH__COL_I32, 0, NULL, 0},
    {"metadata", MH__COL_MAP, 0, NULL, 0},
};

static const struct mh__col_spec events[] = {
    RUN_RANK,
    I64("event_index"),
    I64("time_ns"),
    {"kind", MH__COL_NAMES, 0, mh__kind_names, MH_EV_KIND_COUNT},
    {"device", MH__COL_I16, 1, NULL, 0},
    I64N("address"),
    I64N("size"),
    I64N("block_size"),
    I64N("stream"),
    I64N("pool"),
    {"stack_id", MH__COL_I32, 1, NULL, 0},
    {"module", MH__COL_SID, 1, NULL, 0},
    {"name", MH__COL_SID, 1, NULL, 0},
    I64N("step"),
    {"phase", MH__COL_NAMES, 1, mh__phase_names, MH_PHASE_COUNT},
    {"category", MH__COL_NAMES, 1, mh__cat_names, MH__CAT_COUNT},
    I64N("free_index"),
    I64N("thread"),
    I64N("duration_ns"),
    I64N("allocated"),
    I64N("reserved"),
    {"preexisting", MH__COL_BOOL, 0, NULL, 0},
};

static const struct mh__col_spec steps[] = {
    RUN_RANK,
    {"device", MH__COL_I16, 0, NULL, 0},
    NAMES("part", mh__part_names, 0),
    I64("step"),
    I64("begin_ns"),
    I64("end_ns"),
    I64("peak_allocated"),
    I64("peak_reserved"),
    I64("end_allocated"),
    I64("end_reserved"),
    {"fragmentation", MH__COL_F64, 0, NULL, 0},
    I64("allocated_at_reserved_peak"),
    I64("inactive_split_at_reserved_peak"),
    I64("largest_free_at_reserved_peak"),
    I64("segments"),
    I64("segment_allocs"),
    I64("segment_frees"),
    I64("allocs"),
    I64("frees"),
    I64("retries"),
    I64("ooms"),
};

static const struct mh__col_spec stacks[] = {
    RUN_RANK,
    {"stack_id", MH__COL_I32, 0, NULL, 0},
    {"depth", MH__COL_I32, 0, NULL, 0},
    {"frame_id", MH__COL_I32, 0, NULL, 0},
};

static const struct mh__col_spec frames[] = {
    RUN_RANK,
    {"frame_id", MH__COL_I32, 0, NULL, 0},
    {"file", MH__COL_UTF8, 1, NULL, 0},
    {"function", MH__COL_UTF8, 1, NULL, 0},
    {"line", MH__COL_I32, 0, NULL, 0},
};

static const struct mh__col_spec segments[] = {
    RUN_RANK,
    {"device", MH__COL_I16, 0, NULL, 0},
    I64("peak_event_index"),
    I64("segment_address"),
    I64("segment_size"),
    I64("stream"),
    I64N("pool"),
    {"small_pool", MH__COL_BOOL, 0, NULL, 0},
    {"expandable", MH__COL_BOOL, 0, NULL, 0},
    {"segment_stack_id", MH__COL_I32, 1, NULL, 0},
    I64("address"),
    I64("size"),
    I64N("requested"),
    NAMES("state", mh__state_names, 0),
    {"stack_id", MH__COL_I32, 1, NULL, 0},
    {"module", MH__COL_SID, 1, NULL, 0},
    I64N("alloc_step"),
    NAMES("alloc_phase", mh__phase_names, 1),
    I64N("alloc_time_ns"),
    NAMES("category", mh__cat_names, 1),
};

_Static_assert(N(runs) == MH__R_NCOLS, "runs columns");
_Static_assert(N(events) == MH__E_NCOLS, "events columns");
_Static_assert(N(steps) == MH__S_NCOLS, "steps columns");
_Static_assert(N(stacks) == MH__K_NCOLS, "stacks columns");
_Static_assert(N(frames) == MH__F_NCOLS, "frames columns");
_Static_assert(N(segments) == MH__G_NCOLS, "segments_at_peak columns");

const struct mh__table_spec mh__tables[MH__T_COUNT] = {
    [MH__T_RUNS] = {"runs", runs, N(runs)},
    [MH__T_EVENTS] = {"events", events, N(events)},
    [MH__T_STEPS] = {"steps", steps, N(steps)},
    [MH__T_STACKS] = {"stacks", stacks, N(stacks)},
    [MH__T_FRAMES] = {"frames", frames, N(frames)},
    [MH__T_SEGMENTS] = {"segments_at_peak", segments, N(segments)},
};

int mh__table_find(const char *name)
{
    for (int i = 0; i < MH__T_COUNT; i++)
        if (name && strcmp(mh__tables[i].name, name) == 0)
            return i;
    return -1;
}
