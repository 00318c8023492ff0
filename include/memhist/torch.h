/* memhist/torch.h - live recording from PyTorch's CUDA caching allocator.
 *
 * The torch bridge (libmemhist_torch.so, src/record/torch_bridge.cpp) feeds a
 * recorder (recorder.h) from inside a process that already runs libtorch:
 * every caching-allocator action through torch's allocator trace tracker,
 * out-of-memory reports, training steps and phases from record_function
 * ranges or the caller's optimizer hooks, and Python (optionally C++)
 * stacks captured by memhist's own frame walker in the allocator hook
 * (torch's history stays off), resolved on the recorder's drain thread;
 * where the walker does not know the CPython version, torch's gathered
 * context instead (meta "stack_capture" says which).
 * MEMHIST_STACK_CAPTURE=torch forces the latter.
 *
 * Lifetime: torch has no way to detach a tracker, so once attached the bridge
 * stays registered for the rest of the process; mh_torch_stop() turns it into
 * a no-op. Never dlclose the library. One recorder is attached at a time.
 *
 * Every function catches all exceptions: a failure stops recording, keeps the
 * reason (mh_torch_error) and lets the program run on. */
#ifndef MEMHIST_TORCH_H
#define MEMHIST_TORCH_H

#include <stddef.h>
#include <stdint.h>

#include "recorder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which stacks to record with allocator events. */
enum mh_torch_stacks {
    MH_TORCH_STACKS_DEFAULT = 0, /* same as PYTHON */
    MH_TORCH_STACKS_NONE = 1,    /* no stacks: torch's history stays off */
    MH_TORCH_STACKS_PYTHON = 2,  /* Python (and TorchScript) frames */
    MH_TORCH_STACKS_ALL = 3      /* Python + C++ frames (C++ unwinding costs more) */
};

/* The most frames a stack keeps (innermost first). */
#define MH_TORCH_FRAMES_MAX 512

/* Options; all-zero means defaults. */
struct mh_torch_opts {
    int stacks;                /* enum mh_torch_stacks */
    int op_ranges;             /* non-zero: record USER_SCOPE record_function ranges */
    uint32_t ctx_slots;        /* per-thread in-flight stack contexts, 0 = 16384 */
    const char *torch_version; /* written as meta "torch_version"; NULL = the headers' */
    int max_frames;            /* frames kept per stack, innermost first: 1..MH_TORCH_FRAMES_MAX,
                                  0 = MH_TORCH_FRAMES_MAX */
    int caller_steps;          /* non-zero: the caller reports optimizer steps
                                  (mh_torch_optimizer_step) and, while a profiler
                                  runs, asks for its ranges (mh_torch_watch_ranges);
                                  the bridge then registers its record_function
                                  callback only for those ranges or op_ranges */
};

/* Fills the resolver fields of recorder options (resolve_stack,
 * release_token, resolver_user) so that stacks reach the file. Call before
 * mh_recorder_open for a recorder that will be attached. */
void mh_torch_recorder_opts(struct mh_recorder_opts *opts);

/* Opens a recorder on `path` with the bridge's resolver (a shortcut for
 * mh_torch_recorder_opts + mh_recorder_open). `ropts` may be NULL. */
int mh_torch_open(const char *path, const struct mh_recorder_opts *ropts, struct mh_recorder **out);

/* Attaches the bridge to `rec` (borrowed until mh_torch_stop returns).
 * Initializes CUDA in torch if the program has not yet done so (attach to an
 * allocator that exists). Returns 0, or:
 *   MH_EUNAVAILABLE  no CUDA device / torch built without CUDA;
 *   MH_EUNSUPPORTED  backend:cudaMallocAsync, a pluggable allocator, or
 *                    PYTORCH_NO_CUDA_MEMORY_CACHING=1 (no events exist);
 *   MH_ESTATE        already attached (or attached before and failed);
 *   MH_EINVAL        bad options (stacks, max_frames out of range); other
 *                    negative codes from torch failures.
 * mh_torch_error() says why. Writes meta torch_version, alloc_conf,
 * torch_stacks, stack_frames, stack_capture and the devices. */
