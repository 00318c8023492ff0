/* cupti.c - the CUPTI source: driver-level memory, kernels, copies and the
 * API calls that issued them, fed into a recorder (see memhist/cupti.h).
 *
 * Data flow: CUPTI fills activity buffers we hand it (calloc'd, zeroed, with
 * the ZEROED_OUT attribute so CUPTI never zeroes them on application threads)
 * and returns them through buffer_completed, which only queues the buffer
 * (O(1), one short mutex). A background thread calls cuptiActivityFlushAll(0)
 * periodically, walks queued buffers with the pure walker (cupti_walk.c),
 * interns kernel names while the buffer is alive, calls mh_emit, then zeroes
 * the buffer and keeps it for reuse. Virtual-memory calls (cuMemMap & co.),
 * which no activity record reports with addresses, come from a Callback-API
 * subscriber and are emitted directly on the calling thread (they are rare).
 *
 * Owns: the dlopen'ed libcupti handle and function table, the buffers, the
 * queue, the worker thread and the VMM handle table. One instance per process
 * because CUPTI's registrations are process-wide. No CUPTI or CUDA header is
 * included: the few types and constants needed are declared below from the
 * CUPTI 13.0 ABI (reference/cupti.md). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memhist/cupti.h"
#include "memhist/error.h"
#include "memhist/recorder.h"
#include "cupti_walk.h"

/* ---- the slice of the CUPTI ABI used here -------------------------------- */
typedef int cupti_result;
typedef void *cupti_subscriber;
typedef void (*cupti_req_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*cupti_done_fn)(void *ctx, uint32_t stream, uint8_t *buffer, size_t size,
                              size_t valid);
typedef void (*cupti_cb_fn)(void *user, int domain, uint32_t cbid, const void *data);

enum {
    CUPTI_OK = 0,
    CUPTI_MULTIPLE_SUBSCRIBERS = 39,
    CUPTI_ATTR_ZEROED_OUT = 5,
    CUPTI_ATTR_PER_THREAD = 9,
    CUPTI_THREAD_ID_SYSTEM = 1,
    CUPTI_FLUSH_FORCED = 1,
    CUPTI_DOMAIN_DRIVER = 1,
    CUPTI_SITE_EXIT = 1
};
/* CUpti_CallbackData offsets, and the cuMem* parameter structs. */
enum { CBD_SITE = 0, CBD_PARAMS = 16, CBD_RETVAL = 24, CBD_CORR = 64 };
enum {
    CBID_ADDR_RESERVE = 547, CBID_ADDR_FREE = 548, CBID_CREATE = 549, CBID_RELEASE = 550,
    CBID_MAP = 551, CBID_UNMAP = 552, CBID_SET_ACCESS = 553
};

struct cupti_api {
    cupti_result (*get_version)(uint32_t *);
    cupti_result (*get_result_string)(cupti_result, const char **);
    cupti_result (*set_attribute)(int, size_t *, void *);
    cupti_result (*register_callbacks)(cupti_req_fn, cupti_done_fn);
    cupti_result (*enable)(int);
    cupti_result (*disable)(int);
    cupti_result (*flush_all)(uint32_t);
    cupti_result (*dropped)(void *, uint32_t, size_t *);
    cupti_result (*set_thread_id_type)(int);
    cupti_result (*subscribe)(cupti_subscriber *, cupti_cb_fn, void *);
    cupti_result (*unsubscribe)(cupti_subscriber);
    cupti_result (*enable_callback)(uint32_t, cupti_subscriber, int, uint32_t);
    cupti_result (*enable_runtime_api)(uint32_t, uint8_t); /* optional */
    cupti_result (*enable_driver_api)(uint32_t, uint8_t);  /* optional */
};

/* ---- state ------------------------------------------------------------------ */
struct queued {
    uint8_t *buf;
    size_t valid;
};

