/* torch_steps.h - training steps and phases in the torch bridge: the step
 * markers from optimizer steps (memhist/optsteps.h says which end a step),
 * torch.profiler's ProfilerStep#N ranges or explicit calls, and the forward,
 * backward and optimizer phases. The two checks the allocator's tracker
 * makes on every event are inline here; the rest, and the extern "C" step
 * entry points of memhist/torch.h, are in torch_steps.cpp. C++, for the torch
 * bridge. */
#ifndef MH_RECORD_TORCH_STEPS_H
#define MH_RECORD_TORCH_STEPS_H

#include <stdint.h>

#include <atomic>
#include <mutex>

#include "memhist/optsteps.h"
#include "torch_emit.h"
#include "torch_support.h"

namespace mh__torch_steps
{

enum mode { OPTIMIZER = 0, PROFILER = 1, EXPLICIT = 2 }; /* who ends steps; a later one wins */

struct state {
    std::atomic<int64_t> step{0};
    std::atomic<int64_t> ended{0}; /* steps ended in this recording, whoever ended them */
    std::atomic<int> mode{OPTIMIZER};
    /* 1: a step begin and the forward phase are due, 2: the phase only */
    std::atomic<int> begin_pending{0};
    /* the devices of the running Optimizer.step (bit d = device d) */
    std::atomic<uint64_t> step_devices{0};
    std::atomic<int64_t> dev_step[64]; /* steps ended per device by their own markers */
    std::atomic<uint64_t> owned{0};    /* devices an optimizer's or a model's parameters are on */
    /* devices the allocator holds memory on (bit d), or null; set by the bridge */
    uint64_t (*in_use)(void) = nullptr;
    mh_opt_steps opt_steps{};          /* each device's key optimizer */
    std::mutex opt_lock;               /* opt_steps, from any thread stepping an optimizer */
    std::atomic<int> phase{MH_PHASE_NONE};
    std::atomic<uint32_t> main_thread{0}; /* the thread that runs the optimizer */
};
extern state S;

/* A new recording: step 0 opens at its first event; `main` is the training thread. */
void reset(uint32_t main);

/* The step that opens after a step end is emitted lazily, at the next event,
 * so the file never ends with an empty step. */
inline void maybe_begin(mh_recorder *rec, uint64_t t)
{
    int pending = S.begin_pending.load(std::memory_order_relaxed) ? S.begin_pending.exchange(0) : 0;
    if (pending) {
        if (pending == 1)
            mh__torch_emit::emit_simple(rec, MH_EV_STEP_BEGIN, t, (uint32_t)S.step.load());
        S.phase.store(MH_PHASE_FORWARD, std::memory_order_relaxed);
        mh__torch_emit::emit_simple(rec, MH_EV_PHASE, t, MH_PHASE_FORWARD);
    }
}

/* Backward is detected from allocations on a thread other than the training
 * thread (the one that runs the optimizer) outside any module's forward:
 * autograd runs CUDA backward ops on its per-device worker threads, and no
 * USER_SCOPE range marks it; DataParallel runs the forward of its copies on
 * threads of their own, inside their forward scopes. */
inline void note_phase_from_alloc(mh_recorder *rec, uint64_t t, uint32_t tid)
{
    uint32_t main = S.main_thread.load(std::memory_order_relaxed);
    int fwd = MH_PHASE_FORWARD;
    if (main && tid != main && S.phase.load(std::memory_order_relaxed) == MH_PHASE_FORWARD &&
        !mh__thread_forward_scopes() && S.phase.compare_exchange_strong(fwd, MH_PHASE_BACKWARD))
        mh__torch_emit::emit_simple(rec, MH_EV_PHASE, t, MH_PHASE_BACKWARD);
}

/* An Optimizer.step begins or ends; `optimizer` names it (0: unknown). */
void on_optimizer(mh_recorder *rec, uint64_t t, bool begin, uint64_t optimizer);
/* A ProfilerStep#n range begins or ends: from then on the profiler's ranges
 * number the steps (unless explicit markers took over). */
void on_profiler_step(mh_recorder *rec, uint64_t t, int64_t n, bool begin);
/* An identity for an optimizer known only by its Optimizer.step range
 * ("Optimizer.step#AdamW.step"): its class, never 0. */
uint64_t range_optimizer_id(const char *name);

} // namespace mh__torch_steps

#endif
