/* torch_steps.cpp - training steps and phases in the torch bridge (see
 * torch_steps.h): step ends from optimizer steps, ProfilerStep#N ranges and
 * explicit calls, per device where the optimizer's devices are known; the
 * optimizer phase, and the forward phase a model's forward or an optimizer
 * step's closure opens again. Holds the extern "C" step entry points of
 * memhist/torch.h; every one catches all exceptions. */
#include <algorithm>

#include "memhist/error.h"
#include "memhist/torch.h"
#include "torch_steps.h"
#include "torch_support.h"

namespace mh__torch_steps
{

state S;

using mh__torch_emit::emit_guard;
using mh__torch_emit::emit_simple;
using mh__torch_emit::ticks_now;

void reset(uint32_t main)
{
    S.step.store(0);
    S.ended.store(0);
    S.step_devices.store(0);
    S.owned.store(0);
    for (auto &n : S.dev_step)
        n.store(0);
    {
        std::lock_guard<std::mutex> lock(S.opt_lock);
        mh_opt_steps_reset(&S.opt_steps);
    }
    S.mode.store(OPTIMIZER);
    S.phase.store(MH_PHASE_NONE);
    S.begin_pending.store(1);
    S.main_thread.store(main);
}

namespace
{

/* An Optimizer.step whose parameters' devices are known (`mask`) ends a
 * step on those devices only (a STEP_END per device, numbered per device);
 * the next step then opens per device too, so no step begin for every
 * device follows. Otherwise the step ends for every device. */
void end_step(mh_recorder *rec, uint64_t t, uint64_t mask)
{
    maybe_begin(rec, t);
    if (mask && S.mode.load() == OPTIMIZER) {
        for (int d = 0; d < 64; d++) {
            if (!(mask >> d & 1))
                continue;
            mh_event ev{};
            ev.time_ns = t;
            ev.kind = MH_EV_STEP_END;
            ev.aux = (uint32_t)S.dev_step[d].fetch_add(1);
            ev.device = (int16_t)d;
            ev.flags = MH_EVF_DEVICE_STEP;
            ev.thread = mh_thread_id();
            mh_emit(rec, &ev);
        }
    } else {
        emit_simple(rec, MH_EV_STEP_END, t, (uint32_t)S.step.fetch_add(1));
    }
    S.phase.store(MH_PHASE_NONE, std::memory_order_relaxed);
    S.begin_pending.store(mask ? 2 : 1, std::memory_order_release);
    S.ended.fetch_add(1, std::memory_order_relaxed);
}

void set_phase(mh_recorder *rec, uint64_t t, int phase)
{
    S.phase.store(phase);
    emit_simple(rec, MH_EV_PHASE, t, (uint32_t)phase);
}

} // namespace

/* Devices in use that neither an optimizer's nor a model's parameters are
 * on: the steps of the optimizer that steps end there too (DataParallel's
 * copies of the model on the other devices). */
static uint64_t unowned_in_use()
{
    return S.in_use ? S.in_use() & ~S.owned.load(std::memory_order_relaxed) : 0;
}

/* In optimizer mode an optimizer step's end ends a step where `optimizer`
 * is the device's key optimizer (memhist/optsteps.h), and on the devices in
 * use that no optimizer's parameters are on; where it is not the key, the
 * step goes on and the phase returns to forward, as after a step's end.
 * The clock's fit is refined there, off the allocator's path. */
void on_optimizer(mh_recorder *rec, uint64_t t, bool begin, uint64_t optimizer)
{
    if (begin) {
        S.main_thread.store(mh_thread_id(), std::memory_order_relaxed);
        maybe_begin(rec, t);
        set_phase(rec, t, MH_PHASE_OPTIMIZER);
        return;
    }
    if (S.mode.load() != OPTIMIZER)
        return;
    uint64_t mask = S.step_devices.exchange(0);
    S.owned.fetch_or(mask, std::memory_order_relaxed);
    int ends;
    {
        std::lock_guard<std::mutex> lock(S.opt_lock);
        ends = mh_opt_steps_end(&S.opt_steps, optimizer, &mask);
    }
    if (ends) {
        end_step(rec, t, mask ? mask | unowned_in_use() : 0);
        mh__tick_clock_refine(ticks_now);
    } else {
        set_phase(rec, t, MH_PHASE_FORWARD);
    }
}

void on_profiler_step(mh_recorder *rec, uint64_t t, int64_t n, bool begin)
{
    S.mode.store(std::max(S.mode.load(), (int)PROFILER));
    if (S.mode.load() != PROFILER)
        return;
    S.begin_pending.store(0);
    S.step.store(n);
    emit_simple(rec, begin ? MH_EV_STEP_BEGIN : MH_EV_STEP_END, t, (uint32_t)n);
    if (begin) {
        set_phase(rec, t, MH_PHASE_FORWARD);
    } else {
        S.step.store(n + 1);
        S.ended.fetch_add(1, std::memory_order_relaxed);
    }
}

uint64_t range_optimizer_id(const char *name)
{
    uint64_t h = 1469598103934665603ull;
    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 1099511628211ull;
    return h ? h : 1;
}

} // namespace mh__torch_steps

using namespace mh__torch_steps;

extern "C" {

int mh_torch_step(void)
{
    try {
        emit_guard guard;
        if (!guard.rec)
            return MH_ESTATE;
        S.mode.store(EXPLICIT);
        end_step(guard.rec, mh_clock_ns(), S.step_devices.exchange(0));
        return 0;
    } catch (...) {
        return MH_ESTATE;
    }
}

int mh_torch_optimizer_step(int begin)
{
    return mh_torch_optimizer_step_of(begin, 0);
}

int mh_torch_optimizer_step_of(int begin, uint64_t optimizer)
{
    try {
        emit_guard guard;
        if (!guard.rec)
            return MH_ESTATE;
        on_optimizer(guard.rec, mh_clock_ns(), begin != 0, optimizer);
        return 0;
    } catch (...) {
        return MH_ESTATE;
    }
}

int64_t mh_torch_steps_ended(void)
{
    return S.ended.load(std::memory_order_relaxed);
}

int mh_torch_optimizer_gone(uint64_t optimizer)
{
    std::lock_guard<std::mutex> lock(S.opt_lock);
    mh_opt_steps_forget(&S.opt_steps, optimizer);
    return 0;
}

int mh_torch_step_devices(uint64_t devices)
{
    S.step_devices.store(devices, std::memory_order_relaxed);
    return 0;
}

int mh_torch_param_devices(uint64_t devices)
{
    S.owned.fetch_or(devices, std::memory_order_relaxed);
    return 0;
}

int mh_torch_forward_begins(void)
{
    emit_guard guard;
    if (!guard.rec)
        return MH_ESTATE;
    uint64_t t = mh_clock_ns();
    maybe_begin(guard.rec, t);
    int bwd = MH_PHASE_BACKWARD;
    if (S.phase.compare_exchange_strong(bwd, MH_PHASE_FORWARD))
        emit_simple(guard.rec, MH_EV_PHASE, t, MH_PHASE_FORWARD);
    return 0;
}

int mh_torch_closure(int begin)
{
    emit_guard guard;
    if (!guard.rec)
        return MH_ESTATE;
    set_phase(guard.rec, mh_clock_ns(), begin ? MH_PHASE_FORWARD : MH_PHASE_OPTIMIZER);
    return 0;
}

} /* extern "C" */