#define NAME_CACHE 1024
struct name_slot {
    uint64_t hash;
    char *text;
    uint32_t id;
};

#define VMM_SLOTS 4096
struct vmm_slot {
    uint64_t key; /* 0 = empty, UINT64_MAX = deleted */
    int16_t device;
};

static struct {
    pthread_mutex_t start_lock; /* start/stop */
    pthread_mutex_t lock;       /* buffers and queue; never held across CUPTI calls */
    pthread_cond_t wake;
    pthread_mutex_t parse_lock; /* one parser at a time (worker or flush) */
    pthread_mutex_t vmm_lock;
    int active, stopping;
    struct mh_recorder *rec;
    void *lib;
    struct cupti_api api;
    cupti_subscriber sub;
    pthread_t worker;
    size_t buf_bytes, max_bytes, allocated;
    uint32_t interval_ms;
    struct queued *queue; /* ring of completed buffers */
    size_t qcap, qhead, qlen;
    uint8_t **free_bufs;
    size_t nfree;
    struct name_slot names[NAME_CACHE];
    struct vmm_slot handles[VMM_SLOTS], maps[VMM_SLOTS];
    int16_t last_vmm_device;
    struct mh_cupti_counts counts;
} g = {.start_lock = PTHREAD_MUTEX_INITIALIZER,
       .lock = PTHREAD_MUTEX_INITIALIZER,
       .wake = PTHREAD_COND_INITIALIZER,
       .parse_lock = PTHREAD_MUTEX_INITIALIZER,
       .vmm_lock = PTHREAD_MUTEX_INITIALIZER};

#define COUNT_ADD(field, n) __atomic_fetch_add(&g.counts.field, (n), __ATOMIC_RELAXED)

/* ---- buffers: handed to CUPTI, queued when complete, recycled ---------------- */
static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    uint8_t *b = NULL;
    int fresh = 0;
    pthread_mutex_lock(&g.lock);
    if (g.nfree > 0)
        b = g.free_bufs[--g.nfree];
    else if (g.allocated + g.buf_bytes <= g.max_bytes) {
        g.allocated += g.buf_bytes;
        fresh = 1;
    }
    pthread_mutex_unlock(&g.lock);
    if (fresh) {
        /* calloc of a large block maps fresh zero pages; glibc aligns to 16 */
        b = calloc(1, g.buf_bytes);
        if (b && ((uintptr_t)b & 7u)) {
            free(b);
            b = NULL;
        }
        if (!b) {
            pthread_mutex_lock(&g.lock);
            g.allocated -= g.buf_bytes;
            pthread_mutex_unlock(&g.lock);
        }
    }
    if (!b)
        COUNT_ADD(buffers_declined, 1); /* CUPTI drops records (safe in 13.0) */
    *buffer = b;
    *size = b ? g.buf_bytes : 0;
    *max_records = 0;
}

static void buffer_completed(void *ctx, uint32_t stream, uint8_t *buffer, size_t size,
                             size_t valid)
{
    if (!buffer)
        return;
    pthread_mutex_lock(&g.lock);
    if (g.qlen < g.qcap) {
        g.queue[(g.qhead + g.qlen) % g.qcap] = (struct queued){buffer, valid};
        g.qlen++;
        buffer = NULL;
        pthread_cond_signal(&g.wake);
    }
    pthread_mutex_unlock(&g.lock);
    if (buffer) { /* cannot happen: the ring holds every buffer we allocate */
        free(buffer);
        pthread_mutex_lock(&g.lock);
        g.allocated -= g.buf_bytes;
        pthread_mutex_unlock(&g.lock);
    }
}

static int pop_buffer(struct queued *out)
{
    int got = 0;
    pthread_mutex_lock(&g.lock);
    if (g.qlen > 0) {
        *out = g.queue[g.qhead];
        g.qhead = (g.qhead + 1) % g.qcap;
        g.qlen--;
        got = 1;
    }
    pthread_mutex_unlock(&g.lock);
    return got;
}

