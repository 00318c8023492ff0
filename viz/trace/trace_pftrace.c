/* trace_pftrace.c - the Perfetto protobuf trace (see trace_pf.h): the
 * sequence's first packets, packets and their timestamps, interned names,
 * the tracks and their descriptors, and the documents of one file or of
 * several. The events themselves are trace_pfevents.c's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "memhist/model.h"
#include "grow.h"
#include "trace_pf.h"
#include "utf8.h"

static const char *const category_names[PF_CAT_COUNT] = {
    NULL, "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver",
    "cpu_op", "step", "gpu_memory", "phase", "mark", "memhist"};
static const char *const arg_names[PF_ARG_COUNT] = {
    NULL, "addr", "bytes", "stream", "memory kind", "correlation", "stack", "request",
    "device_free", "allocated", "reserved", "largest free block",
    "largest free block on the stream", "reserved but unallocated", "step", "device", "cbid"};
static const char *const fixed_names[PF_NAME_STRINGS] = {
    NULL, "segment alloc", "segment free", "segment map", "segment unmap", "driver alloc",
    "driver free", "OOM", "kernel", "api call", "range", "mark", "Memset",
    "Memcpy", "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA", "Memcpy AtoH", "Memcpy AtoA",
    "Memcpy AtoD", "Memcpy DtoA", "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"};
static const char *const series_names[PF_SERIES_COUNT] = {"allocated", "reserved",
                                                          "outside allocator", "total"};

/* ---- strings, always well-formed UTF-8 (proto strings must be) ----------------- */
void mh__pf_string(struct mh__pb *p, uint32_t field, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (mh__utf8_clean(s ? s : "", n, 0)) {
        mh__pb_bytes(p, field, s, n);
        return;
    }
    char small[512], *buf = small;
    size_t need = mh__utf8_escape(s, n, 0, NULL, 0) + 1;
    if (need > sizeof small && !(buf = malloc(need))) {
        p->error = MH_ENOMEM;
        return;
    }
    mh__utf8_escape(s, n, 0, buf, need);
    mh__pb_string(p, field, buf);
    if (buf != small)
        free(buf);
}

/* ---- packets ------------------------------------------------------------------------- */
static void write_out(struct mh__pftrace *pf, struct mh__pb *p)
{
    mh__pb_end(p); /* Trace.packet */
    if (!p->error)
        mh__sink_write(pf->sink, p->buf, p->len);
    else if (p != &pf->pb && !pf->pb.error)
        pf->pb.error = p->error; /* kept where the pass reads it */
    mh__pb_reset(p);
}

void mh__pf_packet(struct mh__trace *t, uint64_t ns)
{
    struct mh__pftrace *pf = t->pf;
    struct mh__pb *p = &pf->pb;
    mh__pb_reset(p);
    mh__pb_begin(p, PF_TRACE_PACKET);
    uint64_t rel = ns > t->base_ns ? ns - t->base_ns : 0;
    if (rel >= pf->last_rel_ns) { /* a delta on the incremental clock */
        mh__pb_uint(p, PF_PKT_TIMESTAMP, rel - pf->last_rel_ns);
        pf->last_rel_ns = rel;
    } else { /* earlier than the previous packet: absolute, on the trace clock */
        mh__pb_uint(p, PF_PKT_TIMESTAMP, rel);
        mh__pb_uint(p, PF_PKT_TIMESTAMP_CLOCK_ID, PF_CLOCK_BOOTTIME);
    }
    mh__pb_uint(p, PF_PKT_SEQUENCE_ID, pf->seq);
    mh__pb_uint(p, PF_PKT_SEQUENCE_FLAGS, PF_SEQ_NEEDS_INCREMENTAL_STATE);
}

static void intern(struct mh__pb *p, uint32_t field, uint64_t iid, const char *name)
{
    mh__pb_begin(p, field);
    mh__pb_uint(p, PF_INTERNED_IID, iid);
    mh__pf_string(p, PF_INTERNED_NAME, name);
    mh__pb_end(p);
}

static int name_seen(const struct mh__pftrace *pf, uint32_t id)
{
    return id / 8 < pf->names_seen_len && (pf->names_seen[id / 8] >> (id % 8) & 1);
}

static void mark_seen(struct mh__pftrace *pf, uint32_t id)
{
    if (id / 8 >= pf->names_seen_len) {
        size_t n = pf->names_seen_len ? pf->names_seen_len : 64;
        while (n <= id / 8)
            n *= 2;
        uint8_t *b = realloc(pf->names_seen, n);
        if (!b) {
            pf->pb.error = MH_ENOMEM;
            return;
        }
        memset(b + pf->names_seen_len, 0, n - pf->names_seen_len);
        pf->names_seen = b;
        pf->names_seen_len = n;
    }
    pf->names_seen[id / 8] |= (uint8_t)(1u << (id % 8));
}

