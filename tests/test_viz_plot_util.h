/* test_viz_plot_util.h - small recordings built in memory for the plot tests:
 * events written with the writer (times in ms from a fixed start, stream 7,
 * device 0), then read back through a reader. A header, so the test glob
 * does not build it on its own. */
#ifndef MH_TEST_VIZ_PLOT_UTIL_H
#define MH_TEST_VIZ_PLOT_UTIL_H

#include <criterion/criterion.h>
#include <string.h>

#include "memhist/memhist.h"
#include "session.h"

#define MS 1000000ull
#define MIB (1024ull * 1024ull)
#define T0 1700000000000000000ull

struct run {
    struct mh_writer *w;
    uint32_t stack[4];
    struct mh_reader *r;
    struct mh__session *s;
};

static inline void ev(struct run *b, int kind, uint64_t t_ms, uint64_t addr, uint64_t size,
                      uint32_t stack, uint32_t aux)
{
    struct mh_event e;
    memset(&e, 0, sizeof e);
    e.time_ns = T0 + t_ms * MS;
    e.kind = (uint8_t)kind;
    e.addr = addr;
    e.size = size;
    e.stack = stack;
    e.aux = aux;
    e.stream = 7;
    cr_assert_eq(mh_writer_event(b->w, &e), 0);
}

/* Closes the writer and opens a reader (for the tests' own checks) and a
 * replay session (for the plot) over what it wrote. */
static inline void run_close(struct run *b)
{
    const void *data;
    size_t len;
    cr_assert_eq(mh_writer_close(b->w), 0);
    cr_assert_eq(mh_writer_mem(b->w, &data, &len), 0);
    cr_assert_eq(mh_reader_open_mem(data, len, &b->r), 0);
    cr_assert_eq(mh__session_open_mem(data, len, "run", &b->s), 0);
}

static inline void run_free(struct run *b)
{
    mh_reader_close(b->r);
    mh__session_close(b->s);
    mh_writer_free_mem(b->w);
}

#endif