static void recycle_buffer(uint8_t *buf, size_t valid)
{
    memset(buf, 0, valid < g.buf_bytes ? valid : g.buf_bytes);
    pthread_mutex_lock(&g.lock);
    if (g.nfree < g.qcap) {
        g.free_bufs[g.nfree++] = buf;
        buf = NULL;
    } else {
        g.allocated -= g.buf_bytes;
    }
    pthread_mutex_unlock(&g.lock);
    free(buf);
}

/* ---- parsing (parse_lock held) ------------------------------------------------ */
static uint64_t name_hash(const char *s, size_t *len)
{
    uint64_t h = 1469598103934665603ull;
    size_t n = 0;
    for (; s[n] && n < 4096; n++)
        h = (h ^ (unsigned char)s[n]) * 1099511628211ull;
    *len = n;
    return h;
}

/* Interns a name through a small cache, so repeated kernels cost no lock. */
static uint32_t intern_name(const char *s)
{
    size_t len;
    uint64_t h = name_hash(s, &len);
    struct name_slot *slot = &g.names[h % NAME_CACHE];
    if (slot->text && slot->hash == h && strncmp(slot->text, s, len) == 0 && !slot->text[len])
        return slot->id;
    int64_t id = mh_intern_string(g.rec, s, len);
    if (id <= 0)
        return 0;
    char *copy = malloc(len + 1);
    if (copy) {
        memcpy(copy, s, len);
        copy[len] = '\0';
        free(slot->text);
        *slot = (struct name_slot){h, copy, (uint32_t)id};
    }
    return (uint32_t)id;
}

static int emit_item(void *user, const struct mh__cupti_item *it)
{
    struct mh_event ev = it->ev;
    if (it->name)
        ev.str = intern_name(it->name);
    if (mh_emit(g.rec, &ev) == 0)
        COUNT_ADD(events, 1);
    else
        COUNT_ADD(emit_dropped, 1);
    return 0;
}

static void parse_pending(void)
{
    pthread_mutex_lock(&g.parse_lock);
    struct queued q;
    while (pop_buffer(&q)) {
        struct mh__cupti_walk_stats st;
        int rc = mh__cupti_walk(q.buf, q.valid, emit_item, NULL, &st);
        COUNT_ADD(buffers, 1);
        COUNT_ADD(records, st.records);
        COUNT_ADD(no_timestamp, st.no_timestamp);
        if (rc < 0)
            COUNT_ADD(bad_buffers, 1);
        recycle_buffer(q.buf, q.valid);
    }
    pthread_mutex_unlock(&g.parse_lock);
}

/* ---- virtual memory through the Callback API ------------------------------- */
static uint64_t vmm_key(uint64_t k)
{
    return k == 0 || k == UINT64_MAX ? k ^ 0x5a5a : k;
}

static void vmm_put(struct vmm_slot *tab, uint64_t key, int16_t device)
{
    key = vmm_key(key);
    for (size_t i = 0, h = (size_t)(key * 0x9e3779b97f4a7c15ull >> 52); i < VMM_SLOTS; i++) {
        struct vmm_slot *s = &tab[(h + i) % VMM_SLOTS];
        if (s->key == 0 || s->key == UINT64_MAX || s->key == key) {
            *s = (struct vmm_slot){key, device};
            return;
        }
    }
}

/* Removes `key` and returns its device, or `dflt` when unknown. */
static int16_t vmm_get(struct vmm_slot *tab, uint64_t key, int take, int16_t dflt)
{
    key = vmm_key(key);
    for (size_t i = 0, h = (size_t)(key * 0x9e3779b97f4a7c15ull >> 52); i < VMM_SLOTS; i++) {
        struct vmm_slot *s = &tab[(h + i) % VMM_SLOTS];
        if (s->key == 0)
            break;
        if (s->key == key) {
            int16_t d = s->device;
            if (take)
                s->key = UINT64_MAX;
            return d;
        }
    }
    return dflt;
}

