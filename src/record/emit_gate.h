/* emit_gate.h - the torch bridge's recorder pointer, read by the allocating
 * threads on every allocator event and retired by mh_torch_stop, which must
 * not close the recorder while a thread still emits into it.
 *
 * Each thread announces "inside" in a cache line of its own with plain stores,
 * no locked instruction, so the allocation path never waits for its earlier
 * stores to drain; the retiring thread pays instead: it clears the pointer,
 * makes every running thread of the process execute a memory barrier
 * (membarrier(2), private expedited), then waits for each line to read
 * "outside". Where membarrier is unavailable the threads fence themselves. */
#ifndef MH_RECORD_EMIT_GATE_H
#define MH_RECORD_EMIT_GATE_H

#ifdef __cplusplus
extern "C" {
#endif

struct mh_recorder;
struct mh__gate_slot;

/* The current recorder (NULL when none) and the calling thread's slot, which
 * the caller hands back to mh__gate_leave; the recorder stays open until then.
 * Nests on one thread. */
struct mh_recorder *mh__gate_enter(struct mh__gate_slot **slot);
void mh__gate_leave(struct mh__gate_slot *slot);

/* Control path (the bridge's API lock held): publish a recorder, read the
 * published one, and retire it, returning once no thread is inside. */
void mh__gate_open(struct mh_recorder *rec);
struct mh_recorder *mh__gate_current(void);
void mh__gate_close(void);

#ifdef __cplusplus
}
#endif
#endif