void mh__pf_packet_end(struct mh__trace *t)
{
    struct mh__pftrace *pf = t->pf;
    if (pf->pending_name) { /* the name is defined in the packet that first uses it */
        mh__pb_begin(&pf->pb, PF_PKT_INTERNED_DATA);
        intern(&pf->pb, PF_ID_EVENT_NAMES, PF_NAME_STRINGS + (uint64_t)pf->pending_name,
               mh_reader_string(t->r, pf->pending_name));
        mh__pb_end(&pf->pb);
        mark_seen(pf, pf->pending_name);
        pf->pending_name = 0;
    }
    write_out(pf, &pf->pb);
}

/* ---- TrackEvent fields ----------------------------------------------------------- */
void mh__pf_event_track(struct mh__trace *t, uint64_t uuid)
{
    if (uuid != t->pf->default_track)
        mh__pb_uint(&t->pf->pb, PF_TE_TRACK_UUID, uuid);
}

void mh__pf_name_string(struct mh__trace *t, uint32_t str, enum pf_name dflt)
{
    const char *s = str ? mh_reader_string(t->r, str) : NULL;
    if (!s || !*s) {
        mh__pb_uint(&t->pf->pb, PF_TE_NAME_IID, dflt);
        return;
    }
    if (!name_seen(t->pf, str))
        t->pf->pending_name = str;
    mh__pb_uint(&t->pf->pb, PF_TE_NAME_IID, PF_NAME_STRINGS + (uint64_t)str);
}

void mh__pf_arg_uint(struct mh__pb *p, enum pf_arg name, uint64_t v)
{
    mh__pb_begin(p, PF_TE_DEBUG_ANNOTATIONS);
    mh__pb_uint(p, PF_DA_NAME_IID, name);
    mh__pb_uint(p, PF_DA_UINT_VALUE, v);
    mh__pb_end(p);
}

void mh__pf_arg_int(struct mh__pb *p, enum pf_arg name, int64_t v)
{
    mh__pb_begin(p, PF_TE_DEBUG_ANNOTATIONS);
    mh__pb_uint(p, PF_DA_NAME_IID, name);
    mh__pb_int(p, PF_DA_INT_VALUE, v);
    mh__pb_end(p);
}

void mh__pf_arg_pointer(struct mh__pb *p, enum pf_arg name, uint64_t v)
{
    mh__pb_begin(p, PF_TE_DEBUG_ANNOTATIONS);
    mh__pb_uint(p, PF_DA_NAME_IID, name);
    mh__pb_uint(p, PF_DA_POINTER_VALUE, v);
    mh__pb_end(p);
}

void mh__pf_arg_string(struct mh__pb *p, enum pf_arg name, const char *s)
{
    mh__pb_begin(p, PF_TE_DEBUG_ANNOTATIONS);
    mh__pb_uint(p, PF_DA_NAME_IID, name);
    mh__pf_string(p, PF_DA_STRING_VALUE, s);
    mh__pb_end(p);
}

/* ---- tracks ---------------------------------------------------------------------- */
static const char *label_of(const struct mh__trace *t)
{
    return t->o.process_label ? t->o.process_label : "";
}

void mh__pf_gpu_name(const struct mh__trace *t, int device, char *buf, size_t len)
{
    const char *who = label_of(t);
    snprintf(buf, len, "%s%sGPU %d", who, *who ? " " : "", device);
}

static void gpu_descriptor(struct mh__trace *t, struct mh__pb *p, int device)
{
    char name[256], gpu[64];
    mh__pf_gpu_name(t, device, gpu, sizeof gpu);
    snprintf(name, sizeof name, "%s", gpu);
    struct mh_device_info info;
    for (size_t i = 0; i < mh_reader_device_count(t->r); i++)
        if (mh_reader_device(t->r, i, &info) == 0 && info.device == device && info.name &&
            *info.name)
            snprintf(name, sizeof name, "%s (%s)", gpu, info.name);
    mh__pf_string(p, PF_TD_NAME, name);
    mh__pb_uint(p, PF_TD_CHILD_ORDERING, PF_ORDERING_EXPLICIT);
}

