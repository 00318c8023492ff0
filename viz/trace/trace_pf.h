/* trace_pf.h - state shared by the files of the Perfetto protobuf trace
 * (trace_pftrace.c: packets, interning, tracks and the document;
 * trace_pfevents.c: one .memhist event at a time). Internal to viz/trace.
 *
 * The file is a `Trace` message whose packets are written one at a time
 * (pb_wire.h), so memory stays the same whatever the run's length. Field
 * numbers are those of Perfetto's published protos (protos/perfetto/trace/),
 * named below after their messages. Each .memhist file is one packet
 * sequence (TracePacket.trusted_packet_sequence_id = its number + 1) whose
 * first packet clears the incremental state and carries the sequence's
 * defaults, the clock snapshot and the fixed interned names; every later
 * packet that relies on that state says so (SEQ_NEEDS_INCREMENTAL_STATE).
 *
 * Time: packet timestamps count nanoseconds from the trace's origin (the
 * JSON's baseTimeNanoseconds) on the trace clock (BOOTTIME); the clock
 * snapshot also gives that origin on REALTIME, so viewers can show wall
 * time. Packets are written on a sequence-scoped incremental clock (each
 * timestamp a delta from the previous one on it), except those whose time
 * lies before the previous one (slices written when they end, device
 * records that arrive late), which carry their absolute time and the trace
 * clock's id. */
#ifndef MH_VIZ_TRACE_PF_H
#define MH_VIZ_TRACE_PF_H

#include <stdint.h>

#include "pb_wire.h"
#include "trace_int.h"

/* ---- field numbers ------------------------------------------------------------ */
enum {
    PF_TRACE_PACKET = 1, /* Trace.packet */
    /* TracePacket */
    PF_PKT_CLOCK_SNAPSHOT = 6,
    PF_PKT_TIMESTAMP = 8,
    PF_PKT_SEQUENCE_ID = 10, /* trusted_packet_sequence_id */
    PF_PKT_TRACK_EVENT = 11,
    PF_PKT_INTERNED_DATA = 12,
    PF_PKT_SEQUENCE_FLAGS = 13,
    PF_PKT_TIMESTAMP_CLOCK_ID = 58,
    PF_PKT_DEFAULTS = 59,    /* trace_packet_defaults */
    PF_PKT_TRACK_DESCRIPTOR = 60,
    /* TracePacket.SequenceFlags */
    PF_SEQ_INCREMENTAL_STATE_CLEARED = 1,
    PF_SEQ_NEEDS_INCREMENTAL_STATE = 2,
    /* TracePacketDefaults, TrackEventDefaults */
    PF_DEFAULTS_TRACK_EVENT = 11, /* TracePacketDefaults.track_event_defaults */
    PF_DEFAULTS_CLOCK_ID = 58,    /* TracePacketDefaults.timestamp_clock_id */
    PF_TE_DEFAULTS_TRACK_UUID = 11,
    /* ClockSnapshot, ClockSnapshot.Clock */
    PF_CS_CLOCKS = 1,
    PF_CS_PRIMARY_TRACE_CLOCK = 2,
    PF_CLOCK_ID = 1,
    PF_CLOCK_TIMESTAMP = 2,
    PF_CLOCK_IS_INCREMENTAL = 3,
    PF_CLOCK_REALTIME = 1,     /* BuiltinClock */
    PF_CLOCK_BOOTTIME = 6,
    PF_CLOCK_INCREMENTAL = 64, /* the first sequence-scoped clock id */
    /* TrackDescriptor */
    PF_TD_UUID = 1,
    PF_TD_NAME = 2,
    PF_TD_PROCESS = 3,
    PF_TD_THREAD = 4,
    PF_TD_PARENT_UUID = 5,
    PF_TD_COUNTER = 8,
    PF_TD_CHILD_ORDERING = 11,
    PF_TD_SIBLING_ORDER_RANK = 12,
    PF_TD_DESCRIPTION = 14,
    PF_ORDERING_EXPLICIT = 3, /* TrackDescriptor.ChildTracksOrdering */
    /* ProcessDescriptor, ThreadDescriptor */
    PF_PROCESS_PID = 1,
    PF_PROCESS_NAME = 6,
    PF_PROCESS_LABELS = 8,
    PF_THREAD_PID = 1,
    PF_THREAD_TID = 2,
    PF_THREAD_NAME = 5,
    /* CounterDescriptor */
    PF_COUNTER_UNIT = 3,
    PF_COUNTER_Y_AXIS_SHARE_KEY = 7,
    PF_UNIT_SIZE_BYTES = 3,
    /* TrackEvent */
    PF_TE_CATEGORY_IIDS = 3,
    PF_TE_DEBUG_ANNOTATIONS = 4,
    PF_TE_TYPE = 9,
    PF_TE_NAME_IID = 10,
    PF_TE_TRACK_UUID = 11,
    PF_TE_NAME = 23,
    PF_TE_COUNTER_VALUE = 30,
    PF_TE_FLOW_IDS = 47,
    PF_TE_TERMINATING_FLOW_IDS = 48,
    PF_TYPE_SLICE_BEGIN = 1, /* TrackEvent.Type */
    PF_TYPE_SLICE_END = 2,
    PF_TYPE_INSTANT = 3,
    PF_TYPE_COUNTER = 4,
    /* DebugAnnotation */
    PF_DA_NAME_IID = 1,
    PF_DA_UINT_VALUE = 3,
    PF_DA_INT_VALUE = 4,
    PF_DA_STRING_VALUE = 6,
    PF_DA_POINTER_VALUE = 7,
    /* InternedData; EventCategory, EventName, DebugAnnotationName */
    PF_ID_EVENT_CATEGORIES = 1,
    PF_ID_EVENT_NAMES = 2,
    PF_ID_DEBUG_ANNOTATION_NAMES = 3,
    PF_INTERNED_IID = 1,
    PF_INTERNED_NAME = 2,
};

