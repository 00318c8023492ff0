/* memhist/event.h - the event model shared by every part of memhist.
 *
 * One flat struct describes every event: caching-allocator actions (with the
 * same meaning as PyTorch's TraceEntry actions), driver-level allocations seen
 * by CUPTI, training steps and phases, named marks and ranges, kernels, memory
 * copies and runtime API calls. The recorder stores it, the .memhist format
 * encodes it, the reader returns it and the model replays it. Fields that do
 * not apply to a kind are zero. */
#ifndef MEMHIST_EVENT_H
#define MEMHIST_EVENT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Event kinds. Numbers are written to files: never renumber, only append. */
#define MH_EVENT_KIND_LIST(X)                                                                      \
    /* caching allocator (meaning of addr/size as in PyTorch's TraceEntry) */                      \
    X(MH_EV_ALLOC, 0, "alloc")                   /* addr=block, size=requested */                  \
    X(MH_EV_FREE_REQUESTED, 1, "free_requested") /* addr=block, size=requested */                  \
    X(MH_EV_FREE_COMPLETED, 2, "free_completed") /* addr=block, size=requested */                  \
    X(MH_EV_SEGMENT_ALLOC, 3, "segment_alloc")   /* addr=segment, size=segment */                  \
    X(MH_EV_SEGMENT_FREE, 4, "segment_free")     /* addr=segment, size=segment */                  \
    X(MH_EV_SEGMENT_MAP, 5, "segment_map")       /* expandable: mapped range */                    \
    X(MH_EV_SEGMENT_UNMAP, 6, "segment_unmap")   /* expandable: unmapped range */                  \
    X(MH_EV_OOM, 7, "oom")                       /* addr=device free, size=rounded */              \
    X(MH_EV_SNAPSHOT, 8, "snapshot")             /* size=active bytes */                           \
    /* driver level (CUPTI); aux = enum mh_memory_kind */                                          \
    X(MH_EV_DRIVER_ALLOC, 9, "driver_alloc")                                                       \
    X(MH_EV_DRIVER_FREE, 10, "driver_free")                                                        \
    /* training structure; aux = step number or enum mh_phase */                                   \
    X(MH_EV_STEP_BEGIN, 11, "step_begin")                                                          \
    X(MH_EV_STEP_END, 12, "step_end")                                                              \
    X(MH_EV_PHASE, 13, "phase")             /* a phase starts; aux=mh_phase */                     \
    X(MH_EV_MARK, 14, "mark")               /* str=name */                                         \
    X(MH_EV_RANGE_BEGIN, 15, "range_begin") /* str=name, thread */                                 \
    X(MH_EV_RANGE_END, 16, "range_end")     /* str=name, thread */                                 \
    /* device activity; time_ns=start, dur_ns=duration */                                          \
    X(MH_EV_KERNEL, 17, "kernel")     /* str=name, correlation */                                  \
    X(MH_EV_MEMCPY, 18, "memcpy")     /* size=bytes, aux=copy kind */                              \
    X(MH_EV_MEMSET, 19, "memset")     /* size=bytes */                                             \
    X(MH_EV_API_CALL, 20, "api_call") /* str=name, thread, correlation */                          \
    /* program structure (torch module hooks); thread = the thread it applies to */                \
    X(MH_EV_SCOPE_ENTER, 21, "scope_enter") /* str=module path, aux=mh_phase */                    \
    X(MH_EV_SCOPE_EXIT, 22, "scope_exit")   /* str=module path, aux=mh_phase */                    \
    X(MH_EV_TAG, 23, "tag")                 /* addr=tensor data, aux=mh_tensor_role, str=name */

enum mh_event_kind {
#define MH_X_KIND(name, value, text) name = value,
    MH_EVENT_KIND_LIST(MH_X_KIND)
#undef MH_X_KIND
        MH_EV_KIND_COUNT
};

/* Memory kinds of driver-level allocations (values as CUPTI's memory kinds). */
enum mh_memory_kind {
    MH_MEM_UNKNOWN = 0,
    MH_MEM_PAGEABLE = 1,
    MH_MEM_PINNED = 2,
    MH_MEM_DEVICE = 3,
    MH_MEM_ARRAY = 4,
    MH_MEM_MANAGED = 5,
    MH_MEM_DEVICE_STATIC = 6,
    MH_MEM_MANAGED_STATIC = 7,
    MH_MEM_VMM = 8 /* cuMemCreate / cuMemMap */
};

