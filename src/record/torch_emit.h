/* torch_emit.h - what the torch bridge's files share to write events: the
 * guard that keeps the recorder open across an emit (emit_gate.h), the
 * event with no memory fields (steps, phases, ranges, marks), the thread's
 * id and torch's approximate clock, whose ticks tick_clock.c turns into ns.
 * C++, for torch_bridge.cpp and torch_steps.cpp. */
#ifndef MH_RECORD_TORCH_EMIT_H
#define MH_RECORD_TORCH_EMIT_H

#include <stdint.h>

#include <c10/util/ApproximateClock.h>

#include "emit_gate.h"
#include "memhist/event.h"
#include "memhist/recorder.h"

namespace mh__torch_emit
{

/* Keeps `rec` open across an emit: mh_torch_stop waits until no thread is
 * inside (emit_gate.h). */
struct emit_guard {
    mh__gate_slot *slot;
    mh_recorder *rec = mh__gate_enter(&slot);
    ~emit_guard()
    {
        mh__gate_leave(slot);
    }
};

/* The calling thread's id (mh_thread_id), kept by this library too, so an
 * event costs no call into libmemhist for it. */
inline uint32_t thread_id()
{
    thread_local uint32_t tid = 0;
    if (!tid)
        tid = mh_thread_id();
    return tid;
}

inline uint64_t ticks_now()
{
    return (uint64_t)c10::getApproximateTime();
}

inline void emit_simple(mh_recorder *rec, uint8_t kind, uint64_t t, uint32_t aux, uint32_t str = 0)
{
    mh_event ev{};
    ev.time_ns = t;
    ev.kind = kind;
    ev.aux = aux;
    ev.str = str;
    ev.device = -1;
    ev.thread = thread_id();
    mh_emit(rec, &ev);
}

} // namespace mh__torch_emit

#endif
