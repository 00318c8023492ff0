/* torch_bridge.cpp - the libtorch bridge (libmemhist_torch.so), the one C++
 * file of memhist.
 *
 * Data flow: torch's CUDA caching allocator calls our trace tracker on every
 * action, under the device's allocator mutex, on the allocating thread. The
 * tracker converts the raw approximate-clock ticks to Unix-epoch ns, copies
 * scalars into an mh_event, captures the thread's stack with memhist's own
 * walker (pystack.h: CPython frames, plus C++ frames unwound here for
 * `--stacks all`) as a trie node, and hands the event to mh_emit; torch's
 * history stays off. The recorder's drain thread resolves nodes into frames
 * (resolve_ctx) without the GIL. Where the walker cannot run (an unknown
 * CPython layout), torch's gathered contexts are parked in per-thread rings
 * instead and symbolized in batches with torch::symbolize (GIL taken there,
 * never in the tracker); with no Python frame, the autograd node names the
 * op (opname.c). Step markers and phases (torch_steps.cpp) come from
 * RecordFunction USER_SCOPE ranges or the caller's optimizer hooks; the
 * recorder pointer passes through emit_gate.h.
 *
 * Owns: the bridge state (one per process, never destroyed: torch cannot
 * detach a tracker), the context rings, the clock calibration. Every
 * extern "C" entry catches all exceptions. */
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <ATen/Context.h>
#include <ATen/record_function.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/ApproximateClock.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/profiler/combined_traceback.h>
#include <torch/version.h>

#include "memhist/cupti.h"
#include "memhist/error.h"
#include "memhist/torch.h"
#include "emit_gate.h"
#include "torch_emit.h"
#include "torch_entry.h"
#include "torch_state.h"
#include "pystack.h"
#include "symtab.h"
#include "torch_steps.h"
#include "torch_support.h"

#define MH__TORCH_AT_LEAST(maj, min)                                                        \
    (TORCH_VERSION_MAJOR > (maj) || (TORCH_VERSION_MAJOR == (maj) && TORCH_VERSION_MINOR >= (min)))
#if !MH__TORCH_AT_LEAST(2, 4)
#error "memhist's torch bridge needs torch 2.4 or newer"
#endif