static uint64_t rd_u64(const void *p, size_t off)
{
    uint64_t v;
    memcpy(&v, (const char *)p + off, sizeof v);
    return v;
}

/* The device of a cuMemCreate from its CUmemAllocationProp (location @8). */
static int16_t prop_device(const void *prop)
{
    int type, id;
    if (!prop)
        return 0;
    memcpy(&type, (const char *)prop + 8, sizeof type);
    memcpy(&id, (const char *)prop + 12, sizeof id);
    return type == 1 ? (int16_t)id : 0; /* CU_MEM_LOCATION_TYPE_DEVICE */
}

/* Fills `ev` for one successful VMM call; `params` is the cuMem*_params. */
static void vmm_event(uint32_t cbid, const void *params, struct mh_event *ev)
{
    ev->aux = cbid;
    ev->device = -1;
    pthread_mutex_lock(&g.vmm_lock);
    switch (cbid) {
    case CBID_CREATE: {
        const uint64_t *handle = (const uint64_t *)rd_u64(params, 0);
        ev->addr = handle ? *handle : 0;
        ev->size = rd_u64(params, 8);
        g.last_vmm_device = prop_device((const void *)rd_u64(params, 16));
        vmm_put(g.handles, ev->addr, g.last_vmm_device);
        break;
    }
    case CBID_RELEASE:
        ev->addr = rd_u64(params, 0);
        vmm_get(g.handles, ev->addr, 1, 0);
        break;
    case CBID_MAP:
        ev->kind = MH_EV_DRIVER_ALLOC;
        ev->aux = MH_MEM_VMM;
        ev->addr = rd_u64(params, 0);
        ev->size = rd_u64(params, 8);
        ev->device = vmm_get(g.handles, rd_u64(params, 24), 0, g.last_vmm_device);
        vmm_put(g.maps, ev->addr, ev->device);
        break;
    case CBID_UNMAP:
        ev->kind = MH_EV_DRIVER_FREE;
        ev->aux = MH_MEM_VMM;
        ev->addr = rd_u64(params, 0);
        ev->size = rd_u64(params, 8);
        ev->device = vmm_get(g.maps, ev->addr, 1, g.last_vmm_device);
        break;
    case CBID_ADDR_RESERVE: {
        const uint64_t *ptr = (const uint64_t *)rd_u64(params, 0);
        ev->addr = ptr ? *ptr : 0;
        ev->size = rd_u64(params, 8);
        break;
    }
    default: /* address free, set access: {ptr, size, ...} */
        ev->addr = rd_u64(params, 0);
        ev->size = rd_u64(params, 8);
        break;
    }
    pthread_mutex_unlock(&g.vmm_lock);
}

static const char *vmm_name(uint32_t cbid)
{
    return cbid == CBID_SET_ACCESS ? "cuMemSetAccess" : mh__cupti_api_name(MH__CUPTI_KIND_DRIVER, cbid);
}

static void vmm_callback(void *user, int domain, uint32_t cbid, const void *data)
{
    int site, ret;
    memcpy(&site, (const char *)data + CBD_SITE, sizeof site);
    if (domain != CUPTI_DOMAIN_DRIVER || site != CUPTI_SITE_EXIT || !g.rec)
        return;
    const void *params = (const void *)rd_u64(data, CBD_PARAMS);
    const int *retp = (const int *)rd_u64(data, CBD_RETVAL);
    memcpy(&ret, retp ? retp : &(int){1}, sizeof ret);
    if (!params || ret != 0 || cbid < CBID_ADDR_RESERVE || cbid > CBID_SET_ACCESS)
        return;
    struct mh_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = MH_EV_API_CALL;
    vmm_event(cbid, params, &ev);
    ev.time_ns = mh_clock_ns();
    ev.thread = mh_thread_id();
    memcpy(&ev.correlation, (const char *)data + CBD_CORR, sizeof ev.correlation);
    if (ev.kind == MH_EV_API_CALL) {
        int64_t id = mh_intern_string(g.rec, vmm_name(cbid), strlen(vmm_name(cbid)));
        ev.str = id > 0 ? (uint32_t)id : 0;
    }
    COUNT_ADD(vmm_calls, 1);
    if (mh_emit(g.rec, &ev) == 0)
        COUNT_ADD(events, 1);
    else
        COUNT_ADD(emit_dropped, 1);
}

