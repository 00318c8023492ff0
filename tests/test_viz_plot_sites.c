/* test_viz_plot_sites.c - what the timeline's coloured groups name
 * (viz/plot/plot_sites.c, plot_rank.c): with module scopes in the
 * recording, the layers `memhist layers` reports (two blocks running the
 * same code are two groups), the bytes of each exactly what it held at the
 * peak, frees matched to their allocation's module; without scopes, the
 * allocation site as before. */
#include <criterion/criterion.h>
#include <string.h>

#include "memhist/memhist.h"
#include "plot_int.h"
#include "test_viz_plot_util.h"

#define SEG 0x20000000ull

static void on_thread(struct run *b, int kind, uint64_t t_ms, uint64_t addr, uint64_t size,
                      uint32_t str)
{
    struct mh_event e;
    memset(&e, 0, sizeof e);
    e.time_ns = T0 + t_ms * MS;
    e.kind = (uint8_t)kind;
    e.addr = addr;
    e.size = size;
    e.str = str;
    e.stack = kind == MH_EV_ALLOC || kind == MH_EV_SEGMENT_ALLOC ? b->stack[0] : 0;
    e.thread = 7;
    e.stream = 7;
    e.device = (int16_t)(kind == MH_EV_SCOPE_ENTER || kind == MH_EV_SCOPE_EXIT ? -1 : 0);
    cr_assert_eq(mh_writer_event(b->w, &e), 0);
}

/* Two blocks run the same line of code (one stack): block 0 keeps 8 MiB,
 * block 1 keeps 24 MiB and frees a 4 MiB temporary; the peak is at the end
 * of block 1's forward. */
static void two_blocks(struct run *b, int scopes)
{
    memset(b, 0, sizeof *b);
    cr_assert_eq(mh_writer_open_mem(NULL, &b->w), 0);
    mh_writer_set_device(b->w, 0, "Test GPU", 16ull << 30);
    uint32_t f = (uint32_t)mh_writer_intern_frame(b->w, "model.py", "forward", 12);
    b->stack[0] = (uint32_t)mh_writer_intern_stack(b->w, &f, 1);
    uint32_t h0 = (uint32_t)mh_writer_intern_string(b->w, "model.h.0.mlp", 13);
    uint32_t h1 = (uint32_t)mh_writer_intern_string(b->w, "model.h.1.mlp", 13);
    on_thread(b, MH_EV_SEGMENT_ALLOC, 0, SEG, 64 * MIB, 0);
    if (scopes)
        on_thread(b, MH_EV_SCOPE_ENTER, 1, 0, 0, h0);
    on_thread(b, MH_EV_ALLOC, 2, SEG, 8 * MIB, 0);
    if (scopes) {
        on_thread(b, MH_EV_SCOPE_EXIT, 3, 0, 0, h0);
        on_thread(b, MH_EV_SCOPE_ENTER, 4, 0, 0, h1);
    }
    on_thread(b, MH_EV_ALLOC, 5, SEG + 8 * MIB, 4 * MIB, 0);
    on_thread(b, MH_EV_ALLOC, 6, SEG + 12 * MIB, 24 * MIB, 0);
    on_thread(b, MH_EV_FREE_REQUESTED, 7, SEG + 8 * MIB, 4 * MIB, 0);
    on_thread(b, MH_EV_FREE_COMPLETED, 7, SEG + 8 * MIB, 4 * MIB, 0);
    if (scopes)
        on_thread(b, MH_EV_SCOPE_EXIT, 8, 0, 0, h1);
    on_thread(b, MH_EV_FREE_REQUESTED, 9, SEG, 8 * MIB, 0);
    on_thread(b, MH_EV_FREE_COMPLETED, 9, SEG, 8 * MIB, 0);
    run_close(b);
}

static void scan_and_rank(struct run *b, struct mh__plot_scan *s)
{
    struct mh__plot_opts o;
    memset(&o, 0, sizeof o);
    char err[256] = "";
    cr_assert_eq(mh__plot_scan_run(b->s, &o, s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(mh__plot_scan_rank(b->s, s, 8), 0);
}

Test(viz_plot_sites, with_module_scopes_the_groups_are_the_modules)
{
    struct run b;
    struct mh__plot_scan s;
    two_blocks(&b, 1);
    scan_and_rank(&b, &s);
    cr_expect_eq(s.peak.value, 36 * MIB);
    cr_assert_eq(s.ngroups, 2, "two modules, not one site: %u groups", s.ngroups);
    cr_expect_str_eq(s.labels[0], "model.h.1");
    cr_expect_eq(s.group_peak[0], 28 * MIB, "block 1 holds its two blocks at the peak");
    cr_expect_str_eq(s.labels[1], "model.h.0");
    cr_expect_eq(s.group_peak[1], 8 * MIB);
    cr_expect_eq(s.group_peak[2], 0, "nothing else");
    mh__plot_scan_free(&s);
    run_free(&b);
}

Test(viz_plot_sites, without_scopes_the_groups_are_allocation_sites)
{
    struct run b;
    struct mh__plot_scan s;
    two_blocks(&b, 0);
    scan_and_rank(&b, &s);
    cr_assert_eq(s.ngroups, 1, "one line of code: %u groups", s.ngroups);
    cr_expect_str_eq(s.labels[0], "model.py:12 forward");
    cr_expect_eq(s.group_peak[0], 36 * MIB);
    mh__plot_scan_free(&s);
    run_free(&b);
}