/* "key=value; ..." of the file's metadata, the host track's description. */
static void meta_description(struct mh__trace *t, struct mh__pb *p, const char *path)
{
    char text[2048];
    size_t n = (size_t)snprintf(text, sizeof text, "memhist recording%s%s",
                                path ? " " : "", path ? path : "");
    const char *k, *v;
    for (size_t i = 0; mh_reader_meta_at(t->r, i, &k, &v) > 0 && n < sizeof text; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s%s=%s", i ? "; " : ": ", k, v);
    mh__pf_string(p, PF_TD_DESCRIPTION, text);
}

static void host_descriptor(struct mh__trace *t, struct mh__pb *p)
{
    const char *prog = mh_reader_meta(t->r, "program"), *who = label_of(t);
    char name[200];
    snprintf(name, sizeof name, "%s%s%s", who, *who ? " " : "", prog && *prog ? prog : "host");
    mh__pb_begin(p, PF_TD_PROCESS);
    mh__pb_int(p, PF_PROCESS_PID, t->host_pid);
    mh__pf_string(p, PF_PROCESS_NAME, name);
    mh__pf_string(p, PF_PROCESS_LABELS, "CPU");
    mh__pb_end(p);
    mh__pb_uint(p, PF_TD_CHILD_ORDERING, PF_ORDERING_EXPLICIT);
    meta_description(t, p, t->pf->path);
}

static void named_child(struct mh__pb *p, uint64_t parent, const char *name, int64_t rank)
{
    mh__pb_uint(p, PF_TD_PARENT_UUID, parent);
    mh__pf_string(p, PF_TD_NAME, name);
    mh__pb_int(p, PF_TD_SIBLING_ORDER_RANK, rank);
}

/* The parent of a memory track: its GPU's group, or the host for device -1. */
static uint64_t memory_parent(struct mh__trace *t, int device)
{
    return device >= 0 ? mh__pf_track(t, PF_TRACK_GPU, device, 0)
                       : mh__pf_track(t, PF_TRACK_HOST, -1, 0);
}

static int32_t rank_of(uint64_t v, int32_t base)
{
    return v < (uint64_t)(INT32_MAX - base) ? base + (int32_t)v : INT32_MAX;
}

static void counter_descriptor(struct mh__trace *t, struct mh__pb *p, int device, uint64_t series,
                               uint64_t parent)
{
    char gpu[64], name[128], share[96];
    mh__pf_gpu_name(t, device, gpu, sizeof gpu);
    snprintf(name, sizeof name, "%s %s", gpu, series_names[series % PF_SERIES_COUNT]);
    snprintf(share, sizeof share, "%s memory", gpu);
    named_child(p, parent, name, 1 + (int64_t)series);
    mh__pb_begin(p, PF_TD_COUNTER);
    mh__pb_uint(p, PF_COUNTER_UNIT, PF_UNIT_SIZE_BYTES);
    mh__pf_string(p, PF_COUNTER_Y_AXIS_SHARE_KEY, share);
    mh__pb_end(p);
}

/* The descriptor's fields; parents are described first (their uuids here). */
static void describe(struct mh__trace *t, struct mh__pb *p, const struct pf_track *k)
{
    char name[64];
    uint64_t parent;
    switch (k->kind) {
    case PF_TRACK_HOST: host_descriptor(t, p); break;
    case PF_TRACK_STEPS:
        named_child(p, mh__pf_track(t, PF_TRACK_HOST, -1, 0), "steps", 0);
        break;
    case PF_TRACK_THREAD:
        mh__pb_uint(p, PF_TD_PARENT_UUID, mh__pf_track(t, PF_TRACK_HOST, -1, 0));
        mh__pb_int(p, PF_TD_SIBLING_ORDER_RANK, rank_of(k->key, 1));
        mh__pb_begin(p, PF_TD_THREAD);
        mh__pb_int(p, PF_THREAD_PID, t->host_pid);
        mh__pb_int(p, PF_THREAD_TID, (int64_t)k->key);
        snprintf(name, sizeof name, "thread %" PRIu64, k->key);
        mh__pf_string(p, PF_THREAD_NAME, name);
        mh__pb_end(p);
        break;
    case PF_TRACK_API:
        named_child(p, mh__pf_track(t, PF_TRACK_THREAD, -1, k->key), "CUDA API", 0);
        break;
    case PF_TRACK_GPU: gpu_descriptor(t, p, k->device); break;
    case PF_TRACK_COUNTER:
        parent = mh__pf_track(t, PF_TRACK_GPU, k->device, 0);
        counter_descriptor(t, p, k->device, k->key, parent);
        break;
    case PF_TRACK_OOMS: named_child(p, memory_parent(t, k->device), "OOMs", 0); break;
    case PF_TRACK_SEGMENTS:
        named_child(p, memory_parent(t, k->device), "allocator segments", 5);
        break;
    case PF_TRACK_DRIVER: named_child(p, memory_parent(t, k->device), "driver memory", 6); break;
    case PF_TRACK_STREAM:
        snprintf(name, sizeof name, "stream %" PRIu64, k->key);
        named_child(p, mh__pf_track(t, PF_TRACK_GPU, k->device, 0), name, rank_of(k->key, 10));
        break;
    default: mh__pf_string(p, PF_TD_NAME, "job"); break;
    }
}

/* Writes a track's descriptor packet (its parents' first, each in its own buffer). */
static void write_descriptor(struct mh__trace *t, size_t i)
{
    struct mh__pftrace *pf = t->pf;
    struct mh__pb p;
    mh__pb_init(&p);
    mh__pb_begin(&p, PF_TRACE_PACKET);
    mh__pb_uint(&p, PF_PKT_SEQUENCE_ID, pf->seq);
    mh__pb_begin(&p, PF_PKT_TRACK_DESCRIPTOR);
    mh__pb_uint(&p, PF_TD_UUID, pf->tracks[i].uuid);
    struct pf_track k = pf->tracks[i];
    describe(t, &p, &k); /* may add parents to the table */
    mh__pb_end(&p);
    write_out(pf, &p);
    mh__pb_free(&p);
}

static long find_track(const struct mh__pftrace *pf, int kind, int device, uint64_t key)
{
    for (size_t i = 0; i < pf->ntracks; i++) {
        const struct pf_track *k = &pf->tracks[i];
        if (k->kind == kind && k->device == device && k->key == key)
            return (long)i;
    }
    return -1;
}

/* A new entry: uuids are small (short varints) and differ between files. */
static long add_track(struct mh__pftrace *pf, int kind, int device, uint64_t key)
{
    if (MH__GROW(pf->tracks, pf->ntracks, pf->tracks_cap, 32) < 0) {
        pf->pb.error = MH_ENOMEM;
        return -1;
    }
    uint64_t uuid = 1 + (uint64_t)pf->ntracks * MH__TRACE_MAX_FILES + pf->file_index;
    pf->tracks[pf->ntracks] = (struct pf_track){kind, device, key, uuid, 0};
    return (long)pf->ntracks++;
}

uint64_t mh__pf_track(struct mh__trace *t, int kind, int device, uint64_t key)
{
    struct mh__pftrace *pf = t->pf;
    long i = find_track(pf, kind, device, key);
    if (i < 0 && (i = add_track(pf, kind, device, key)) < 0)
        return 0;
    if (!pf->tracks[i].written) {
        pf->tracks[i].written = 1;
        write_descriptor(t, (size_t)i);
    }
    return pf->tracks[i].uuid;
}

/* ---- the sequence's start --------------------------------------------------------------- */
static void clock(struct mh__pb *p, unsigned id, uint64_t ts, int incremental)
{
    mh__pb_begin(p, PF_CS_CLOCKS);
    mh__pb_uint(p, PF_CLOCK_ID, id);
    mh__pb_uint(p, PF_CLOCK_TIMESTAMP, ts);
    if (incremental)
        mh__pb_uint(p, PF_CLOCK_IS_INCREMENTAL, 1);
    mh__pb_end(p);
}

/* Incremental state cleared, the defaults (the incremental clock; the track
 * most events are on: the first GPU's allocated counter) and the fixed
 * interned names; then the clock snapshot: the trace clock (BOOTTIME) counts
 * from the origin, REALTIME gives the origin's wall time, and the
 * incremental clock starts on the trace clock. */
static void first_packets(struct mh__trace *t, struct mh__pftrace *pf)
{
    struct mh__pb *p = &pf->pb;
    mh__pb_reset(p);
    mh__pb_begin(p, PF_TRACE_PACKET);
    mh__pb_uint(p, PF_PKT_SEQUENCE_ID, pf->seq);
    mh__pb_uint(p, PF_PKT_SEQUENCE_FLAGS, PF_SEQ_INCREMENTAL_STATE_CLEARED);
    mh__pb_begin(p, PF_PKT_DEFAULTS);
    mh__pb_uint(p, PF_DEFAULTS_CLOCK_ID, PF_CLOCK_INCREMENTAL);
    if (pf->default_track) {
        mh__pb_begin(p, PF_DEFAULTS_TRACK_EVENT);
        mh__pb_uint(p, PF_TE_DEFAULTS_TRACK_UUID, pf->default_track);
        mh__pb_end(p);
    }
    mh__pb_end(p);
    mh__pb_begin(p, PF_PKT_INTERNED_DATA);
    for (unsigned i = 1; i < PF_CAT_COUNT; i++)
        intern(p, PF_ID_EVENT_CATEGORIES, i, category_names[i]);
    for (unsigned i = 1; i < PF_NAME_STRINGS; i++)
        intern(p, PF_ID_EVENT_NAMES, i, fixed_names[i]);
    for (unsigned i = 1; i < PF_ARG_COUNT; i++)
        intern(p, PF_ID_DEBUG_ANNOTATION_NAMES, i, arg_names[i]);
    mh__pb_end(p);
    write_out(pf, p);
    /* each sequence's snapshot at a moment of its own (a file's number in
     * nanoseconds), so the global clocks' snapshots increase strictly */
    uint64_t at = pf->file_index;
    pf->last_rel_ns = at;
    mh__pb_begin(p, PF_TRACE_PACKET);
    mh__pb_uint(p, PF_PKT_SEQUENCE_ID, pf->seq);
    mh__pb_begin(p, PF_PKT_CLOCK_SNAPSHOT);
    clock(p, PF_CLOCK_BOOTTIME, at, 0);
    clock(p, PF_CLOCK_REALTIME, t->base_ns + at, 0);
    clock(p, PF_CLOCK_INCREMENTAL, at, 1);
    mh__pb_uint(p, PF_CS_PRIMARY_TRACE_CLOCK, PF_CLOCK_BOOTTIME);
    mh__pb_end(p);
    write_out(pf, p);
}

static int pf_begin(struct mh__trace *t, struct mh__pftrace *pf, const struct mh_reader *r,
                    struct mh_model *m)
{
    t->r = r;
    t->m = m;
    t->host_pid = mh__trace_host_pid(r);
    pf->seq = t->o.file_index + 1;
    pf->file_index = t->o.file_index % MH__TRACE_MAX_FILES;
    pf->step.step = -1;
    uint64_t devices = t->plan.counter_devices;
    if (devices) { /* the first track: the first GPU's allocated counter */
        int d = 0;
        while (!(devices >> d & 1))
            d++;
        long i = add_track(pf, PF_TRACK_COUNTER, d, PF_SERIES_ALLOCATED);
        pf->default_track = i >= 0 ? pf->tracks[i].uuid : 0;
    }
    first_packets(t, pf);
    mh__pf_track(t, PF_TRACK_HOST, -1, 0);
    return pf->pb.error;
}

/* ---- the documents ---------------------------------------------------------------------- */
struct pf_pass {
    struct mh__trace *t;
    struct mh__pftrace *pf;
    int job_start;
};

static int pass_begin(void *user, struct mh__session *s)
{
    struct pf_pass *pp = user;
    int rc = pf_begin(pp->t, pp->pf, mh__session_reader(s), mh__session_model(s));
    if (rc == 0 && pp->job_start)
        mh__pf_job_start(pp->t);
    return rc;
}

static int pass_event(void *user, struct mh__session *s, const struct mh_event *ev,
                      const struct mh_apply_result *res)
{
    struct pf_pass *pp = user;
    (void)s;
    (void)res;
    int rc = mh__pf_event(pp->t, ev);
    return rc < 0 ? rc : pp->pf->pb.error;
}

static void pf_free(struct mh__pftrace *pf)
{
    for (size_t i = 0; i < pf->nthreads; i++)
        free(pf->threads[i].stack);
    free(pf->threads);
    free(pf->tracks);
    free(pf->names_seen);
    mh__pb_free(&pf->pb);
}

/* One file's sequence (the job's start first when asked). */
static int pf_file(struct mh__trace *t, struct mh__session *ses, struct mh__sink *s, int job_start)
{
    struct mh__pftrace pf;
    memset(&pf, 0, sizeof pf);
    mh__pb_init(&pf.pb);
    pf.sink = s;
    pf.path = mh__session_path(ses);
    t->pf = &pf;
    struct pf_pass pp = {t, &pf, job_start};
    const struct mh__observer o = {"trace-perfetto", &pp, pass_begin, pass_event, NULL};
    int rc = mh__session_pass(ses, &o);
    if (rc == 0) {
        mh__pf_events_end(t);
        rc = pf.pb.error;
    }
    memset(t->counters, 0, sizeof t->counters);
    pf_free(&pf);
    t->pf = NULL;
    t->m = NULL;
    return rc < 0 ? rc : s->error;
}

int mh__trace_write_perfetto(struct mh__trace *t, struct mh__session *ses, struct mh__sink *s)
{
    return pf_file(t, ses, s, 0);
}

int mh__trace_write_files_perfetto(struct mh__trace *const *t, struct mh__session *const *ses,
                                   size_t n, struct mh__sink *s)
{
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = pf_file(t[i], ses[i], s, i == 0);
    return rc;
}
