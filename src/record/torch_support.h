/* torch_support.h - the parts of the torch bridge that need no torch: the
 * tick-clock calibration, the names of record_function ranges that mark
 * steps, the allocator settings under which recording is impossible, the
 * device description and the table of metadata strings.
 * Plain C in libmemhist, so they are tested without libtorch and the one
 * C++ file (torch_bridge.cpp) holds only what must touch torch. */
#ifndef MH_RECORD_TORCH_SUPPORT_H
#define MH_RECORD_TORCH_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ns = ns0 + (ticks - ticks0) * scale */
struct mh__tick_fit {
    double scale;
    uint64_t ticks0;
    uint64_t ns0;
};

/* Fits paired (ticks, CLOCK_REALTIME ns) readings: the median slope over
 * pairs half the sample apart, then the offset as the median residual, so a
 * preempted reading does not skew it. Needs n >= 4; MH_EINVAL otherwise. */
int mh__tick_fit(const uint64_t *ticks, const uint64_t *ns, size_t n, struct mh__tick_fit *out);

static inline uint64_t mh__tick_to_ns(const struct mh__tick_fit *f, uint64_t ticks)
{
    return f->ns0 + (uint64_t)(int64_t)((double)(int64_t)(ticks - f->ticks0) * f->scale);
}

/* A refinement that keeps the clock continuous (a jump back would put one
 * thread's allocation before another's older one): the new fit starts where
 * `old` reads at tick `t`, with the slope `scale` (ns per tick, measured over
 * a long baseline) bent so that it reads CLOCK_REALTIME `n` plus `horizon_ns`
 * one horizon later, so an offset fades instead of jumping. MH_EINVAL when
 * the slope is not positive or the offset is not within half a horizon. */
int mh__tick_fit_refine(const struct mh__tick_fit *old, double scale, uint64_t t, uint64_t n,
                        uint64_t horizon_ns, struct mh__tick_fit *out);

/* The bridge's clock (tick_clock.c), `ticks` reading torch's approximate
 * clock: calibrated once when recording starts (about 4 ms; 0 or a negative
 * MH_E*), refined at most every 10 s by a caller that is not the allocator's
 * trace hook, read without locking by mh__tick_clock_ns. */
int mh__tick_clock_calibrate(uint64_t (*ticks)(void));
void mh__tick_clock_refine(uint64_t (*ticks)(void));
uint64_t mh__tick_clock_ns(uint64_t ticks);

/* File name of the frame that names an allocation made with no Python frame
 * by the torch op that made it (function: the op, e.g. "MmBackward0"); see
 * src/format/FORMAT.md, "Frames". */
#define MH__TORCH_INTERNAL_FILE "torch internal"
/* The file of the one frame of the blocks live when recording starts
 * (torch_state.h); FORMAT.md, "Frames". */
#define MH__BEFORE_RECORDING_FILE "before recording"
/* The op's name from a demangled C++ type or function name, without
 * namespaces, template arguments or parameters
 * ("torch::autograd::generated::MmBackward0" -> "MmBackward0"). Returns out. */
const char *mh__torch_op_short(const char *demangled, char *out, size_t cap);

/* Ops of allocations with no Python frame (opname.c). The bridge's tracker
 * gives such an allocation a context token ending in binary 10 (trie nodes
 * end in 1, parked contexts in 00): the C++ type of the autograd node its
 * thread evaluates, or 2 alone outside autograd. */
static inline int mh__torch_op_token(uint64_t token)
{
    return (token & 3) == 2;
}
/* Writes the demangled type name of an op token ("" for token 2). */
typedef void (*mh__torch_op_namer)(uint64_t token, char *buf, size_t cap);
struct mh_recorder;
/* The stack of an op token: one frame, file MH__TORCH_INTERNAL_FILE,
 * function the op's short name. Interned once per token and recorder;
 * drain thread (a lock orders the drain threads of several recorders). 0 on
 * failure. */
uint32_t mh__torch_op_stack(struct mh_recorder *rec, uint64_t token, mh__torch_op_namer name);

enum mh__range_kind {
    MH__RANGE_OTHER = 0,
    MH__RANGE_PROFILER_STEP,  /* "ProfilerStep#N" (torch.profiler) */
    MH__RANGE_OPTIMIZER_STEP  /* "Optimizer.step#<Class>.step" (torch.optim) */
};
/* Classifies a record_function name; *step gets N for ProfilerStep#N. */
enum mh__range_kind mh__range_kind(const char *name, int64_t *step);

/* 0 if the environment allows recording the caching allocator; otherwise
 * MH_EUNSUPPORTED with the reason in why (backend:cudaMallocAsync has no
 * trace hook; PYTORCH_NO_CUDA_MEMORY_CACHING=1 emits no events). */
int mh__torch_env_check(char *why, size_t len);
struct mh_torch_opts;
/* 0 if the attach options are valid (NULL: defaults); otherwise MH_EINVAL
 * with the reason in why. */
int mh__torch_opts_check(const struct mh_torch_opts *o, char *why, size_t len);
/* The allocator settings in force (PYTORCH_ALLOC_CONF, else the older
 * PYTORCH_CUDA_ALLOC_CONF), or NULL. */
const char *mh__torch_alloc_conf_env(void);

struct mh_recorder;
/* Names and sizes of the first `count` CUDA devices through the driver torch
 * already loaded, written to `rec` (empty when the driver is not loaded). */
void mh__torch_record_devices(struct mh_recorder *rec, int count);

/* Metadata strings the tracker may name (at most 256): the id of `s`
 * interned earlier, 0 if unknown (lock-free, any thread). */
uint32_t mh__torch_meta_id(const char *s);
/* Interns `text` into `rec` and makes it known to mh__torch_meta_id; one
 * caller at a time. Returns 0 or MH_ELIMIT, MH_ENOMEM, an interning error. */
int mh__torch_meta_add(struct mh_recorder *rec, const char *text);

/* Forward module scopes open on the calling thread (annotate.c counts those
 * mh_recorder_scope opens and closes for the thread itself): a thread that
 * runs a model's forward (DataParallel's per-device threads) is not
 * autograd's, whatever it allocates. */
int mh__thread_forward_scopes(void);

#ifdef __cplusplus
}
#endif
#endif