namespace {

namespace cca = c10::cuda::CUDACachingAllocator;
using Entry = cca::TraceEntry;
using mh__torch_entry::copy_optional_fields;
using mh__torch_entry::map_action;
using mh__torch_emit::emit_guard;
using mh__torch_emit::emit_simple;
using mh__torch_emit::thread_id;
using mh__torch_emit::ticks_now;
namespace steps = mh__torch_steps;

/* ---- clock: torch's approximate-clock ticks (tick_clock.c) ------------------ */

int calibrate_clock()
{
    return mh__tick_clock_calibrate(ticks_now);
}

inline uint64_t ticks_to_ns(uint64_t ticks)
{
    return mh__tick_clock_ns(ticks);
}

/* ---- context rings: parked stack contexts, one ring per thread -------------- */

enum slot_state : uint8_t { SLOT_FREE, SLOT_FILLED, SLOT_DROPPED, SLOT_RESOLVED, SLOT_RELEASED };

struct ctx_ring;
struct ctx_slot {
    std::shared_ptr<c10::GatheredContext> ctx;
    uint64_t seq = 0;
    uint32_t stack = 0;
    std::atomic<uint8_t> state{SLOT_FREE};
    ctx_ring *ring = nullptr;
};

/* Single producer (the owning thread) fills slots at `head`; the drain
 * thread resolves them and frees them in order at `tail`. */
struct ctx_ring {
    std::unique_ptr<ctx_slot[]> slots;
    uint32_t cap = 0;
    std::atomic<uint64_t> head{0};
    std::atomic<uint64_t> tail{0};
    std::atomic<int> owned{1};
    ctx_ring *next = nullptr;
};

/* ---- bridge state -------------------------------------------------------------- */

struct bridge {
    int stacks = MH_TORCH_STACKS_PYTHON;
    int op_ranges = 0;
    bool caller_steps = false;         /* optimizer steps come from mh_torch_optimizer_step */
    int range_watchers = 0;            /* mh_torch_watch_ranges(1) calls not yet undone */
    at::CallbackHandle range_hook = 0; /* the record_function callback while registered */
    uint32_t ctx_slots = 16384;
    bool history_ours = false;
    bool own_stacks = false; /* memhist's frame walker (pystack.h) instead of torch's gather */
    int max_frames = 0;      /* frames kept per stack, innermost first; 0: MH_TORCH_FRAMES_MAX */
    char stack_source[256] = "";
    bool hooks_installed = false;
    std::atomic<uint64_t> ctx_lost{0};
    std::atomic<ctx_ring *> rings{nullptr};
    std::mutex api_lock; /* attach/stop/metadata table writers; never in the tracker */
    char error[512] = "";
};
bridge g;

void set_error(const char *fmt, const char *detail = "")
{
    snprintf(g.error, sizeof g.error, fmt, detail);
}

/* ---- ring handling (producer side: allocation-free after the first event) ------ */

struct ring_owner {
    ctx_ring *ring = nullptr;
    ~ring_owner()
    {
        if (ring)
            ring->owned.store(0, std::memory_order_release);
    }
};
thread_local ring_owner t_ring;

ctx_ring *my_ring()
{
    if (t_ring.ring)
        return t_ring.ring;
    for (ctx_ring *r = g.rings.load(std::memory_order_acquire); r; r = r->next) {
        int zero = 0;
        if (r->owned.load(std::memory_order_relaxed) == 0 && r->owned.compare_exchange_strong(zero, 1))
            return t_ring.ring = r;
    }
    ctx_ring *r = new ctx_ring; /* a thread's first event: the one allowed allocation */
    r->cap = g.ctx_slots;
    r->slots.reset(new ctx_slot[r->cap]);
    for (uint32_t i = 0; i < r->cap; i++)
        r->slots[i].ring = r;
    ctx_ring *old = g.rings.load(std::memory_order_relaxed);
    do
        r->next = old;
    while (!g.rings.compare_exchange_weak(old, r, std::memory_order_release));
    return t_ring.ring = r;
}

/* Parks a context; returns the slot or nullptr when the ring is full. */
ctx_slot *park_context(const std::shared_ptr<c10::GatheredContext> &ctx)
{
    ctx_ring *r = my_ring();
    uint64_t h = r->head.load(std::memory_order_relaxed);
    if (h - r->tail.load(std::memory_order_acquire) >= r->cap)
        return nullptr;
    ctx_slot *s = &r->slots[h % r->cap];
    s->ctx = ctx; /* reference count increment, no allocation */
    s->seq = h;
    s->stack = 0;
    s->state.store(SLOT_FILLED, std::memory_order_relaxed);
    r->head.store(h + 1, std::memory_order_release);
    return s;
}

/* ---- drain side: batch symbolization ------------------------------------------- */

/* torch::symbolize needs the GIL for Python frames; the drain thread is not an
 * allocator thread, so it may take it. Without Python there are no Python
 * frames and nothing to lock. Returns false if Python is shutting down. */
bool symbolize_batch(const std::vector<torch::CapturedTraceback *> &tbs, torch::SymbolizedTracebacks *out)
{
    int gil = mh__python_gil_take();
    if (gil == MH_ESTATE)
        return false;
    try {
        *out = torch::symbolize(tbs);
    } catch (...) {
        mh__python_gil_give(gil);
        throw;
    }
    mh__python_gil_give(gil);
    return true;
}

uint32_t intern_traceback(mh_recorder *rec, const torch::SymbolizedTracebacks &st, size_t i,
                          std::vector<int64_t> &frame_ids, std::vector<uint32_t> &scratch)
{
    scratch.clear();
    size_t cap = g.max_frames > 0 ? (size_t)g.max_frames : MH_TORCH_FRAMES_MAX;
    for (uint64_t fi : st.tracebacks[i]) {
        if (scratch.size() >= cap)
            break;
        if (frame_ids[fi] == 0) {
            const torch::unwind::Frame &f = st.all_frames[fi];
            int64_t id = mh_intern_frame(rec, f.filename.c_str(), f.funcname.c_str(), (uint32_t)f.lineno);
            frame_ids[fi] = id > 0 ? id : -1;
        }
        if (frame_ids[fi] > 0)
            scratch.push_back((uint32_t)frame_ids[fi]);
    }
    if (scratch.empty())
        return 0;
    int64_t sid = mh_intern_stack(rec, scratch.data(), scratch.size());
    return sid > 0 ? (uint32_t)sid : 0;
}

/* Resolves every filled slot of the ring from `first` to the published head. */
void resolve_ring_from(mh_recorder *rec, ctx_ring *r, uint64_t first)
{
    uint64_t head = r->head.load(std::memory_order_acquire);
    std::vector<ctx_slot *> slots;
    std::vector<torch::CapturedTraceback *> tbs;
    for (uint64_t q = first; q < head && slots.size() < 4096; q++) {
        ctx_slot *s = &r->slots[q % r->cap];
        if (s->state.load(std::memory_order_acquire) != SLOT_FILLED)
            continue;
        auto *tb = dynamic_cast<torch::CapturedTraceback *>(s->ctx.get());
        if (tb) {
            slots.push_back(s);
            tbs.push_back(tb);
        } else {
            uint8_t want = SLOT_FILLED;
            s->state.compare_exchange_strong(want, SLOT_RESOLVED);
        }
    }
    torch::SymbolizedTracebacks st;
    bool ok = !tbs.empty() && symbolize_batch(tbs, &st) && st.tracebacks.size() == tbs.size();
    std::vector<int64_t> frame_ids(ok ? st.all_frames.size() : 0, 0);
    std::vector<uint32_t> scratch;
    for (size_t i = 0; i < slots.size(); i++) {
        slots[i]->stack = ok ? intern_traceback(rec, st, i, frame_ids, scratch) : 0;
        uint8_t want = SLOT_FILLED;
        slots[i]->state.compare_exchange_strong(want, SLOT_RESOLVED, std::memory_order_acq_rel);
    }
}

/* Tokens of own captures are trie nodes, tagged with the low bit (context
 * slots are aligned pointers). */
inline bool own_token(uint64_t token)
{
    return token & 1;
}

/* Allocations with no Python frame (opname.c): the type of the autograd
 * node this thread evaluates as a token ending in binary 10, 2 outside it. */
uint64_t current_op_token()
{
    auto node = torch::autograd::get_current_node();
    return node ? (uint64_t)(uintptr_t)&typeid(*node) | 2 : 2;
}

void op_type_name(uint64_t token, char *buf, size_t cap)
{
    auto *type = reinterpret_cast<const std::type_info *>((uintptr_t)(token & ~(uint64_t)3));
    snprintf(buf, cap, "%s", type ? c10::demangle(type->name()).c_str() : "");
}

uint32_t resolve_ctx(void *user, mh_recorder *rec, uint64_t token)
{
    if (mh__torch_op_token(token))
        return mh__torch_op_stack(rec, token, op_type_name);
    if (own_token(token))
        return mh__stack_resolve(rec, (uint32_t)(token >> 1), mh__symtab_name, nullptr);
    try {
        ctx_slot *s = reinterpret_cast<ctx_slot *>((uintptr_t)token);
        if (!s)
            return 0;
        if (s->state.load(std::memory_order_acquire) == SLOT_FILLED)
            resolve_ring_from(rec, s->ring, s->seq);
        return s->state.load(std::memory_order_acquire) == SLOT_RESOLVED ? s->stack : 0;
    } catch (...) {
        return 0;
    }
}

/* Frees released (and dropped) slots in order, so the owner may reuse them. */
void release_ctx(void *user, uint64_t token)
{
    if (token & 3) /* trie nodes and ops own nothing to release */
        return;
    ctx_slot *s = reinterpret_cast<ctx_slot *>((uintptr_t)token);
    if (!s)
        return;
    ctx_ring *r = s->ring;
    s->state.store(SLOT_RELEASED, std::memory_order_release);
    uint64_t t = r->tail.load(std::memory_order_relaxed);
    uint64_t head = r->head.load(std::memory_order_acquire);
    while (t < head) {
        ctx_slot *x = &r->slots[t % r->cap];
        uint8_t st = x->state.load(std::memory_order_acquire);
        if (st != SLOT_RELEASED && st != SLOT_DROPPED)
            break;
        x->ctx.reset(); /* ~CapturedTraceback queues Python frames; no GIL needed */
        x->state.store(SLOT_FREE, std::memory_order_relaxed);
        r->tail.store(++t, std::memory_order_release);
    }
}

/* ---- the tracker ---------------------------------------------------------------- */

/* The calling thread's stack as a trie node (pystack.h); with C++ frames
 * for `--stacks all`, unwound here and named later on the drain thread. */
uint32_t capture_stack()
{
    if (g.stacks != MH_TORCH_STACKS_ALL)
        return mh__stack_capture(nullptr, 0, g.max_frames);
    std::vector<void *> ips = torch::unwind::unwind();
    auto *raw = reinterpret_cast<const uintptr_t *>(ips.data());
    return mh__stack_capture(raw, ips.size(), g.max_frames);
}

/* The tracker: runs under the allocator mutex. No GIL, no torch calls, no
 * allocation beyond a thread's first event, no system call. */
void on_trace(const Entry &e)
{
    emit_guard guard;
    mh_recorder *rec = guard.rec;
    if (!rec)
        return;
    int kind = map_action((int)e.action_);
    if (kind < 0)
        return;
    mh_event ev{};
    ev.time_ns = ticks_to_ns((uint64_t)e.time_.approx_t_);
    ev.kind = (uint8_t)kind;
    ev.addr = (uint64_t)e.addr_;
    ev.size = (uint64_t)e.size_;
    ev.stream = (uint64_t)(uintptr_t)e.stream_;
    ev.device = (int16_t)e.device_;
    ev.thread = thread_id();
    copy_optional_fields(e, &ev);
    steps::maybe_begin(rec, ev.time_ns);
    if (kind == MH_EV_ALLOC)
        steps::note_phase_from_alloc(rec, ev.time_ns, ev.thread);
    /* Stacks ride on the events that create memory; frees refer to the block's
     * allocation, whose stack the model already knows. */
    ctx_slot *slot = nullptr;
    bool wants_ctx = kind == MH_EV_ALLOC || kind == MH_EV_SEGMENT_ALLOC || kind == MH_EV_SEGMENT_MAP ||
                     kind == MH_EV_OOM;
    if (wants_ctx && g.own_stacks) {
        uint32_t node = capture_stack(); /* none: no Python frame, name the op */
        ev.ctx = node ? (uint64_t)node << 1 | 1 : current_op_token();
        ev.flags |= MH_EVF_CTX_TOKEN;
    } else if (e.context_ && wants_ctx && g.stacks != MH_TORCH_STACKS_NONE) {
        slot = park_context(e.context_);
        if (slot) {
            ev.ctx = (uint64_t)(uintptr_t)slot;
            ev.flags |= MH_EVF_CTX_TOKEN;
        } else {
            g.ctx_lost.fetch_add(1, std::memory_order_relaxed);
        }
    }
    if (mh_emit(rec, &ev) != 0 && slot)
        slot->state.store(SLOT_DROPPED, std::memory_order_release);
}

/* ---- record_function: steps, phases, op ranges ---------------------------------- */

uint32_t range_name_id(mh_recorder *rec, const char *name)
{
    thread_local std::unordered_map<std::string, uint32_t> cache;
    thread_local uint64_t cache_rec = 0; /* mh_recorder_serial: a new recorder may reuse the address */
    if (cache_rec != mh_recorder_serial(rec)) {
        cache.clear();
        cache_rec = mh_recorder_serial(rec);
    }
    auto it = cache.find(name);
    if (it != cache.end())
        return it->second;
    int64_t id = mh_intern_string(rec, name, strlen(name));
    uint32_t v = id > 0 ? (uint32_t)id : 0;
    cache.emplace(name, v);
    return v;
}

/* Handles one USER_SCOPE range boundary by name (shared with the tests). */
void on_range(const char *name, bool begin)
{
    emit_guard guard;
    mh_recorder *rec = guard.rec;
    if (!rec || !name)
        return;
    uint64_t t = mh_clock_ns();
    int64_t n = 0;
    mh__range_kind kind = mh__range_kind(name, &n);
    if (kind == MH__RANGE_PROFILER_STEP)
        steps::on_profiler_step(rec, t, n, begin);
    else if (kind == MH__RANGE_OPTIMIZER_STEP && !g.caller_steps) /* else the caller's hooks */
        steps::on_optimizer(rec, t, begin, steps::range_optimizer_id(name));
    if (g.op_ranges)
        emit_simple(rec, begin ? MH_EV_RANGE_BEGIN : MH_EV_RANGE_END, t, 0, range_name_id(rec, name));
}

std::unique_ptr<at::ObserverContext> rf_start(const at::RecordFunction &fn)
{
    try {
        on_range(fn.name(), true);
    } catch (...) {
    }
    return nullptr;
}

void rf_end(const at::RecordFunction &fn, at::ObserverContext *)
{
    try {
        on_range(fn.name(), false);
    } catch (...) {
    }
}

/* ---- attach ------------------------------------------------------------------ */

int check_environment()
{
    char why[sizeof g.error];
    int rc = mh__torch_env_check(why, sizeof why);
    if (rc < 0)
        set_error("%s", why);
    return rc;
}

/* recordHistory gained `skip_actions` (a vector of action names) in later
 * releases; the template lets the call compile against either signature. */
template <class F>
void call_record_history(F f, bool enabled, cca::CreateContextFn fn, cca::RecordContext when)
{
    using skip_t = const std::vector<std::string> &;
    if constexpr (std::is_invocable_v<F, bool, cca::CreateContextFn, size_t, cca::RecordContext, bool, skip_t>) {
        /* everything skipped: torch's own ring buffer stays empty */
        static const std::vector<std::string> skip_all = {"alloc",         "free_requested", "free_completed",
                                                          "segment_alloc", "segment_free",   "oom",
                                                          "snapshot"};
        static const std::vector<std::string> none;
        f(enabled, fn, 1, when, false, enabled ? skip_all : none);
    } else {
        f(enabled, fn, 1, when, false);
    }
}

/* Chooses the stack source: memhist's own walker when it works here (then
 * torch's history stays off and the tracker alone is attached), else torch's
 * gathered contexts (below). */
void choose_stacks()
{
    g.own_stacks = false;
    if (g.stacks == MH_TORCH_STACKS_NONE) {
        snprintf(g.stack_source, sizeof g.stack_source, "none");
        return;
    }
    char why[200] = "MEMHIST_STACK_CAPTURE=torch";
    /* MEMHIST_STACK_CAPTURE=torch: torch's gathered contexts, for comparisons */
    const char *want = getenv("MEMHIST_STACK_CAPTURE");
    if (!(want && !strcmp(want, "torch")) && mh__stack_init(why, sizeof why) == 0) {
        g.own_stacks = true;
        snprintf(g.stack_source, sizeof g.stack_source, "%s", why);
        if (g.stacks == MH_TORCH_STACKS_ALL) {
            torch::unwind::unwind(); /* warm the unwinder's caches outside the lock */
            /* torch's symbol tables (libtorch_cpu: ~400k functions, ~60 ms) are
             * read here, not by the drain thread during the first steps */
            static const char *const torch_libs[] = {"libtorch", "libc10", nullptr};
            mh__stack_with_resolver([](void *p) { mh__symtab_preload((const char *const *)p); },
                                    (void *)torch_libs);
        }
        mh__stack_skip_module((const void *)&choose_stacks);
    } else {
        snprintf(g.stack_source, sizeof g.stack_source, "torch CapturedTraceback (own capture off: %s)",
                 why);
    }
    mh__stack_forget();
}

/* The fallback: turns on torch's history with a one-entry ring so that
 * torch gathers contexts for the tracker while keeping its own buffer
 * minimal. Leaves a history the program turned on itself alone. */
void enable_history()
{
    if (g.stacks == MH_TORCH_STACKS_NONE || g.own_stacks || cca::isHistoryEnabled())
        return;
    using ctx_ptr = std::shared_ptr<c10::GatheredContext>;
    cca::CreateContextFn fn = [] { return ctx_ptr(torch::CapturedTraceback::gather(true, true, false)); };
    if (g.stacks == MH_TORCH_STACKS_ALL)
        fn = [] { return ctx_ptr(torch::CapturedTraceback::gather(true, true, true)); };
    if (g.stacks == MH_TORCH_STACKS_ALL)
        torch::unwind::unwind(); /* warm the unwinder, as torch does */
    call_record_history(&cca::recordHistory, true, fn, cca::RecordContext::ALLOC);
    g.history_ours = true;
}

void disable_history()
{
    if (!g.history_ours)
        return;
    g.history_ours = false;
    call_record_history(&cca::recordHistory, false, nullptr, cca::RecordContext::NEVER);
}

void on_oom(int64_t device, size_t allocated, size_t total, size_t free_bytes)
{
    emit_guard guard;
    if (!guard.rec)
        return;
    char buf[160];
    snprintf(buf, sizeof buf, "device=%lld allocated=%zu device_total=%zu device_free=%zu", (long long)device,
             allocated, total, free_bytes);
    mh_recorder_set_meta(guard.rec, "last_oom", buf);
}

void install_hooks()
{
    if (g.hooks_installed)
        return;
    cca::attachAllocatorTraceTracker([](const Entry &e) {
        try {
            on_trace(e);
        } catch (...) {
        }
    });
    cca::attachOutOfMemoryObserver([](int64_t d, size_t a, size_t t, size_t f) {
        try {
            on_oom(d, a, t, f);
        } catch (...) {
        }
    });
    g.hooks_installed = true;
}

/* Registers the record_function callback only while it has something to see
 * (optimizer steps the caller does not report, op ranges, ranges a caller
 * watches): any global callback costs autograd a rebuild of torch's callback
 * lists per node (docs/DESIGN.md, Steps). The api lock is held. */
void update_range_hook()
{
    bool want = mh__gate_current() && (!g.caller_steps || g.op_ranges || g.range_watchers > 0);
    if (want && !g.range_hook)
        g.range_hook = at::addGlobalCallback(
            at::RecordFunctionCallback(rf_start, rf_end).scopes({at::RecordScope::USER_SCOPE}));
    else if (!want && g.range_hook) {
        at::removeCallback(g.range_hook);
        g.range_hook = 0;
    }
}

void record_meta(mh_recorder *rec, const mh_torch_opts *o, int devices)
{
    mh_recorder_set_meta(rec, "torch_version", o && o->torch_version ? o->torch_version : TORCH_VERSION);
    const char *conf = mh__torch_alloc_conf_env();
    mh_recorder_set_meta(rec, "alloc_conf", conf ? conf : "");
    static const char *names[] = {"python", "none", "python", "all"};
    mh_recorder_set_meta(rec, "torch_stacks", names[g.stacks]);
    if (g.stacks != MH_TORCH_STACKS_NONE)
        mh_recorder_set_meta(rec, "stack_frames",
                             std::to_string(g.max_frames ? g.max_frames : MH_TORCH_FRAMES_MAX).c_str());
    mh_recorder_set_meta(rec, "stack_capture", g.stack_source);
    mh_recorder_set_meta(rec, "step_source",
                         g.caller_steps ? "optimizer hooks, ProfilerStep# ranges while a profiler runs, or explicit"
                                        : "record_function (Optimizer.step#, ProfilerStep#) or explicit");
    mh__torch_record_devices(rec, devices);
}

int apply_options(const mh_torch_opts *o)
{
    char why[sizeof g.error];
    if (mh__torch_opts_check(o, why, sizeof why) < 0) {
        set_error("%s", why);
        return MH_EINVAL;
    }
    int stacks = o ? o->stacks : 0;
    g.stacks = stacks == MH_TORCH_STACKS_DEFAULT ? MH_TORCH_STACKS_PYTHON : stacks;
    g.max_frames = o ? o->max_frames : 0;
    g.op_ranges = o ? o->op_ranges : 0;
    g.caller_steps = o && o->caller_steps;
    g.range_watchers = 0;
    if (!g.rings.load() && o && o->ctx_slots)
        g.ctx_slots = std::max<uint32_t>(o->ctx_slots, 64);
    return 0;
}

/* The devices whose caching allocator holds memory: the devices in use. */
uint64_t devices_in_use()
{
    uint64_t mask = 0;
    int n = std::min<int>(c10::cuda::device_count(), 64);
    for (int d = 0; d < n; d++)
        if (cca::getDeviceStats((c10::DeviceIndex)d)
                .reserved_bytes[(size_t)c10::CachingAllocator::StatType::AGGREGATE]
                .current > 0)
            mask |= (uint64_t)1 << d;
    return mask;
}

void reset_steps(mh_recorder *rec)
{
    steps::reset(mh_thread_id());
    steps::S.in_use = devices_in_use;
    mh__gate_open(rec);
}

int attach_locked(mh_recorder *rec, const mh_torch_opts *o)
{
    if (mh__gate_current()) {
        set_error("%s", "the torch bridge is already attached to a recorder (call mh_torch_stop first)");
        return MH_ESTATE;
    }
    int rc = apply_options(o);
    if (rc < 0 || (rc = check_environment()) < 0)
        return rc;
    if (!at::globalContext().hasCUDA() || c10::cuda::device_count() == 0) {
        set_error("%s", "no CUDA device: torch sees no GPU (or was built without CUDA), nothing to record");
        return MH_EUNAVAILABLE;
    }
#if MH__TORCH_AT_LEAST(2, 6)
    at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
#else
    at::globalContext().lazyInitCUDA();
#endif
    if (!cca::get()) {
        set_error("%s", "torch's CUDA allocator does not exist after CUDA initialization");
        return MH_EUNAVAILABLE;
    }
    std::string name = cca::name();
    if (name != "native") {
        set_error("the CUDA allocator backend is '%s'; only the native caching allocator has a trace hook",
                  name.c_str());
        return MH_EUNSUPPORTED;
    }
    if ((rc = calibrate_clock()) < 0) {
        set_error("%s", "clock calibration failed");
        return rc;
    }
    choose_stacks();
    enable_history();
    install_hooks();
    record_meta(rec, o, c10::cuda::device_count());
    /* what the allocator holds already; an event between this and the gate's
     * opening (another thread allocating during the attach) is not seen */
    auto found = mh__torch_state::emit_initial(rec, ticks_to_ns(ticks_now()), mh_thread_id());
    mh__torch_state::note_found(rec, found);
    reset_steps(rec);
    update_range_hook();
    return 0;
}

} // namespace

