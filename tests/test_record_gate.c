/* test_record_gate.c - the torch bridge's emit gate (src/record/emit_gate.h):
 * once mh__gate_close returns, no thread is still inside with the retired
 * recorder, with threads entering and leaving all the while, nested entries,
 * and more threads than the gate has lines of their own. The recorder is
 * only an address to the gate, so a test object stands in for it. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "emit_gate.h"

struct fake_recorder {
    atomic_int alive;
};

static atomic_int stop_threads;
static atomic_long used_after_close;
static atomic_long entries_with_recorder;

/* Enters and leaves in a loop; inside, checks several times that the
 * recorder it got is still open. */
static void *emitter(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_threads)) {
        struct mh__gate_slot *slot;
        struct fake_recorder *rec = (struct fake_recorder *)mh__gate_enter(&slot);
        if (rec) {
            atomic_fetch_add(&entries_with_recorder, 1);
            for (int i = 0; i < 200; i++)
                if (!atomic_load_explicit(&rec->alive, memory_order_relaxed))
                    atomic_fetch_add(&used_after_close, 1);
        }
        mh__gate_leave(slot);
    }
    return NULL;
}

Test(gate, no_thread_is_inside_once_close_returns, .timeout = 120)
{
    enum { THREADS = 4, ROUNDS = 300 };
    static struct fake_recorder recs[ROUNDS];
    pthread_t t[THREADS];
    atomic_store(&stop_threads, 0);
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, emitter, NULL), 0);
    for (int r = 0; r < ROUNDS; r++) {
        atomic_store(&recs[r].alive, 1);
        mh__gate_open((struct mh_recorder *)&recs[r]);
        usleep(200);
        mh__gate_close();
        cr_assert_null(mh__gate_current());
        atomic_store(&recs[r].alive, 0); /* what closing the recorder would do */
    }
    atomic_store(&stop_threads, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    cr_expect_gt(atomic_load(&entries_with_recorder), 0,
                 "the threads got the recorder while it was open");
    cr_expect_eq(atomic_load(&used_after_close), 0,
                 "a thread used a recorder after mh__gate_close returned");
}

Test(gate, nested_entries_on_one_thread)
{
    struct fake_recorder rec = {1};
    mh__gate_open((struct mh_recorder *)&rec);
    struct mh__gate_slot *outer, *inner;
    cr_assert_eq(mh__gate_enter(&outer), (struct mh_recorder *)&rec);
    cr_assert_eq(mh__gate_enter(&inner), (struct mh_recorder *)&rec);
    mh__gate_leave(inner);
    mh__gate_leave(outer);
    mh__gate_close();
    struct mh__gate_slot *slot;
    cr_expect_null(mh__gate_enter(&slot), "a closed gate hands out no recorder");
    mh__gate_leave(slot);
}

/* More threads than lines of their own: all inside at once, held there until
 * released; close must wait for every one of them, overflow line included. */
enum { CROWD = 300 };
static pthread_barrier_t crowd_inside;
static atomic_int crowd_release, closed;

static void *crowd_member(void *arg)
{
    (void)arg;
    struct mh__gate_slot *slot;
    mh__gate_enter(&slot);
    pthread_barrier_wait(&crowd_inside);
    while (!atomic_load(&crowd_release))
        usleep(100);
    if (atomic_load(&closed))
        atomic_fetch_add(&used_after_close, 1);
    mh__gate_leave(slot);
    return NULL;
}

static void *closer(void *arg)
{
    (void)arg;
    mh__gate_close();
    atomic_store(&closed, 1);
    return NULL;
}

Test(gate, close_waits_for_a_crowd_beyond_the_lines, .timeout = 120)
{
    static pthread_t t[CROWD];
    struct fake_recorder rec = {1};
    atomic_store(&used_after_close, 0);
    mh__gate_open((struct mh_recorder *)&rec);
    pthread_barrier_init(&crowd_inside, NULL, CROWD + 1);
    for (int i = 0; i < CROWD; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, crowd_member, NULL), 0);
    pthread_barrier_wait(&crowd_inside);
    pthread_t c;
    pthread_create(&c, NULL, closer, NULL);
    usleep(50000);
    cr_expect_eq(atomic_load(&closed), 0, "close returned while threads were inside");
    atomic_store(&crowd_release, 1);
    for (int i = 0; i < CROWD; i++)
        pthread_join(t[i], NULL);
    pthread_join(c, NULL);
    cr_expect_eq(atomic_load(&closed), 1);
    cr_expect_eq(atomic_load(&used_after_close), 0,
                 "a thread was still inside after close returned");
    pthread_barrier_destroy(&crowd_inside);
}
