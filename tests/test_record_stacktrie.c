/* test_record_stacktrie.c - the pieces of memhist's own stack capture that
 * need no interpreter: the lock-free stack trie (also under concurrent
 * insertion), the line-table parsers on hand-made tables, native-only
 * capture and resolution into a recorder. The CPython walker itself is
 * checked against the interpreter in tests/python/test_record_pystack.py. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "memhist/memhist.h"
#include "pystack.h"

Test(stacktrie, a_child_is_found_again_and_knows_its_parent)
{
    struct mh__fkey a = {7, 100}, b = {7, 102}, n = {MH__NATIVE, 0x401000};
    uint32_t x = mh__trie_child(0, &a), y = mh__trie_child(x, &b), z = mh__trie_child(x, &n);
    cr_assert(x && y && z);
    cr_assert_neq(y, z);
    cr_assert_eq(mh__trie_child(0, &a), x);
    cr_assert_eq(mh__trie_child(x, &b), y);
    cr_assert_neq(mh__trie_child(y, &b), y, "same frame under another parent is another node");
    uint32_t parent;
    struct mh__fkey k;
    cr_assert_eq(mh__trie_node(z, &parent, &k), 0);
    cr_assert_eq(parent, x);
    cr_assert_eq(k.code, MH__NATIVE);
    cr_assert_eq(k.pos, 0x401000);
    cr_assert_eq(mh__trie_node(0, &parent, &k), -1);
    cr_assert_eq(mh__trie_node(mh__trie_count() + 1, &parent, &k), -1);
}

#define PATHS 300
#define DEPTH 12
#define THREADS 4

struct walker {
    uint32_t leaf[PATHS];
};

static struct walker walkers[THREADS];

/* Every thread inserts the same paths, each in its own order. */
static void *insert_all(void *arg)
{
    size_t t = (size_t)arg;
    for (int i = 0; i < PATHS; i++) {
        int p = (int)((i * 7 + t * 101) % PATHS);
        uint32_t node = 0;
        for (int d = 0; d < DEPTH; d++) {
            struct mh__fkey k = {1000 + (uint32_t)(p % (d + 2)), (uint64_t)(p * 31 + d)};
            node = mh__trie_child(node, &k);
        }
        walkers[t].leaf[p] = node;
    }
    return NULL;
}