/* ---- extern "C" API -------------------------------------------------------------- */

extern "C" {

void mh_torch_recorder_opts(struct mh_recorder_opts *opts)
{
    if (!opts)
        return;
    opts->resolve_stack = resolve_ctx;
    opts->release_token = release_ctx;
    opts->resolver_user = &g;
}

int mh_torch_open(const char *path, const struct mh_recorder_opts *ropts, struct mh_recorder **out)
{
    struct mh_recorder_opts o;
    if (ropts)
        o = *ropts;
    else
        memset(&o, 0, sizeof o);
    mh_torch_recorder_opts(&o);
    return mh_recorder_open(path, &o, out);
}

int mh_torch_attach(struct mh_recorder *rec, const struct mh_torch_opts *opts)
{
    if (!rec)
        return MH_EINVAL;
    std::lock_guard<std::mutex> lock(g.api_lock);
    g.error[0] = '\0';
    /* a failed attach closes the gate only where it opened it: a recording
     * attached before it goes on */
    bool attached_before = mh__gate_current() != nullptr;
    try {
        int rc = attach_locked(rec, opts);
        if (rc >= 0)
            mh_inject_set_recorder(rec); /* CUPTI, if injected, records here too */
        else if (!attached_before)
            mh__gate_close(); /* no tracker or range callback still uses rec */
        return rc;
    } catch (const std::exception &ex) {
        set_error("torch failed while attaching: %s", ex.what());
    } catch (...) {
        set_error("%s", "torch failed while attaching (unknown exception)");
    }
    if (!attached_before)
        mh__gate_close();
    try {
        disable_history();
    } catch (...) {
    }
    return MH_EUNAVAILABLE;
}

int mh_torch_stop(void)
{
    std::lock_guard<std::mutex> lock(g.api_lock);
    mh_recorder *rec = mh__gate_current();
    if (rec)
        mh_inject_set_recorder(nullptr); /* flushes CUPTI into rec before it closes */
    mh__gate_close();
    try {
        update_range_hook();
        disable_history();
    } catch (const std::exception &ex) {
        set_error("turning torch's history off failed: %s", ex.what());
        return MH_ESTATE;
    } catch (...) {
        return MH_ESTATE;
    }
    uint64_t lost = g.ctx_lost.load() + (g.own_stacks ? mh__stack_lost() : 0);
    if (rec && lost) {
        char buf[32];
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)lost);
        mh_recorder_set_meta(rec, "stacks_lost", buf);
    }
    return 0;
}