/* Training phases carried by MH_EV_PHASE. */
enum mh_phase {
    MH_PHASE_NONE = 0,
    MH_PHASE_FORWARD = 1,
    MH_PHASE_BACKWARD = 2,
    MH_PHASE_OPTIMIZER = 3,
    MH_PHASE_COUNT
};

/* What torch says a tensor is, carried by MH_EV_TAG for the live block at
 * `addr` (set from module and optimizer hooks, never from the allocator). */
enum mh_tensor_role {
    MH_ROLE_NONE = 0,
    MH_ROLE_PARAMETER = 1,
    MH_ROLE_BUFFER = 2,
    MH_ROLE_GRADIENT = 3,
    MH_ROLE_OPTIMIZER_STATE = 4,
    /* returned by a module's forward (the tag's name: the module's path);
     * not a category: the block stays an activation */
    MH_ROLE_OUTPUT = 5,
    MH_ROLE_COUNT
};

/* Event flags. */
enum mh_event_flag {
    /* present before recording began (imported snapshots carry initial state) */
    MH_EVF_PREEXISTING = 1u << 0,
    /* the pool of a segment event is known: small (set) or large (clear) */
    MH_EVF_POOL_KNOWN = 1u << 1,
    MH_EVF_POOL_SMALL = 1u << 2,
    /* the segment is an expandable segment */
    MH_EVF_EXPANDABLE = 1u << 3,
    /* `ctx` holds an opaque context token that the recorder's stack resolver
     * turns into `stack` on the drain thread (never on the emitting thread) */
    MH_EVF_CTX_TOKEN = 1u << 4,
    /* segment_alloc / segment_map: `aux` is the segment's own stack as the
     * allocator's state lists it (0 = none) where it differs from the
     * event's stack (imported snapshots keep both) */
    MH_EVF_SEGMENT_STACK = 1u << 5,
    /* step and phase events an importer inferred from the source's
     * annotations (Optimizer.step#, ProfilerStep#); exporters leave them out */
    MH_EVF_DERIVED = 1u << 6,
    /* step_end: ends a step on `device` only (an Optimizer.step over
     * parameters on that device); without it a step marker is for every
     * device, whatever its device field says */
    MH_EVF_DEVICE_STEP = 1u << 7
};

/* One event. 88 bytes, plain data, copied by value. Strings, frames and stacks
 * are ids interned in the recorder (0 means none). */
struct mh_event {
    uint64_t time_ns; /* ns since the Unix epoch (CLOCK_REALTIME) */
    uint64_t addr;    /* address; OOM: free device bytes reported by CUDA */
    uint64_t size;    /* bytes, see the kind list */
    uint64_t stream;  /* raw stream handle (allocator) or CUDA stream id */
    union {
        uint64_t dur_ns;     /* duration for kernels, copies, API calls */
        uint64_t block_size; /* alloc: the block's real size when known (an
                              * imported snapshot's block), 0 = the rounded size */
    };
    uint64_t ctx;         /* MH_EVF_CTX_TOKEN: opaque token for the resolver */
    uint32_t pool[2];     /* memory pool id; {0,0} is the default pool */
    uint32_t stack;       /* interned stack id */
    uint32_t str;         /* interned string: user metadata or name */
    uint32_t str2;        /* interned string: compile context (allocator events) */
    uint32_t thread;      /* OS thread id */
    uint32_t correlation; /* CUPTI correlation id */
    uint32_t aux;         /* step number, memory kind, phase or copy kind */
    int16_t device;       /* device index, -1 for host */
    uint8_t kind;         /* enum mh_event_kind */
    uint8_t flags;        /* enum mh_event_flag bits */
};

/* Name of an event kind as used in files and outputs ("alloc", ...);
 * "unknown" for values outside the list. */
const char *mh_event_kind_name(unsigned kind);
/* Kind for a name, or -1. */
int mh_event_kind_from_name(const char *name);
/* Name of a phase ("forward", "backward", "optimizer", "none"). */
const char *mh_phase_name(unsigned phase);
/* Name of a memory kind ("device", "pinned", ...). */
const char *mh_memory_kind_name(unsigned kind);

#ifdef __cplusplus
}
#endif
#endif