Test(stacktrie, threads_inserting_the_same_stacks_get_the_same_nodes)
{
    pthread_t th[THREADS];
    uint32_t before = mh__trie_count();
    for (size_t t = 0; t < THREADS; t++)
        cr_assert_eq(pthread_create(&th[t], NULL, insert_all, (void *)t), 0);
    for (size_t t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (int p = 0; p < PATHS; p++) {
        cr_assert_neq(walkers[0].leaf[p], 0);
        for (int t = 1; t < THREADS; t++)
            cr_assert_eq(walkers[t].leaf[p], walkers[0].leaf[p], "path %d thread %d", p, t);
    }
    /* at most one node per distinct (parent, frame) plus losers' leftovers */
    cr_assert_leq(mh__trie_count() - before, (uint32_t)(PATHS * DEPTH * THREADS));
    cr_assert_geq(mh__trie_count() - before, (uint32_t)PATHS);
}

Test(linetable, location_table_of_311_and_later)
{
    /* no-column +2 (3 units), one-line +1 (2 units), none (1 unit), long -3 (1 unit) */
    const uint8_t t[] = {0xEA, 0x04, 0xD9, 0x00, 0x05, 0xF8, 0xF0, 0x07, 0x00, 0x01, 0x02};
    int first = 10;
    cr_assert_eq(mh__linetable_line(11, t, sizeof t, first, -1), 10);
    cr_assert_eq(mh__linetable_line(11, t, sizeof t, first, 0), 12);
    cr_assert_eq(mh__linetable_line(11, t, sizeof t, first, 4), 12);
    cr_assert_eq(mh__linetable_line(11, t, sizeof t, first, 6), 13);
    cr_assert_eq(mh__linetable_line(12, t, sizeof t, first, 8), 13);
    cr_assert_eq(mh__linetable_line(13, t, sizeof t, first, 10), -1);
    cr_assert_eq(mh__linetable_line(13, t, sizeof t, first, 12), 10);
    cr_assert_eq(mh__linetable_line(13, t, sizeof t, first, 14), -1, "past the end");
    cr_assert_eq(mh__linetable_line(13, t, 2, first, 8), -1, "cut table");
}

Test(linetable, address_line_pairs_of_310)
{
    /* [0,6) +1; empty range +1; [6,10) no line; [10,12) -2 */
    const uint8_t t[] = {6, 1, 0, 1, 4, (uint8_t)-128, 2, (uint8_t)-2};
    cr_assert_eq(mh__linetable_line(10, t, sizeof t, 20, 0), 21);
    cr_assert_eq(mh__linetable_line(10, t, sizeof t, 20, 5), 21);
    cr_assert_eq(mh__linetable_line(10, t, sizeof t, 20, 6), -1);
    cr_assert_eq(mh__linetable_line(10, t, sizeof t, 20, 10), 20);
    cr_assert_eq(mh__linetable_line(10, t, sizeof t, 20, 12), -1);
    cr_assert_eq(mh__linetable_line(10, t, 1, 20, 0), -1, "odd byte left over");
}

static int namer(void *user, uintptr_t ip, char *file, size_t fc, char *func, size_t nc,
                 uint32_t *line)
{
    if (ip == 0xdead)
        return -1;
    snprintf(file, fc, "lib.so");
    snprintf(func, nc, "fn_%lx", (unsigned long)ip);
    *line = (uint32_t)(ip & 0xff);
    return 0;
}

Test(stackcap, native_stacks_resolve_innermost_first_into_a_recorder)
{
    char why[256];
    cr_assert_eq(mh__stack_init(why, sizeof why), 0, "%s", why);
    cr_assert(strstr(why, "no Python"), "%s", why);
    uintptr_t ips[] = {0x1111, 0x2222, 0xdead, 0x3333}; /* ips[0]: the unwinder's own frame */
    uint32_t node = mh__stack_capture(ips, 4, 0);
    cr_assert_neq(node, 0);
    cr_assert_eq(mh__stack_capture(ips, 4, 0), node, "the same stack again");
    char path[256];
    snprintf(path, sizeof path, "%s/stackcap.%d.memhist", MH_BINARY_DIR, (int)getpid());
    struct mh_recorder *rec;
    cr_assert_eq(mh_recorder_open(path, NULL, &rec), 0);
    uint32_t sid = mh__stack_resolve(rec, node, namer, NULL);
    cr_assert_neq(sid, 0);
    cr_assert_eq(mh__stack_resolve(rec, node, namer, NULL), sid, "cached");
    char text[512];
    cr_assert_gt(mh__stack_describe(node, text, sizeof text), 0);
    cr_assert_str_eq(text, "0x2222\n0xdead\n0x3333\n");
    struct mh_event ev = {.kind = MH_EV_ALLOC,
                          .time_ns = mh_clock_ns(),
                          .addr = 0x1000,
                          .size = 64,
                          .stack = sid,
                          .thread = mh_thread_id()};
    cr_assert_eq(mh_emit(rec, &ev), 0);
    cr_assert_eq(mh_recorder_close(rec), 0);
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open(path, &r), 0);
    struct mh_event got;
    int k;
    while ((k = mh_reader_next(r, &got)) == 1)
        cr_assert_eq(got.stack, sid);
    cr_assert_eq(k, 0);
    const uint32_t *frames;
    size_t n;
    int src = mh_reader_stack(r, sid, &frames, &n);
    cr_assert_eq(src, 0, "stack %u: %d", sid, src);
    cr_assert_eq(n, 3);
    struct mh_frame f;
    cr_assert_eq(mh_reader_frame(r, frames[0], &f), 0);
    cr_assert_str_eq(f.func, "fn_2222");
    cr_assert_eq(f.line, 0x22);
    cr_assert_eq(mh_reader_frame(r, frames[1], &f), 0);
    cr_assert_str_eq(f.file, "??", "an address the namer does not know");
    cr_assert_str_eq(f.func, "0xdead");
    mh_reader_close(r);
    unlink(path);
}