int mh_torch_watch_ranges(int on)
{
    try {
        std::lock_guard<std::mutex> lock(g.api_lock);
        g.range_watchers = std::max(0, g.range_watchers + (on ? 1 : -1));
        update_range_hook();
        return 0;
    } catch (...) {
        return MH_ESTATE;
    }
}

int mh_torch_mark(const char *name)
{
    if (!name)
        return MH_EINVAL;
    try {
        emit_guard guard;
        if (!guard.rec)
            return MH_ESTATE;
        int64_t id = mh_intern_string(guard.rec, name, strlen(name));
        if (id < 0)
            return (int)id;
        uint64_t t = mh_clock_ns();
        steps::maybe_begin(guard.rec, t);
        emit_simple(guard.rec, MH_EV_MARK, t, 0, (uint32_t)id);
        return 0;
    } catch (...) {
        return MH_ESTATE;
    }
}

int mh_torch_metadata(const char *text)
{
    if (!text || !*text)
        return MH_EINVAL;
    try {
        std::lock_guard<std::mutex> lock(g.api_lock);
        mh_recorder *rec = mh__gate_current();
        if (!rec)
            return MH_ESTATE;
        return mh__torch_meta_add(rec, text);
    } catch (...) {
        return MH_ENOMEM;
    }
}