int mh_torch_attach(struct mh_recorder *rec, const struct mh_torch_opts *opts);

/* Stops feeding the recorder (the tracker stays registered but does nothing)
 * and turns torch's history off again if the bridge turned it on. Call
 * before mh_recorder_close. Safe to call when not attached. */
int mh_torch_stop(void);

/* Explicit step marker: ends the current step. Once called, automatic step
 * markers from optimizer steps stop (explicit markers win). */
int mh_torch_step(void);
/* Marks an optimizer step's begin (1) or end (0), as torch's
 * Optimizer.step#... range does, for a caller that set caller_steps (the
 * Python package calls it from global optimizer step hooks). */
int mh_torch_optimizer_step(int begin);
/* The same for an identified optimizer (any non-zero value that stays the
 * same for one optimizer, e.g. its address): when several optimizers step
 * in an iteration, only the steps of the first one to step on a device end
 * a training step there. mh_torch_optimizer_step is this with 0 (every
 * optimizer step ends a training step). */
int mh_torch_optimizer_step_of(int begin, uint64_t optimizer);
/* How many training steps the attached recording has ended so far, by
 * whichever rule ends them (optimizer steps, ProfilerStep#N ranges, explicit
 * calls); one per step however many devices it ends on. Counts from 0 at
 * each attach and keeps the last recording's count after it stops. The
 * Python package reads it to end a program after a given number of steps
 * (MEMHIST_STOP_AFTER_STEPS). */
int64_t mh_torch_steps_ended(void);
/* The optimizer named so is gone (garbage collected): its identity may be
 * reused, and if it ended the steps, the next optimizer to step does. */
int mh_torch_optimizer_gone(uint64_t optimizer);
/* While the count of watch(1) calls over watch(0) calls is positive, the
 * bridge watches record_function ranges (torch.profiler's ProfilerStep#N
 * define the steps then). Without caller_steps the ranges are always
 * watched. */
int mh_torch_watch_ranges(int on);
/* The Optimizer.step now running updates parameters on these devices (bit
 * d = device d; the Python package's optimizer pre-hook calls it): its end
 * closes a step on those devices only, each device numbering its own steps
 * (STEP_END events that name the device). 0, or never calling it: the step
 * ends on every device. */
int mh_torch_step_devices(uint64_t devices);
/* The devices (bit d: device d) holding a model's parameters (the Python
 * package reports them at a model's first forward): each steps with its own
 * optimizer. A device in use that neither an optimizer's nor a model's
 * parameters are on (DataParallel's copies of the model, activations placed
 * on a device of their own) ends its steps with the optimizer that steps. */
int mh_torch_param_devices(uint64_t devices);
/* A model's forward begins (the Python package's root-module hook calls
 * it): after a backward in the same step (gradient accumulation, one
 * forward and backward per micro-batch) the forward phase opens again. */
int mh_torch_forward_begins(void);
/* The closure an optimizer step was given (its forward and backward, as
 * Lightning and LBFGS run them inside Optimizer.step) begins (1): the
 * forward phase opens; or returns (0): the optimizer phase opens again. */
int mh_torch_closure(int begin);
/* A named mark at the current time on the calling thread. */
int mh_torch_mark(const char *name);

/* Makes `text` known to the bridge: interns it (outside the allocator lock)
 * so that allocator events whose torch user metadata or compile context
 * equals it carry its id (event.str / event.str2). The tracker cannot intern
 * strings itself (that would allocate and lock under torch's allocator
 * mutex); unknown strings are left out. At most 256 strings. The Python
 * package calls it from its wrapper of torch.cuda.memory._set_memory_metadata. */
int mh_torch_metadata(const char *text);

/* Why the last call failed or recording stopped; "" when healthy. Static
 * storage, valid until the next bridge call. */
const char *mh_torch_error(void);

/* Whether the bridge is attached and recording (1) or not (0). */
int mh_torch_active(void);

#ifdef __cplusplus
}
#endif
#endif