/* ---- the background thread --------------------------------------------------- */
static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void *worker_main(void *arg)
{
    uint64_t next_flush = now_ms() + g.interval_ms;
    for (;;) {
        pthread_mutex_lock(&g.lock);
        while (!g.stopping && g.qlen == 0 && now_ms() < next_flush) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 50 * 1000000L; /* re-check the flush timer often */
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&g.wake, &g.lock, &until);
        }
        int stopping = g.stopping;
        pthread_mutex_unlock(&g.lock);
        if (stopping)
            break;
        if (now_ms() >= next_flush) {
            g.api.flush_all(0); /* only complete buffers; never under our lock */
            next_flush = now_ms() + g.interval_ms;
        }
        parse_pending();
    }
    return NULL;
}

/* ---- loading libcupti ---------------------------------------------------------- */
static const char *result_text(cupti_result rc)
{
    const char *s = NULL;
    if (g.api.get_result_string && g.api.get_result_string(rc, &s) == CUPTI_OK && s)
        return s;
    return "CUPTI error";
}

static int load_symbols(void *lib)
{
#define MH__SYM(field, name)                                                                \
    do {                                                                                   \
        *(void **)&g.api.field = dlsym(lib, name);                                          \
        if (!g.api.field)                                                                  \
            return -1;                                                                     \
    } while (0)
    MH__SYM(get_version, "cuptiGetVersion");
    MH__SYM(get_result_string, "cuptiGetResultString");
    MH__SYM(set_attribute, "cuptiActivitySetAttribute");
    MH__SYM(register_callbacks, "cuptiActivityRegisterCallbacks");
    MH__SYM(enable, "cuptiActivityEnable");
    MH__SYM(disable, "cuptiActivityDisable");
    MH__SYM(flush_all, "cuptiActivityFlushAll");
    MH__SYM(dropped, "cuptiActivityGetNumDroppedRecords");
    MH__SYM(set_thread_id_type, "cuptiSetThreadIdType");
    MH__SYM(subscribe, "cuptiSubscribe");
    MH__SYM(unsubscribe, "cuptiUnsubscribe");
    MH__SYM(enable_callback, "cuptiEnableCallback");
#undef MH__SYM
    *(void **)&g.api.enable_runtime_api = dlsym(lib, "cuptiActivityEnableRuntimeApi");
    *(void **)&g.api.enable_driver_api = dlsym(lib, "cuptiActivityEnableDriverApi");
    return 0;
}

/* Loads libcupti and checks for a driver; on failure writes why. */
static int load_cupti(const char *path, char *why, size_t whylen)
{
    const char *env = getenv("MEMHIST_CUPTI_LIB");
    const char *cands[] = {path ? path : (env && *env ? env : "libcupti.so.13"),
                           path || (env && *env) ? NULL : "libcupti.so"};
    const char *err = "no library name";
    for (size_t i = 0; i < 2 && !g.lib && cands[i]; i++) {
        g.lib = dlopen(cands[i], RTLD_NOW | RTLD_LOCAL);
        if (!g.lib)
            err = dlerror();
    }
    if (!g.lib) {
        snprintf(why, whylen, "cannot load libcupti: %s", err ? err : "dlopen failed");
        return MH_EUNAVAILABLE;
    }
    if (load_symbols(g.lib) != 0) {
        snprintf(why, whylen, "libcupti lacks a needed function (CUPTI too old)");
        return MH_EUNAVAILABLE;
    }
    /* libcupti loads libcuda lazily; without a driver every enable fails */
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (!cuda)
        cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!cuda) {
        const char *e = dlerror();
        snprintf(why, whylen, "no NVIDIA driver (libcuda.so.1: %s)", e ? e : "not found");
        return MH_EUNAVAILABLE;
    }
    return 0;
}

