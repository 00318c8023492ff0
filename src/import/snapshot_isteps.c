/* snapshot_isteps.c - snapshot import: steps and phases from the
 * record_function annotations torch keeps in `external_annotations`
 * (Optimizer.step#<Cls>.step from torch.optim, ProfilerStep#N from
 * torch.profiler), written as MH_EVF_DERIVED step and phase events between
 * the merged trace entries (snapshot_import.c) with the same rules as the
 * torch bridge applies to a live recording (see snapshot_import_int.h): the
 * markers are for every device (an annotation names the current device, not
 * the devices of the optimizer's parameters), so a device's steps are the
 * periods it did something in, and what follows the last step is a tail,
 * not a step (src/model/steps.c). Of several optimizers stepping in an
 * iteration, only the key one's steps end steps (memhist/optsteps.h), the
 * optimizer known by its annotation's name (so by its class). A live
 * recording sees backward from the thread autograd allocates on; a snapshot
 * has no threads, so an allocation whose stack runs through autograd's
 * backward entry points, or has no frame at all (autograd's worker thread
 * runs no Python), starts the backward phase instead. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "snapshot_import_int.h"

int mh__imp_range_kind(const char *name, size_t n, int64_t *step)
{
    static const char prof[] = "ProfilerStep#", opt[] = "Optimizer.step#";
    size_t np = sizeof prof - 1, no = sizeof opt - 1;
    if (n > np && memcmp(name, prof, np) == 0) {
        int64_t v = 0;
        size_t i = np;
        for (; i < n && i - np < 18 && name[i] >= '0' && name[i] <= '9'; i++)
            v = v * 10 + (name[i] - '0');
        if (i != n)
            return MH__SR_OTHER;
        *step = v;
        return MH__SR_PROFILER;
    }
    if (n > no + 5 && memcmp(name, opt, no) == 0 && memcmp(name + n - 5, ".step", 5) == 0)
        return MH__SR_OPTIMIZER;
    return MH__SR_OTHER;
}

static int contains(const struct mh__pv *s, const char *needle)
{
    size_t k = strlen(needle);
    if (!s || s->type != MH__PV_STR || s->n < k)
        return 0;
    for (size_t i = 0; i + k <= s->n; i++)
        if (memcmp(s->u.s + i, needle, k) == 0)
            return 1;
    return 0;
}

/* Backward: Python frames of Tensor.backward / torch.autograd.backward, the
 * C++ autograd engine (stacks="all"), or an empty stack: with Python stacks
 * an allocation on autograd's worker thread has no Python frame, which is
 * the live recording's rule (an allocation off the training thread).
 * Program: a "<module>" frame, the top level of the script the main thread
 * runs, which a hook on autograd's thread never has. */
uint64_t mh__imp_frame_flags(const struct mh__pv *f)
{
    if (f->type == MH__PV_HANDLE)
        return f->n == MH__H_FRAME ? (uint64_t)f->u.i & (MH__H_BACKWARD | MH__H_PROGRAM) : 0;
    if (f->type != MH__PV_DICT)
        return 0;
    const struct mh__pv *name = mh__pv_get(f, "name"), *file = mh__pv_get(f, "filename");
    int backward = contains(name, "_engine_run_backward") || contains(name, "torch::autograd::Engine::") ||
                   (contains(name, "backward") &&
                    (contains(file, "torch/autograd/") || contains(file, "torch/_tensor.py")));
    return (backward ? MH__H_BACKWARD : 0) | (contains(name, "<module>") ? MH__H_PROGRAM : 0);
}

uint64_t mh__imp_flags(const struct mh__pv *frames)
{
    if (frames && frames->type == MH__PV_HANDLE)
        return frames->n == MH__H_STACK ? (uint64_t)frames->u.i & (MH__H_BACKWARD | MH__H_PROGRAM) : 0;
    if (!frames || !mh__pv_is_seq(frames))
        return 0;
    if (frames->n == 0)
        return MH__H_BACKWARD; /* autograd's threads run no Python */
    uint64_t flags = 0;
    for (uint32_t i = 0; i < frames->n; i++)
        flags |= mh__imp_frame_flags(mh__pv_at(frames, i));
    return flags;
}

