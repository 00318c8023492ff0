/* annotate.c - program-structure events from the training process's own
 * knowledge: module scopes and tensor roles (include/memhist/recorder.h).
 * Called by the Python package's module and optimizer hooks (ctypes), on
 * the program's threads, never from an allocator callback; each call builds
 * one event and hands it to mh_emit like any other producer. */
#include "memhist/error.h"
#include "memhist/event.h"
#include "memhist/recorder.h"
#include "torch_support.h"

/* Forward module scopes open on this thread (its own, thread 0). */
static __thread int forward_scopes;

int mh__thread_forward_scopes(void)
{
    return forward_scopes;
}

int mh_recorder_scope(struct mh_recorder *rec, int enter, uint32_t name, unsigned phase,
                      uint32_t thread)
{
    if (!rec || !name || phase >= MH_PHASE_COUNT)
        return MH_EINVAL;
    if (!thread && phase == MH_PHASE_FORWARD && enter)
        forward_scopes++;
    else if (!thread && phase == MH_PHASE_FORWARD && forward_scopes > 0)
        forward_scopes--;
    struct mh_event ev = {0};
    ev.time_ns = mh_clock_ns();
    ev.kind = enter ? MH_EV_SCOPE_ENTER : MH_EV_SCOPE_EXIT;
    ev.str = name;
    ev.aux = phase;
    ev.device = -1;
    ev.thread = thread ? thread : mh_thread_id();
    return mh_emit(rec, &ev);
}

int mh_recorder_tag(struct mh_recorder *rec, int device, uint64_t addr, unsigned role,
                    uint32_t name)
{
    if (!rec || !addr || role == MH_ROLE_NONE || role >= MH_ROLE_COUNT || device < 0)
        return MH_EINVAL;
    struct mh_event ev = {0};
    ev.time_ns = mh_clock_ns();
    ev.kind = MH_EV_TAG;
    ev.addr = addr;
    ev.aux = role;
    ev.str = name;
    ev.device = (int16_t)device;
    ev.thread = mh_thread_id();
    return mh_emit(rec, &ev);
}

int mh_recorder_tags(struct mh_recorder *rec, int device, unsigned role, const uint64_t *addrs,
                     const uint32_t *names, size_t n)
{
    if (!addrs && n)
        return MH_EINVAL;
    for (size_t i = 0; i < n; i++) {
        int rc = mh_recorder_tag(rec, device, addrs[i], role, names ? names[i] : 0);
        if (rc < 0)
            return rc;
    }
    return (int)n;
}

int mh_recorder_step_begin(struct mh_recorder *rec, uint32_t step)
{
    if (!rec)
        return MH_EINVAL;
    struct mh_event ev = {0};
    ev.time_ns = mh_clock_ns();
    ev.kind = MH_EV_STEP_BEGIN;
    ev.aux = step;
    ev.device = -1;
    ev.thread = mh_thread_id();
    int rc = mh_emit(rec, &ev);
    ev.kind = MH_EV_PHASE;
    ev.aux = MH_PHASE_FORWARD;
    return rc < 0 ? rc : mh_emit(rec, &ev);
}