/* ---- interned ids ----------------------------------------------------------------- */
/* Categories, debug annotation names and fixed event names are interned in
 * the sequence's first packet; a recording's strings (kernel, op and API
 * names) get iid PF_NAME_STRINGS + their string id when first used. */
enum pf_category {
    PF_CAT_KERNEL = 1, PF_CAT_MEMCPY, PF_CAT_MEMSET, PF_CAT_CUDA_RUNTIME, PF_CAT_CUDA_DRIVER,
    PF_CAT_CPU_OP, PF_CAT_STEP, PF_CAT_GPU_MEMORY, PF_CAT_PHASE, PF_CAT_MARK, PF_CAT_MEMHIST,
    PF_CAT_COUNT
};
enum pf_arg {
    PF_ARG_ADDR = 1, PF_ARG_BYTES, PF_ARG_STREAM, PF_ARG_MEMORY_KIND, PF_ARG_CORRELATION,
    PF_ARG_STACK, PF_ARG_REQUEST, PF_ARG_DEVICE_FREE, PF_ARG_ALLOCATED, PF_ARG_RESERVED,
    PF_ARG_LARGEST_FREE, PF_ARG_LARGEST_FREE_STREAM, PF_ARG_RESERVED_UNALLOCATED, PF_ARG_STEP,
    PF_ARG_DEVICE, PF_ARG_CBID, PF_ARG_COUNT
};
enum pf_name {
    PF_NAME_SEGMENT_ALLOC = 1, PF_NAME_SEGMENT_FREE, PF_NAME_SEGMENT_MAP,
    PF_NAME_SEGMENT_UNMAP, PF_NAME_DRIVER_ALLOC, PF_NAME_DRIVER_FREE, PF_NAME_OOM,
    PF_NAME_KERNEL, PF_NAME_API_CALL, PF_NAME_RANGE, PF_NAME_MARK, PF_NAME_MEMSET,
    PF_NAME_MEMCPY, /* then the 11 copy kinds, as trace_events.c names them */
    PF_NAME_STRINGS = PF_NAME_MEMCPY + 11
};