/* ---- start / flush / stop ----------------------------------------------------- */
static const int device_kinds[] = {MH__CUPTI_KIND_MEMCPY, MH__CUPTI_KIND_MEMSET};

static int enable_kind(int kind, const char *label, char *why, size_t whylen)
{
    cupti_result rc = g.api.enable(kind);
    if (rc != CUPTI_OK)
        snprintf(why, whylen, "cuptiActivityEnable(%s) failed: %s (%d)", label, result_text(rc),
                 rc);
    return rc == CUPTI_OK ? 0 : MH_EUNAVAILABLE;
}

/* Launch, copy and allocation calls only, cbid by cbid; the blanket RUNTIME
 * and DRIVER kinds when this CUPTI cannot select (the walker filters). */
static void enable_api_records(void)
{
    static const uint32_t kinds[] = {MH__CUPTI_KIND_RUNTIME, MH__CUPTI_KIND_DRIVER};
    for (size_t k = 0; k < 2; k++) {
        cupti_result (*sel)(uint32_t, uint8_t) =
            k == 0 ? g.api.enable_runtime_api : g.api.enable_driver_api;
        if (!sel) {
            g.api.enable((int)kinds[k]);
            continue;
        }
        const uint32_t *cbids;
        size_t n = mh__cupti_api_cbids(kinds[k], &cbids);
        for (size_t i = 0; i < n; i++)
            if (kinds[k] != MH__CUPTI_KIND_DRIVER || cbids[i] < CBID_ADDR_RESERVE ||
                cbids[i] > CBID_SET_ACCESS) /* VMM calls come from the subscriber */
                sel(cbids[i], 1);
    }
}

static int subscribe_vmm(char *why, size_t whylen)
{
    cupti_result rc = g.api.subscribe(&g.sub, vmm_callback, NULL);
    if (rc == CUPTI_MULTIPLE_SUBSCRIBERS) {
        snprintf(why, whylen,
                 "another CUPTI client is active (torch.profiler, Nsight or a debugger): %s (%d)",
                 result_text(rc), rc);
        g.sub = NULL;
        return MH_EUNAVAILABLE;
    }
    if (rc != CUPTI_OK) {
        snprintf(why, whylen, "cuptiSubscribe failed: %s (%d)", result_text(rc), rc);
        g.sub = NULL;
        return MH_EUNAVAILABLE;
    }
    for (uint32_t cbid = CBID_ADDR_RESERVE; cbid <= CBID_SET_ACCESS; cbid++)
        g.api.enable_callback(1, g.sub, CUPTI_DOMAIN_DRIVER, cbid);
    return 0;
}

static int alloc_state(const struct mh_cupti_opts *o)
{
    g.buf_bytes = o->buffer_bytes ? o->buffer_bytes : (size_t)8 << 20;
    if (g.buf_bytes < ((size_t)1 << 20))
        g.buf_bytes = (size_t)1 << 20;
    if (g.buf_bytes > ((size_t)64 << 20))
        g.buf_bytes = (size_t)64 << 20;
    g.buf_bytes &= ~(size_t)7;
    g.max_bytes = o->max_buffer_bytes ? o->max_buffer_bytes : (size_t)256 << 20;
    if (g.max_bytes < g.buf_bytes)
        g.max_bytes = g.buf_bytes;
    g.interval_ms = o->flush_interval_ms ? o->flush_interval_ms : 500;
    g.qcap = g.max_bytes / g.buf_bytes + 1;
    g.queue = calloc(g.qcap, sizeof *g.queue);
    g.free_bufs = calloc(g.qcap, sizeof *g.free_bufs);
    g.qhead = g.qlen = g.nfree = g.allocated = 0;
    g.stopping = 0;
    memset(&g.counts, 0, sizeof g.counts);
    return g.queue && g.free_bufs ? 0 : MH_ENOMEM;
}