const char *mh_torch_error(void)
{
    return g.error;
}

int mh_torch_active(void)
{
    return mh__gate_current() != nullptr;
}

/* ---- test-only entry points (tests/torch): drive the handlers without CUDA ---- */

int mh__torch_test_attach(struct mh_recorder *rec, int stacks, int op_ranges)
{
    std::lock_guard<std::mutex> lock(g.api_lock);
    mh_torch_opts o{};
    o.stacks = stacks;
    o.op_ranges = op_ranges;
    int rc = apply_options(&o);
    if (rc == 0)
        rc = calibrate_clock();
    if (rc == 0) {
        choose_stacks();
        reset_steps(rec);
    }
    return rc;
}

/* `entry` is a c10 TraceEntry built by the test against the same headers. */
void mh__torch_test_trace(const void *entry)
{
    on_trace(*static_cast<const Entry *>(entry));
}

void mh__torch_test_range(const char *name, int begin)
{
    on_range(name, begin != 0);
}

uint64_t mh__torch_test_ticks_to_ns(uint64_t ticks)
{
    return ticks_to_ns(ticks);
}

uint64_t mh__torch_test_ticks_now(void)
{
    return ticks_now();
}

uint64_t mh__torch_test_ctx_lost(void)
{
    return g.ctx_lost.load();
}

} /* extern "C" */
