/* torch_state.h - the caching allocator's state when recording starts, as
 * preexisting events (MH_EVF_PREEXISTING): every segment (a segment_map for
 * an expandable one) followed by its live blocks, the way an imported
 * snapshot's starting state is written. A recording started in the middle of
 * a program (memhist.start() after the model is on the GPU, a second
 * recording in one process) then knows the memory it did not see being
 * allocated. C++, for the torch bridge (torch_bridge.cpp). */
#ifndef MH_RECORD_TORCH_STATE_H
#define MH_RECORD_TORCH_STATE_H

#include <cstdio>
#include <type_traits>
#include <utility>

#include <c10/cuda/CUDACachingAllocator.h>

#include "memhist/event.h"
#include "memhist/recorder.h"
#include "torch_support.h"

namespace mh__torch_state
{

namespace cca = c10::cuda::CUDACachingAllocator;

/* snapshot() took no argument, then a memory pool ({0,0}: every pool), then
 * also whether to copy torch's trace ring (not wanted here). */
template <class F> cca::SnapshotInfo segments_now(F snapshot)
{
    using pool_id = std::pair<unsigned long long, unsigned long long>;
    if constexpr (std::is_invocable_v<F, pool_id, bool>)
        return snapshot(pool_id{0, 0}, false);
    else if constexpr (std::is_invocable_v<F, pool_id>)
        return snapshot(pool_id{0, 0});
    else
        return snapshot();
}

template <class Segment> uint8_t segment_flags(const Segment &s)
{
    return MH_EVF_PREEXISTING | MH_EVF_POOL_KNOWN | (s.is_large ? 0 : MH_EVF_POOL_SMALL) |
           (s.is_expandable ? MH_EVF_EXPANDABLE : 0);
}

/* The stack of the blocks found live: one frame saying so. */
inline uint32_t before_recording_stack(mh_recorder *rec)
{
    static const char func[] = "allocated before the recording started";
    int64_t frame = mh_intern_frame(rec, MH__BEFORE_RECORDING_FILE, func, 0);
    uint32_t f = frame > 0 ? (uint32_t)frame : 0;
    int64_t stack = f ? mh_intern_stack(rec, &f, 1) : 0;
    return stack > 0 ? (uint32_t)stack : 0;
}

/* What recording found: segments, live blocks and their bytes. */
struct found {
    size_t segments, blocks;
    uint64_t bytes;
};

/* Emits the state at `t` on `thread`. */
inline found emit_initial(mh_recorder *rec, uint64_t t, uint32_t thread)
{
    found n{};
    uint32_t stack = 0;
    for (const auto &s : segments_now(&cca::snapshot).segments) {
        mh_event ev{};
        ev.time_ns = t;
        ev.thread = thread;
        ev.device = (int16_t)s.device;
        ev.kind = s.is_expandable ? MH_EV_SEGMENT_MAP : MH_EV_SEGMENT_ALLOC;
        ev.flags = segment_flags(s);
        ev.addr = (uint64_t)s.address;
        ev.size = (uint64_t)s.total_size;
        ev.stream = (uint64_t)(uintptr_t)s.stream;
        ev.pool[0] = (uint32_t)s.owner_private_pool_id.first;
        ev.pool[1] = (uint32_t)s.owner_private_pool_id.second;
        mh_emit(rec, &ev);
        n.segments++;
        uint64_t addr = ev.addr;
        for (const auto &b : s.blocks) {
            if (b.allocated || b.active) {
                if (!stack)
                    stack = before_recording_stack(rec);
                mh_event blk = ev;
                blk.stack = stack;
                blk.kind = MH_EV_ALLOC;
                blk.flags = MH_EVF_PREEXISTING;
                blk.addr = addr;
                blk.size = b.requested_size ? b.requested_size : b.size;
                blk.block_size = b.size;
                mh_emit(rec, &blk);
                if (!b.allocated) { /* freed, waiting for its stream's events */
                    blk.kind = MH_EV_FREE_REQUESTED;
                    mh_emit(rec, &blk);
                }
                n.blocks++;
                n.bytes += b.size;
            }
            addr += b.size;
        }
    }
    return n;
}

/* The recording's `found_at_start` metadata, "N blocks (B bytes) in S
 * segments", where it found any. */
inline void note_found(mh_recorder *rec, const found &n)
{
    if (!n.segments)
        return;
    char text[96];
    snprintf(text, sizeof text, "%zu blocks (%llu bytes) in %zu segments", n.blocks,
             (unsigned long long)n.bytes, n.segments);
    mh_recorder_set_meta(rec, "found_at_start", text);
}

} // namespace mh__torch_state
#endif