static void free_state(void)
{
    pthread_mutex_lock(&g.lock);
    for (size_t i = 0; i < g.nfree; i++)
        free(g.free_bufs[i]);
    free(g.free_bufs);
    free(g.queue);
    g.free_bufs = NULL;
    g.queue = NULL;
    g.qcap = g.qlen = g.nfree = 0;
    pthread_mutex_unlock(&g.lock);
    for (size_t i = 0; i < NAME_CACHE; i++) {
        free(g.names[i].text);
        g.names[i].text = NULL;
    }
}

static void disable_all(void)
{
    static const int kinds[] = {MH__CUPTI_KIND_CONCURRENT_KERNEL, MH__CUPTI_KIND_MEMORY2,
                                MH__CUPTI_KIND_MEMORY_POOL,       MH__CUPTI_KIND_MEMCPY,
                                MH__CUPTI_KIND_MEMSET,            MH__CUPTI_KIND_RUNTIME,
                                MH__CUPTI_KIND_DRIVER};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        g.api.disable(kinds[i]);
    if (g.sub) {
        g.api.unsubscribe(g.sub);
        g.sub = NULL;
    }
}

/* Everything after loading: attributes, callbacks, enables. */
static int enable_collection(const struct mh_cupti_opts *o, char *why, size_t whylen)
{
    int rc;
    if (!o->no_vmm && (rc = subscribe_vmm(why, whylen)) != 0)
        return rc;
    uint8_t one = 1;
    size_t sz = sizeof one;
    g.api.set_attribute(CUPTI_ATTR_ZEROED_OUT, &sz, &one);
    sz = sizeof one;
    g.api.set_attribute(CUPTI_ATTR_PER_THREAD, &sz, &one);
    g.api.set_thread_id_type(CUPTI_THREAD_ID_SYSTEM);
    cupti_result cr = g.api.register_callbacks(buffer_requested, buffer_completed);
    if (cr != CUPTI_OK) {
        snprintf(why, whylen, "cuptiActivityRegisterCallbacks failed: %s (%d)", result_text(cr),
                 cr);
        return MH_EUNAVAILABLE;
    }
    /* kernels first: it is the gate for "CUPTI works here", and enabling it
     * early avoids instrumentation stalls later */
    if (!o->memory_only &&
        (rc = enable_kind(MH__CUPTI_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", why, whylen)))
        return rc;
    if ((rc = enable_kind(MH__CUPTI_KIND_MEMORY2, "MEMORY2", why, whylen)) != 0)
        return rc;
    g.api.enable(MH__CUPTI_KIND_MEMORY_POOL);
    if (!o->memory_only) {
        for (size_t i = 0; i < sizeof device_kinds / sizeof device_kinds[0]; i++)
            g.api.enable(device_kinds[i]);
        enable_api_records();
    }
    return 0;
}

int mh_cupti_start(struct mh_recorder *rec, const struct mh_cupti_opts *opts, char *why,
                   size_t whylen)
{
    struct mh_cupti_opts dflt;
    char local[256];
    if (!why || whylen == 0) {
        why = local;
        whylen = sizeof local;
    }
    why[0] = '\0';
    if (!rec)
        return MH_EINVAL;
    if (!opts) {
        memset(&dflt, 0, sizeof dflt);
        opts = &dflt;
    }
    pthread_mutex_lock(&g.start_lock);
    if (g.active) {
        pthread_mutex_unlock(&g.start_lock);
        snprintf(why, whylen, "CUPTI recording already started");
        return MH_ESTATE;
    }
    int rc = alloc_state(opts);
    if (rc == 0 && (rc = load_cupti(opts->library, why, whylen)) == 0) {
        g.rec = rec;
        rc = enable_collection(opts, why, whylen);
        if (rc == 0 && pthread_create(&g.worker, NULL, worker_main, NULL) != 0) {
            snprintf(why, whylen, "cannot start the CUPTI thread");
            rc = MH_EUNAVAILABLE;
        }
        if (rc != 0)
            disable_all();
    }
    char meta[320];
    if (rc == 0) {
        uint32_t version = 0;
        g.api.get_version(&version);
        snprintf(meta, sizeof meta, "enabled (CUPTI API %u)", version);
        g.active = 1;
    } else {
        if (rc == MH_ENOMEM)
            snprintf(why, whylen, "out of memory");
        snprintf(meta, sizeof meta, "unavailable: %s", why);
        g.rec = NULL;
        free_state();
        rc = rc == MH_ENOMEM ? rc : MH_EUNAVAILABLE;
    }
    mh_recorder_set_meta(rec, "cupti", meta);
    pthread_mutex_unlock(&g.start_lock);
    return rc;
}

int mh_cupti_active(void)
{
    return __atomic_load_n(&g.active, __ATOMIC_ACQUIRE);
}

int mh_cupti_flush(void)
{
    pthread_mutex_lock(&g.start_lock);
    int active = g.active;
    if (active) {
        g.api.flush_all(CUPTI_FLUSH_FORCED);
        parse_pending();
    }
    pthread_mutex_unlock(&g.start_lock);
    return active ? 0 : MH_ESTATE;
}

int mh_cupti_stop(void)
{
    pthread_mutex_lock(&g.start_lock);
    if (!g.active) {
        pthread_mutex_unlock(&g.start_lock);
        return 0;
    }
    pthread_mutex_lock(&g.lock);
    g.stopping = 1;
    pthread_cond_signal(&g.wake);
    pthread_mutex_unlock(&g.lock);
    pthread_join(g.worker, NULL);
    disable_all();
    g.api.flush_all(CUPTI_FLUSH_FORCED);
    parse_pending();
    size_t dropped = 0;
    if (g.api.dropped(NULL, 0, &dropped) == CUPTI_OK)
        COUNT_ADD(records_dropped, dropped);
    char note[160];
    snprintf(note, sizeof note,
             "%llu events from %llu buffers; %llu buffer requests refused at the cap",
             (unsigned long long)g.counts.events, (unsigned long long)g.counts.buffers,
             (unsigned long long)g.counts.buffers_declined);
    mh_recorder_set_meta(g.rec, "cupti_stats", note);
    free_state();
    g.rec = NULL;
    __atomic_store_n(&g.active, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g.start_lock);
    return 0;
}

void mh_cupti_get_counts(struct mh_cupti_counts *out)
{
    out->buffers = __atomic_load_n(&g.counts.buffers, __ATOMIC_RELAXED);
    out->records = __atomic_load_n(&g.counts.records, __ATOMIC_RELAXED);
    out->events = __atomic_load_n(&g.counts.events, __ATOMIC_RELAXED);
    out->emit_dropped = __atomic_load_n(&g.counts.emit_dropped, __ATOMIC_RELAXED);
    out->buffers_declined = __atomic_load_n(&g.counts.buffers_declined, __ATOMIC_RELAXED);
    out->records_dropped = __atomic_load_n(&g.counts.records_dropped, __ATOMIC_RELAXED);
    out->no_timestamp = __atomic_load_n(&g.counts.no_timestamp, __ATOMIC_RELAXED);
    out->bad_buffers = __atomic_load_n(&g.counts.bad_buffers, __ATOMIC_RELAXED);
    out->vmm_calls = __atomic_load_n(&g.counts.vmm_calls, __ATOMIC_RELAXED);
}
