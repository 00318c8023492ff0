/* memhist/recorder.h - the in-process recorder.
 *
 * Producers (allocator hooks, CUPTI, the C API) call mh_emit() on any thread.
 * Emit copies the event into the calling thread's own buffer: it never blocks,
 * never takes a lock shared with other producers, makes no system call and
 * allocates only on a thread's first event. One background drain thread
 * collects the per-thread buffers, resolves deferred stacks, and writes the
 * .memhist file. A full buffer drops the event and counts it; the count is
 * written to the file. */
#ifndef MEMHIST_RECORDER_H
#define MEMHIST_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mh_recorder;

/* Turns an opaque context token (event.ctx with MH_EVF_CTX_TOKEN) into an
 * interned stack id. Called on the drain thread only, with events in emit
 * order per thread; it may call the interning functions below. Returns a
 * stack id (0 = none). */
typedef uint32_t (*mh_stack_resolver_fn)(void *user, struct mh_recorder *rec, uint64_t token);

/* Called on the drain thread once per token after its events are written, so
 * the owner can release what the token refers to. Optional. */
typedef void (*mh_token_release_fn)(void *user, uint64_t token);

/* Options; all-zero means defaults. */
struct mh_recorder_opts {
    uint32_t thread_buffer_events; /* per-thread capacity, 0 = 65536 */
    uint32_t flush_interval_ms; /* periodic write, 0 = 20 ms (must be <= 1000 for the 1 s bound) */
    const char *source;         /* "recorded" (default), "simulated", "imported" */
    mh_stack_resolver_fn resolve_stack;
    mh_token_release_fn release_token;
    void *resolver_user;
};

/* Creates the file at `path` ("-" = stdout) and starts the drain thread.
 * `opts` may be NULL. */
int mh_recorder_open(const char *path, const struct mh_recorder_opts *opts,
                     struct mh_recorder **out);
/* Same, writing to an already open file descriptor (not closed at close). */
int mh_recorder_open_fd(int fd, const struct mh_recorder_opts *opts, struct mh_recorder **out);

/* Records one event. Lock-free and allocation-free after the thread's first
 * event. Returns 0, or MH_EFULL when the event was dropped (and counted), or
 * MH_ESTATE after a failure stopped recording (the event is ignored). */
int mh_emit(struct mh_recorder *rec, const struct mh_event *ev);

/* Interning, callable from any thread (takes the recorder's interning lock;
 * never call it from an allocator callback). Ids are stable for the file and
 * their definitions reach the file before any event that uses them.
 * Return the id (> 0) or a negative error. */
int64_t mh_intern_string(struct mh_recorder *rec, const char *s, size_t len);
/* A frame: file name, function name, line. */
int64_t mh_intern_frame(struct mh_recorder *rec, const char *file, const char *func, uint32_t line);
/* A stack of frame ids, innermost first. */
int64_t mh_intern_stack(struct mh_recorder *rec, const uint32_t *frames, size_t nframes);

/* Program structure, from the training process's own knowledge (the Python
 * package's module and optimizer hooks). Any thread except an allocator
 * callback.
 * A module scope opens (enter != 0) or closes on `thread` (0 = the caller):
 * `name` an interned module path ("transformer.h.11.mlp"), `phase` the
 * enum mh_phase it runs in. Allocations take the innermost open scope of
 * their thread as their module. */
int mh_recorder_scope(struct mh_recorder *rec, int enter, uint32_t name, unsigned phase,
                      uint32_t thread);
/* The live block whose address is `addr` on `device` is a tensor with this
 * enum mh_tensor_role (parameter, buffer, gradient, optimizer state); `name`
 * an interned name or 0. */
int mh_recorder_tag(struct mh_recorder *rec, int device, uint64_t addr, unsigned role,
                    uint32_t name);
/* mh_recorder_tag for `n` blocks of one device and role at once (`names`
 * may be NULL: no names). Returns the number of tags emitted or a negative
 * MH_E* (the first failure). */
int mh_recorder_tags(struct mh_recorder *rec, int device, unsigned role, const uint64_t *addrs,
                     const uint32_t *names, size_t n);
/* Opens training step `step` and its forward phase (the model's first
 * forward). When that step is already open and none has ended, what came
 * before is the set-up (readers report it apart, mh_model_setup). */
int mh_recorder_step_begin(struct mh_recorder *rec, uint32_t step);

/* Key/value metadata about the run (torch_version, host, alloc_conf, ...).
 * Any thread; written with the next flush. */
int mh_recorder_set_meta(struct mh_recorder *rec, const char *key, const char *value);
/* Describes a device (name and total memory in bytes). */
int mh_recorder_set_device(struct mh_recorder *rec, int device, const char *name,
                           uint64_t total_bytes);

/* Writes everything emitted so far (by threads that have returned from
 * mh_emit) and flushes the file. Blocks until done. */
int mh_recorder_flush(struct mh_recorder *rec);

/* Counters for diagnostics: events accepted, dropped, threads seen. */
struct mh_recorder_counts {
    uint64_t emitted;
    uint64_t dropped;
    uint64_t written;
    uint32_t threads;
};
void mh_recorder_get_counts(const struct mh_recorder *rec, struct mh_recorder_counts *out);

/* A number that names this recorder alone for the life of the process (a
 * later recorder never gets it again, even at the same address): the key
 * for caches of the ids it interned. 0 for NULL. */
uint64_t mh_recorder_serial(const struct mh_recorder *rec);

/* Why recording stopped (NULL while healthy). Borrowed; valid until close. */
const char *mh_recorder_failure(const struct mh_recorder *rec);

/* Drains, writes the trailer, closes the file and frees the recorder.
 * No thread may emit during or after close. Returns the first error the
 * writer met (0 if none). Accepts NULL. */
int mh_recorder_close(struct mh_recorder *rec);

/* Nanoseconds since the Unix epoch (CLOCK_REALTIME, read through the vDSO). */
uint64_t mh_clock_ns(void);
/* OS thread id of the caller (cached per thread). */
uint32_t mh_thread_id(void);

#ifdef __cplusplus
}
#endif
#endif
