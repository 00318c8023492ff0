/* emit_gate.c - the recorder pointer of the torch bridge with per-thread
 * "inside" marks (see emit_gate.h).
 *
 * A thread claims one of SLOT_COUNT cache lines on its first entry and gives
 * it back when it exits (a pthread key's destructor); only the owner writes
 * its line, so entering and leaving are a load and two stores. Threads beyond
 * SLOT_COUNT share one more line with locked increments and a full fence. */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "emit_gate.h"

#define SLOT_COUNT 256

struct mh__gate_slot {
    _Alignas(64) atomic_int depth; /* emits in progress on the owning thread(s) */
    atomic_int owned;
    int shared; /* the overflow line: locked updates */
};

static struct mh__gate_slot slots[SLOT_COUNT];
static struct mh__gate_slot overflow = {.shared = 1};
static _Atomic(struct mh_recorder *) current;
static atomic_int asymmetric; /* set once, before the first recorder is published */
static _Thread_local struct mh__gate_slot *mine;
static pthread_key_t exit_key;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void slot_release(void *p)
{
    struct mh__gate_slot *s = p;
    atomic_store_explicit(&s->owned, 0, memory_order_release);
}

/* A forked child has only the forking thread: the others' marks are void. */
static void after_fork_child(void)
{
    for (int i = 0; i < SLOT_COUNT; i++) {
        atomic_store(&slots[i].depth, 0);
        atomic_store(&slots[i].owned, 0);
    }
    atomic_store(&overflow.depth, 0);
    mine = NULL;
}

static long membarrier_call(int cmd)
{
    return syscall(SYS_membarrier, cmd, 0, 0);
}

static void gate_init(void)
{
    pthread_key_create(&exit_key, slot_release);
    pthread_atfork(NULL, NULL, after_fork_child);
    long cmds = membarrier_call(MEMBARRIER_CMD_QUERY);
    if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
        membarrier_call(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
        atomic_store(&asymmetric, 1);
}

/* A thread's first entry: claims its line (out of line and cold, so that the
 * usual enter saves no registers). */
static __attribute__((noinline, cold)) struct mh__gate_slot *slot_claim(void)
{
    pthread_once(&init_once, gate_init);
    struct mh__gate_slot *claimed = &overflow;
    for (int i = 0; i < SLOT_COUNT; i++) {
        int free_slot = 0;
        if (atomic_load_explicit(&slots[i].owned, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&slots[i].owned, &free_slot, 1)) {
            if (pthread_setspecific(exit_key, &slots[i]) != 0)
                atomic_store(&slots[i].owned, 0);
            else
                claimed = &slots[i];
            break;
        }
    }
    return mine = claimed;
}

struct mh_recorder *mh__gate_enter(struct mh__gate_slot **slot)
{
    struct mh__gate_slot *s = mine;
    if (__builtin_expect(!s, 0))
        s = slot_claim();
    *slot = s;
    if (s->shared) {
        atomic_fetch_add_explicit(&s->depth, 1, memory_order_seq_cst);
        return atomic_load_explicit(&current, memory_order_seq_cst);
    }
    int depth = atomic_load_explicit(&s->depth, memory_order_relaxed);
    atomic_store_explicit(&s->depth, depth + 1, memory_order_relaxed);
    if (atomic_load_explicit(&asymmetric, memory_order_relaxed))
        atomic_signal_fence(memory_order_seq_cst); /* the retiring side's membarrier orders it */
    else
        atomic_thread_fence(memory_order_seq_cst);
    return atomic_load_explicit(&current, memory_order_acquire);
}

void mh__gate_leave(struct mh__gate_slot *slot)
{
    if (slot->shared) {
        atomic_fetch_sub_explicit(&slot->depth, 1, memory_order_release);
        return;
    }
    int depth = atomic_load_explicit(&slot->depth, memory_order_relaxed);
    atomic_store_explicit(&slot->depth, depth - 1, memory_order_release);
}

void mh__gate_open(struct mh_recorder *rec)
{
    pthread_once(&init_once, gate_init);
    atomic_store_explicit(&current, rec, memory_order_seq_cst);
}

struct mh_recorder *mh__gate_current(void)
{
    return atomic_load_explicit(&current, memory_order_acquire);
}

static void wait_outside(struct mh__gate_slot *s)
{
    for (unsigned spins = 0; atomic_load_explicit(&s->depth, memory_order_acquire) != 0; spins++)
        if (spins > 64)
            sched_yield();
}

void mh__gate_close(void)
{
    atomic_store_explicit(&current, NULL, memory_order_seq_cst);
    if (atomic_load(&asymmetric) && membarrier_call(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
        atomic_thread_fence(memory_order_seq_cst); /* registered in gate_init: does not fail */
    for (int i = 0; i < SLOT_COUNT; i++)
        wait_outside(&slots[i]);
    wait_outside(&overflow);
}