/* ---- tracks ------------------------------------------------------------------------- */
enum pf_track_kind {
    PF_TRACK_HOST,     /* the recorded process */
    PF_TRACK_STEPS,    /* its steps, phases and marks */
    PF_TRACK_THREAD,   /* a thread's op ranges (key: thread) */
    PF_TRACK_API,      /* a thread's CUDA API calls, under the thread (key: thread) */
    PF_TRACK_GPU,      /* a GPU's group (device) */
    PF_TRACK_COUNTER,  /* a GPU memory counter (device, key: series) */
    PF_TRACK_OOMS,     /* OOMs (device; -1: the host's) */
    PF_TRACK_SEGMENTS, /* allocator segments (device; -1: the host's) */
    PF_TRACK_DRIVER,   /* driver-level allocations (device; -1: the host's) */
    PF_TRACK_STREAM,   /* a GPU stream's device activity (device, key: stream) */
    PF_TRACK_JOB,      /* the job's start, with several files */
};
enum { PF_SERIES_ALLOCATED, PF_SERIES_RESERVED, PF_SERIES_OUTSIDE, PF_SERIES_TOTAL,
       PF_SERIES_COUNT };

struct pf_track {
    int kind, device;
    uint64_t key;
    uint64_t uuid;
    int written; /* its descriptor is in the output */
};

/* A slice opened at its begin (op range or step), written as a begin event
 * once it is known to overlap the window, clipped to it. */
struct pf_open {
    uint32_t str;    /* range name (string id) */
    int64_t step;    /* the step, for the steps track */
    uint64_t begin_ns;
    int begun;       /* its begin event is written */
};

struct pf_thread {
    uint32_t thread;
    struct pf_open *stack;
    size_t len, cap;
};

struct mh__pftrace {
    struct mh__pb pb;
    struct mh__sink *sink;
    const char *path;        /* the recording (borrowed) */
    uint32_t seq;            /* trusted_packet_sequence_id */
    unsigned file_index;     /* < MH__TRACE_MAX_FILES: part of every uuid */
    uint64_t last_rel_ns;    /* the incremental clock's value */
    uint64_t default_track;  /* TrackEventDefaults.track_uuid */
    struct pf_track *tracks;
    size_t ntracks, tracks_cap;
    uint8_t *names_seen;     /* bit per string id: its EventName is interned */
    size_t names_seen_len;
    uint32_t pending_name;   /* string id to intern in the packet being written, 0 = none */
    struct pf_thread *threads;
    size_t nthreads, threads_cap;
    struct pf_open step;     /* the open step (step < 0: none) */
    /* counter values last written per device and series */
    uint64_t written_value[MH__TRACE_MAX_DEVICES][PF_SERIES_COUNT];
    uint8_t have_written[MH__TRACE_MAX_DEVICES];
};

/* trace_pftrace.c */
int mh__pf_begin_sequence(struct mh__trace *t, struct mh__pftrace *pf);
/* Starts an event's packet at absolute time ns (before the origin: at it). */
void mh__pf_packet(struct mh__trace *t, uint64_t ns);
/* Ends the packet (adding the pending interned name) and writes it out. */
void mh__pf_packet_end(struct mh__trace *t);
/* The uuid of a track, its descriptor written first if it is new. */
uint64_t mh__pf_track(struct mh__trace *t, int kind, int device, uint64_t key);
/* TrackEvent fields. */
void mh__pf_event_track(struct mh__trace *t, uint64_t uuid);
void mh__pf_name_string(struct mh__trace *t, uint32_t str, enum pf_name dflt);
void mh__pf_string(struct mh__pb *p, uint32_t field, const char *s);
void mh__pf_arg_uint(struct mh__pb *p, enum pf_arg name, uint64_t v);
void mh__pf_arg_int(struct mh__pb *p, enum pf_arg name, int64_t v);
void mh__pf_arg_pointer(struct mh__pb *p, enum pf_arg name, uint64_t v);
void mh__pf_arg_string(struct mh__pb *p, enum pf_arg name, const char *s);
/* The names of the GPU's tracks ("rank 1 GPU 0"). */
void mh__pf_gpu_name(const struct mh__trace *t, int device, char *buf, size_t len);

/* trace_pfevents.c */
int mh__pf_event(struct mh__trace *t, const struct mh_event *ev);
/* Writes what is still open or pending at the end of the pass. */
void mh__pf_events_end(struct mh__trace *t);
void mh__pf_job_start(struct mh__trace *t);

#endif
