/* torch_entry.h - reading torch's allocator trace entries (c10 TraceEntry)
 * into memhist events, across torch releases: the action map, and the
 * fields later releases added (memory pool, compile context, user metadata),
 * found by C++17 SFINAE rather than by version numbers. C++, for the torch
 * bridge (torch_bridge.cpp). */
#ifndef MH_RECORD_TORCH_ENTRY_H
#define MH_RECORD_TORCH_ENTRY_H

#include <string>
#include <type_traits>

#include <c10/cuda/CUDACachingAllocator.h>

#include "memhist/event.h"
#include "torch_support.h"

namespace mh__torch_entry {

using Entry = c10::cuda::CUDACachingAllocator::TraceEntry;

inline int map_action(int a)
{
    switch (a) {
    case Entry::ALLOC: return MH_EV_ALLOC;
    case Entry::FREE_REQUESTED: return MH_EV_FREE_REQUESTED;
    case Entry::FREE_COMPLETED: return MH_EV_FREE_COMPLETED;
    case Entry::SEGMENT_ALLOC: return MH_EV_SEGMENT_ALLOC;
    case Entry::SEGMENT_FREE: return MH_EV_SEGMENT_FREE;
    case Entry::SEGMENT_MAP: return MH_EV_SEGMENT_MAP;
    case Entry::SEGMENT_UNMAP: return MH_EV_SEGMENT_UNMAP;
    case Entry::SNAPSHOT: return MH_EV_SNAPSHOT;
    case Entry::OOM: return MH_EV_OOM;
    default: return -1; /* ANNOTATE (2.14+) and future actions are not recorded */
    }
}

/* Lock-free lookup of a metadata string interned earlier (0 = unknown);
 * torch's "N/A" (no compile context, on nearly every entry) is told apart
 * without a string comparison. */
inline uint32_t meta_id(const std::string &s)
{
    if (s.empty() || (s.size() == 3 && s[0] == 'N' && s[1] == '/' && s[2] == 'A'))
        return 0;
    return mh__torch_meta_id(s.c_str());
}

/* TraceEntry fields that appeared over releases, detected by C++17 SFINAE
 * rather than by guessing the release that added them. */
template <class T, class = void> struct has_mempool : std::false_type {};
template <class T> struct has_mempool<T, std::void_t<decltype(std::declval<T>().mempool_)>> : std::true_type {};
template <class T, class = void> struct has_compile_ctx : std::false_type {};
template <class T>
struct has_compile_ctx<T, std::void_t<decltype(std::declval<T>().compile_context_)>> : std::true_type {};
template <class T, class = void> struct has_user_md : std::false_type {};
template <class T>
struct has_user_md<T, std::void_t<decltype(std::declval<T>().user_metadata_)>> : std::true_type {};

template <class T> inline void copy_optional_fields(const T &e, mh_event *ev)
{
    if constexpr (has_mempool<T>::value) {
        ev->pool[0] = (uint32_t)e.mempool_.first;
        ev->pool[1] = (uint32_t)e.mempool_.second;
    }
    if constexpr (has_compile_ctx<T>::value)
        ev->str2 = meta_id(e.compile_context_);
    if constexpr (has_user_md<T>::value)
        ev->str = meta_id(e.user_metadata_);
}

} // namespace mh__torch_entry
#endif