/* Host-side events (device -1), as the torch bridge writes them. */
static int derived(struct mh__imp *im, uint64_t t, int device, uint8_t kind, uint32_t aux)
{
    struct mh_event ev;
    (void)device;
    memset(&ev, 0, sizeof ev);
    ev.time_ns = t;
    ev.device = -1;
    ev.kind = kind;
    ev.flags = MH_EVF_DERIVED;
    ev.aux = aux;
    return mh__imp_put(im, &ev);
}

static int set_phase(struct mh__imp *im, struct mh__isteps *st, uint64_t t, int device, int phase)
{
    st->phase = phase;
    return derived(im, t, device, MH_EV_PHASE, (uint32_t)phase);
}

/* The step that opens after a step end opens at the next event. */
static int maybe_begin(struct mh__imp *im, struct mh__isteps *st, uint64_t t, int device)
{
    if (!st->begin_pending)
        return 0;
    st->begin_pending = 0;
    int rc = derived(im, t, device, MH_EV_STEP_BEGIN, (uint32_t)st->step);
    return rc ? rc : set_phase(im, st, t, device, MH_PHASE_FORWARD);
}

int mh__isteps_entry(struct mh__imp *im, struct mh__isteps *st, const struct mh__ient *e)
{
    if (!st->on)
        return 0;
    int rc = maybe_begin(im, st, e->time_ns, 0);
    if (!rc && e->kind == MH_EV_ALLOC && e->backward && st->phase == MH_PHASE_FORWARD)
        rc = set_phase(im, st, e->time_ns, 0, MH_PHASE_BACKWARD);
    /* the program's own thread allocating after a backward in the same step:
     * the next micro-batch's forward (gradient accumulation) */
    else if (!rc && e->kind == MH_EV_ALLOC && !e->backward && e->program &&
             st->phase == MH_PHASE_BACKWARD)
        rc = set_phase(im, st, e->time_ns, 0, MH_PHASE_FORWARD);
    return rc;
}

int mh__isteps_before_note(struct mh__imp *im, struct mh__isteps *st, const struct mh__inote *n)
{
    /* the range's own event is the next event: a pending step opens before it */
    if (!st->on || n->is_step || n->range_kind == MH__SR_PROFILER)
        return 0;
    return maybe_begin(im, st, n->time_ns, n->device);
}

int mh__isteps_note(struct mh__imp *im, struct mh__isteps *st, const struct mh__inote *n)
{
    if (!st->on || n->is_step)
        return 0;
    int rc = 0;
    if (n->range_kind == MH__SR_PROFILER) {
        st->profiler_mode = 1;
        st->begin_pending = 0;
        rc = derived(im, n->time_ns, n->device, n->begin ? MH_EV_STEP_BEGIN : MH_EV_STEP_END,
                     (uint32_t)n->step);
        if (!rc && n->begin) {
            st->step = n->step;
            rc = set_phase(im, st, n->time_ns, n->device, MH_PHASE_FORWARD);
        } else if (!rc) {
            im->info->steps++; /* complete steps: a step still open at the end is a tail */
            st->step = n->step + 1;
        }
    } else if (n->range_kind == MH__SR_OPTIMIZER) {
        if (n->begin) {
            rc = maybe_begin(im, st, n->time_ns, n->device);
            if (!rc)
                rc = set_phase(im, st, n->time_ns, n->device, MH_PHASE_OPTIMIZER);
        } else if (!st->profiler_mode) {
            uint64_t devices = 0; /* an annotation's device is the current one, not the optimizer's */
            rc = maybe_begin(im, st, n->time_ns, n->device);
            if (!rc && !mh_opt_steps_end(&st->opt, (uint64_t)n->str + 1, &devices))
                return set_phase(im, st, n->time_ns, n->device, MH_PHASE_FORWARD);
            if (!rc)
                rc = derived(im, n->time_ns, n->device, MH_EV_STEP_END, (uint32_t)st->step++);
            if (!rc)
                im->info->steps++;
            st->phase = MH_PHASE_NONE;
            st->begin_pending = 1;
        }
    }
    return rc;
}
