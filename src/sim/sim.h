/* sim.h - the caching-allocator simulator.
 *
 * A faithful re-implementation of the decisions of PyTorch's CUDA caching
 * allocator (reference pytorch-allocator.md sections 1.6 and 1.10): request
 * rounding, small/large pools per stream, segment sizes, best fit by (size,
 * address), split rules, max_split_size and oversize blocks, cross-stream
 * pending frees, garbage collection, release-and-retry before OOM, and
 * expandable segments. It sits where a live recording would: it emits exactly
 * the allocator events the torch hook emits, to a callback and/or a writer,
 * so the model and every output read a simulated run like a recorded one.
 * Workloads (workload.h) and what-if replay (src/cli/cmd_whatif.c) drive it.
 *
 * Not thread-safe; one simulator models one device. */
#ifndef MH_SIM_SIM_H
#define MH_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/allocconf.h"
#include "memhist/event.h"
#include "memhist/writer.h"

struct mh__sim;

/* Receives every event the simulator emits, in order. A non-zero return
 * stops the current operation, which returns that value. */
typedef int (*mh__sim_event_fn)(void *user, const struct mh_event *ev);

/* Address oracle for replay: asked for the base address of a new segment
 * (expandable = 0, size = cudaMalloc size) or of a new expandable virtual
 * reservation (expandable = 1, size = reservation size). Returns 1 and sets
 * *addr to use that address, 0 to let the simulator choose. An address that
 * overlaps a live range is ignored. */
typedef int (*mh__sim_addr_fn)(void *user, int expandable, uint64_t size, uint64_t stream,
                              int small_pool, uint64_t *addr);

struct mh__sim_opts {
    struct mh_alloc_conf conf; /* allocator settings (zero = PyTorch defaults) */
    uint64_t capacity;         /* device memory in bytes; 0 = unlimited */
    int device;                /* device index put into events */
    uint64_t base_addr;        /* lowest device address; 0 = 0x7f0000000000 */
    uint64_t start_ns;         /* time of the first event; 0 = 1.7e18 ns */
    mh__sim_event_fn emit;      /* optional callback */
    void *emit_user;
    /* optional writer (borrowed, must outlive the simulator): events are
     * written to it and stacks/strings interned in it */
    struct mh_writer *writer;
    mh__sim_addr_fn addr_fn;    /* optional address oracle */
    void *addr_user;
    /* best fit breaks ties between equal free blocks by address alone, as
     * torch did before it preferred the older segment (0: the older
     * segment, then the address, as torch 2.15 does) */
    int address_ties;
};

/* Counters the simulator keeps itself (torch's DeviceStats names). */
struct mh__sim_stats {
    uint64_t allocated, reserved, active;
    uint64_t requested; /* requested bytes of active blocks */
    uint64_t peak_allocated, peak_reserved;
    uint64_t allocs, frees, segment_allocs, segment_frees, maps, unmaps;
    uint64_t alloc_retries, ooms;
    uint64_t pending_frees; /* blocks freed but waiting on another stream */
};

int mh__sim_new(const struct mh__sim_opts *opts, struct mh__sim **out);
void mh__sim_free(struct mh__sim *s);

/* Simulated clock: events carry the current time. Time never goes back. */
void mh__sim_set_time(struct mh__sim *s, uint64_t time_ns);
void mh__sim_advance(struct mh__sim *s, uint64_t ns);
uint64_t mh__sim_time(const struct mh__sim *s);

/* Allocates `size` bytes on `stream` (torch's malloc). `stack` and `str`
 * (interned ids, 0 = none) are attached to the events. On success stores the
 * block address. Returns MH_EOOM_SIM after emitting the OOM event when every
 * retry failed, MH_EINVAL for size 0 (which emits nothing, as in torch). */
int mh__sim_malloc(struct mh__sim *s, uint64_t size, uint64_t stream, uint32_t stack, uint32_t str,
                   uint64_t *addr);

/* Frees a block (torch's free). `stack` 0 means the allocation's stack.
 * With `deferred` the block was used on another stream: free_requested is
 * emitted now and free_completed once its event completes, i.e. at the first
 * malloc (or release) at or after `ready_ns` (UINT64_MAX: when
 * mh__sim_mark_ready is called). MH_ENOTFOUND for an unknown address. */
int mh__sim_free_block(struct mh__sim *s, uint64_t addr, uint32_t stack, int deferred,
                       uint64_t ready_ns);
/* The pending free of `addr` completes now (reaped at the next malloc). */
int mh__sim_mark_ready(struct mh__sim *s, uint64_t addr);

/* torch.cuda.empty_cache(): completes every pending free, frees every
 * unsplit cached segment and unmaps free expandable pages. */
int mh__sim_empty_cache(struct mh__sim *s);

/* Seeds the state the allocator had before the events replayed next (a
 * trace that starts mid-run) from one MH_EVF_PREEXISTING event of an
 * imported file: a segment_alloc (segment at its address) or segment_map
 * (mapped range of an expandable reservation), then an alloc for each block
 * live in it (its size block_size, else the rounded request), followed by a
 * free_requested when it was waiting on another stream. An accepted event
 * is emitted as given. Returns 0, 1 when the event does not fit the seeded
 * state (nothing changes), MH_EINVAL for an event not flagged preexisting,
 * or another negative error. */
int mh__sim_seed(struct mh__sim *s, const struct mh_event *ev);

/* Emits a non-allocator event (step, phase, mark, ...) at the current time;
 * kind and payload are the caller's. */
int mh__sim_emit(struct mh__sim *s, const struct mh_event *ev);

/* Interning through the writer, or local distinct ids without one. */
uint32_t mh__sim_intern_string(struct mh__sim *s, const char *text);
uint32_t mh__sim_intern_frame(struct mh__sim *s, const char *file, const char *func, uint32_t line);
uint32_t mh__sim_intern_stack(struct mh__sim *s, const uint32_t *frames, size_t n);

void mh__sim_stats(const struct mh__sim *s, struct mh__sim_stats *out);
const struct mh_alloc_conf *mh__sim_conf(const struct mh__sim *s);
/* Size of the block at `addr` (0 if none is allocated there). */
uint64_t mh__sim_block_size(const struct mh__sim *s, uint64_t addr);
/* Largest free (inactive, mapped) block on a stream and pool, UINT64_MAX stream = any. */
uint64_t mh__sim_largest_free(const struct mh__sim *s, uint64_t stream, int small_pool);

#endif
