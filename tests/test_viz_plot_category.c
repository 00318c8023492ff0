/* test_viz_plot_category.c - the timeline coloured by memory category and
 * the multi-rank image: small runs with steps and phases built with the
 * writer in memory. Category mode must agree with the categories library
 * (bytes at the peak equal mh__lifetimes_live_by_category, mh__livecat gives
 * every allocation mh__lifetimes' category), its stacked areas must add up to
 * the allocated curve in every column, its legend must show every category's
 * swatch and its fills must differ from the allocation-site colours.
 * Several files must give one panel each, stacked, each with a title, the
 * worst rank's title carrying the note. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/memhist.h"
#include "categories.h"
#include "palette.h"
#include "plot.h"
#include "plot_int.h"
#include "png_out.h"
#include "test_viz_plot_util.h"

#define SEG 0x10000000ull

static void free_ev(struct run *b, uint64_t t_ms, uint64_t addr, uint64_t size, uint32_t stack)
{
    ev(b, MH_EV_FREE_REQUESTED, t_ms, addr, size, stack, 0);
    ev(b, MH_EV_FREE_COMPLETED, t_ms, addr, size, stack, 0);
}

/* Parameters before step 0; per step: an input, forward activations and a
 * temporary, backward gradients that live into the optimizer, optimizer
 * state created in step 0 and kept. `scale` multiplies the activations. */
static void training_run(struct run *b, uint64_t t_start, uint64_t scale)
{
    memset(b, 0, sizeof *b);
    cr_assert_eq(mh_writer_open_mem(NULL, &b->w), 0);
    mh_writer_set_device(b->w, 0, "Test GPU", 16ull << 30);
    static const char *const files[] = {"model.py", "train.py", "optim.py", "data.py"};
    for (int i = 0; i < 4; i++) {
        uint32_t f = (uint32_t)mh_writer_intern_frame(b->w, files[i], "fn", (uint32_t)(10 + i));
        b->stack[i] = (uint32_t)mh_writer_intern_stack(b->w, &f, 1);
    }
    uint64_t t = t_start;
    ev(b, MH_EV_SEGMENT_ALLOC, t, SEG, 512 * MIB * scale, b->stack[1], 0);
    ev(b, MH_EV_ALLOC, t + 1, SEG, 8 * MIB, b->stack[0], 0); /* parameter */
    for (uint32_t s = 0; s < 3; s++) {
        t += 100;
        ev(b, MH_EV_STEP_BEGIN, t, 0, 0, 0, s);
        ev(b, MH_EV_ALLOC, t + 2, SEG + 8 * MIB, 2 * MIB, b->stack[3], 0); /* input */
        ev(b, MH_EV_PHASE, t + 5, 0, 0, 0, MH_PHASE_FORWARD);
        ev(b, MH_EV_ALLOC, t + 10, SEG + 16 * MIB, 16 * MIB * scale, b->stack[0], 0);
        ev(b, MH_EV_ALLOC, t + 20, SEG + 160 * MIB, 4 * MIB, b->stack[0], 0);
        free_ev(b, t + 25, SEG + 160 * MIB, 4 * MIB, b->stack[0]); /* temporary */
        ev(b, MH_EV_PHASE, t + 40, 0, 0, 0, MH_PHASE_BACKWARD);
        ev(b, MH_EV_ALLOC, t + 45, SEG + 200 * MIB, 8 * MIB, b->stack[1], 0); /* gradient */
        free_ev(b, t + 50, SEG + 16 * MIB, 16 * MIB * scale, b->stack[0]);
        free_ev(b, t + 55, SEG + 8 * MIB, 2 * MIB, b->stack[3]);
        ev(b, MH_EV_PHASE, t + 60, 0, 0, 0, MH_PHASE_OPTIMIZER);
        if (s == 0)
            ev(b, MH_EV_ALLOC, t + 65, SEG + 300 * MIB, 16 * MIB, b->stack[2], 0); /* state */
        free_ev(b, t + 70, SEG + 200 * MIB, 8 * MIB, b->stack[1]);
        ev(b, MH_EV_STEP_END, t + 90, 0, 0, 0, s);
    }
    run_close(b);
}

static void opts_for(struct mh__plot_opts *o, int color)
{
    memset(o, 0, sizeof *o);
    o->width = 1000;
    o->height = 600;
    o->name = "train.memhist";
    o->color = color;
}

/* The records of the categories library, every allocation's once. */
struct all_recs {
    struct mh__alloc_rec rec[64];
    size_t n;
};

static int add_rec(void *user, const struct mh__alloc_rec *r)
{
    struct all_recs *a = user;
    cr_assert_lt(a->n, 64);
    a->rec[a->n++] = *r;
    return 0;
}

/* One pass of the reader through the model and `lt` (finished); each
 * record is added to `all` (if not NULL) when its life ends or at the end. */
static void replay_lifetimes(struct mh_reader *r, struct mh__lifetimes *lt, struct all_recs *all)
{
    struct mh_model *m;
    struct mh_model_opts mo;
    memset(&mo, 0, sizeof mo);
    cr_assert_eq(mh_model_new(&mo, &m), 0);
    cr_assert_eq(mh_reader_rewind(r), 0);
    struct mh_event e;
    struct mh_apply_result res;
    struct mh__life_change ch;
    while (mh_reader_next(r, &e) == 1) {
        memset(&res, 0, sizeof res);
        cr_assert_eq(mh_model_apply(m, &e, &res), 0);
        cr_assert_eq(mh__lifetimes_observe(lt, m, &e, &res, &ch), 0);
        if (all && ch.ended)
            add_rec(all, ch.ended);
    }
    mh_model_finish(m);
    cr_assert_eq(mh__lifetimes_finish(lt, all ? add_rec : NULL, all), 0);
    mh_model_free(m);
}

/* The categories library over the whole run: a first pass for the run's
 * facts, then a second that classifies every allocation (into `all`) and
 * keeps the records live right after event `index`. */
static struct mh__lifetimes *lifetimes_of(struct mh_reader *r, uint64_t index, struct all_recs *all)
{
    struct mh__lifetimes *first, *lt;
    cr_assert_eq(mh__lifetimes_new(&first), 0);
    replay_lifetimes(r, first, NULL);
    cr_assert_eq(mh__lifetimes_new_after(first, &lt), 0);
    cr_assert_eq(mh__lifetimes_keep_at(lt, index), 0);
    replay_lifetimes(r, lt, all);
    mh__lifetimes_free(first);
    return lt;
}

struct seen {
    uint8_t cat[4096]; /* by alloc event index, 0xFF = not reported */
};

static int on_live(void *user, const struct mh__livecat_end *end)
{
    ((struct seen *)user)->cat[end->tag] = end->category;
    return 0;
}

Test(plot_category, livecat_agrees_with_lifetimes)
{
    struct run b;
    training_run(&b, 0, 1);
    struct all_recs all = {.n = 0};
    struct mh__lifetimes *lt = lifetimes_of(b.r, 0, &all);
    struct seen seen;
    memset(&seen, 0xFF, sizeof seen);
    struct mh_model *m;
    struct mh__livecat *lc;
    struct mh_model_opts mo;
    memset(&mo, 0, sizeof mo);
    cr_assert_eq(mh_model_new(&mo, &m), 0);
    cr_assert_eq(mh__livecat_new(&lc), 0);
    cr_assert_eq(mh_reader_rewind(b.r), 0);
    struct mh_event e;
    struct mh_apply_result res;
    struct mh__livecat_end end;
    for (uint64_t i = 0; mh_reader_next(b.r, &e) == 1; i++) {
        memset(&res, 0, sizeof res);
        cr_assert_eq(mh_model_apply(m, &e, &res), 0);
        int rc = mh__livecat_observe(lc, m, &e, &res, i, &end);
        cr_assert_geq(rc, 0);
        if (rc == 1 && end.ended)
            seen.cat[end.tag] = end.category;
    }
    mh_model_finish(m);
    cr_assert_eq(mh__livecat_finish(lc, on_live, &seen), 0);
    size_t n = all.n;
    const struct mh__alloc_rec *recs = all.rec;
    cr_assert_eq(n, 1 + 3 * 4 + 1, "records: %zu", n);
    int kinds[MH__CAT_COUNT] = {0};
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(seen.cat[recs[i].alloc_index], recs[i].category,
                     "allocation at event %llu: livecat %d, lifetimes %d",
                     (unsigned long long)recs[i].alloc_index, seen.cat[recs[i].alloc_index],
                     recs[i].category);
        kinds[recs[i].category]++;
    }
    for (int k = 0; k < MH__CAT_UNKNOWN; k++)
        cr_assert_gt(kinds[k], 0, "no %s in the run", mh__category_name(k));
    mh__livecat_free(lc);
    mh_model_free(m);
    mh__lifetimes_free(lt);
    run_free(&b);
}

Test(plot_category, columns_add_up_and_peak_matches_the_library)
{
    struct run b;
    training_run(&b, 0, 1);
    struct mh__plot_opts o;
    opts_for(&o, MH__PLOT_COLOR_CATEGORY);
    char err[256];
    struct mh__plot_scan s;
    cr_assert_eq(mh__plot_scan_run(b.s, &o, &s, err, sizeof err), 0, "%s", err);
    struct mh__plot_cols c;
    for (int ncols = 7; ncols <= 900; ncols = ncols * 5 + 3) {
        cr_assert_eq(mh__plot_cols_run(b.s, &o, &s, ncols, s.win_first, s.win_last, &c), 0);
        cr_assert_eq(c.by_category, 1);
        cr_assert_eq(c.ngroups + 1, MH__CAT_COUNT);
        for (int i = 0; i < c.n; i++) {
            uint64_t sum = 0;
            for (unsigned g = 0; g <= c.ngroups; g++)
                sum += c.groups[(size_t)i * (c.ngroups + 1) + g];
            cr_assert_eq(sum, c.alloc[i], "%d columns, column %d: categories %llu != allocated %llu",
                         ncols, i, (unsigned long long)sum, (unsigned long long)c.alloc[i]);
        }
        struct mh__lifetimes *lt = lifetimes_of(b.r, s.peak.event_index, NULL);
        uint64_t want[MH__CAT_COUNT];
        cr_assert_eq(mh__lifetimes_live_by_category(lt, 0, s.peak.event_index, want, NULL), 0);
        for (int k = 0; k < MH__CAT_COUNT; k++)
            cr_assert_eq(c.cat_peak[k], want[k], "%s at the peak: plot %llu, library %llu",
                         mh__category_name(k), (unsigned long long)c.cat_peak[k],
                         (unsigned long long)want[k]);
        cr_assert_gt(want[MH__CAT_ACTIVATION], 0);
        mh__lifetimes_free(lt);
        mh__plot_cols_free(&c);
    }
    mh__plot_scan_free(&s);
    run_free(&b);
}

static void render(struct run *b, const struct mh__plot_opts *o, struct mh__canvas *img)
{
    struct mh__sink sink;
    char err[256];
    mh__sink_init_mem(&sink);
    cr_assert_eq(mh__plot_render(b->s, o, &sink, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(mh__png_read(sink.buf, sink.len, img), 0);
    mh__sink_free(&sink);
}

static int count_colour(const struct mh__canvas *img, int x0, int x1, int y0, int y1, uint32_t rgb)
{
    int n = 0;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++)
            n += mh__canvas_get(img, x, y) == rgb;
    return n;
}

Test(plot_category, colours_and_legend_differ_from_stack_mode)
{
    struct run b;
    training_run(&b, 0, 1);
    struct mh__plot_opts o;
    struct mh__canvas cat, stack;
    opts_for(&o, MH__PLOT_COLOR_CATEGORY);
    render(&b, &o, &cat);
    opts_for(&o, MH__PLOT_COLOR_STACK);
    render(&b, &o, &stack);
    struct mh__plot_frame f;
    mh__plot_layout(o.width, o.height, MH__PLOT_TOP, &f);
    int px0 = f.x, px1 = f.x + f.w - 1, py0 = f.y, py1 = f.y + f.h - 1;
    /* panel: category fills in category mode, site fills in stack mode */
    for (int k = 0; k < MH__CAT_COUNT; k++) {
        int in_cat = count_colour(&cat, px0, px1, py0, py1, mh__palette_category(k));
        int in_stack = count_colour(&stack, px0, px1, py0, py1, mh__palette_category(k));
        if (k != MH__CAT_UNKNOWN)
            cr_assert_gt(in_cat, 20, "no %s area in the panel", mh__category_name(k));
        cr_assert_eq(in_stack, 0, "%s colour used in stack mode", mh__category_name(k));
    }
    for (unsigned g = 0; g < MH__PALETTE_GROUPS; g++)
        cr_assert_eq(count_colour(&cat, px0, px1, py0, py1, mh__palette_group(g)), 0,
                     "site colour %u in category mode", g);
    cr_assert_gt(count_colour(&stack, px0, px1, py0, py1, mh__palette_group(0)), 20);
    /* legend: a swatch row per category, in enum order, top to bottom */
    int last_y = -1;
    for (int k = 0; k < MH__CAT_COUNT; k++) {
        int y = -1;
        for (int yy = f.legend_y; yy < o.height && y < 0; yy++)
            if (mh__canvas_get(&cat, f.legend_x + 3, yy) == mh__palette_category(k))
                y = yy;
        cr_assert_gt(y, last_y, "legend swatch of %s missing or out of order",
                     mh__category_name(k));
        last_y = y;
    }
    mh__canvas_release(&cat);
    mh__canvas_release(&stack);
    run_free(&b);
}

/* Rightmost pixel of title text in rows [y0, y1], or -1. */
static int title_right(const struct mh__canvas *img, int y0, int y1)
{
    int right = -1;
    for (int y = y0; y <= y1; y++)
        for (int x = 0; x < img->width; x++)
            if (mh__canvas_get(img, x, y) == MH__COL_TEXT && x > right)
                right = x;
    return right;
}

Test(plot_category, ranks_stack_panels_and_mark_the_worst)
{
    struct run a, b;
    training_run(&a, 0, 1);
    training_run(&b, 50, 4); /* overlaps in time, reserves more: the worst */
    struct mh__session *rd[2] = {a.s, b.s};
    const char *names[2] = {"rank0.memhist", "rank1.memhist"};
    struct mh__plot_opts o;
    opts_for(&o, MH__PLOT_COLOR_STACK);
    o.height = 400;
    struct mh__sink sink;
    struct mh__plot_result res[2];
    char err[256];
    mh__sink_init_mem(&sink);
    cr_assert_eq(mh__plot_render_ranks(rd, names, 2, &o, &sink, res, err, sizeof err), 0,
                 "%s", err);
    struct mh__canvas img;
    cr_assert_eq(mh__png_read(sink.buf, sink.len, &img), 0);
    cr_assert_eq(img.width, 1000);
    cr_assert_eq(img.height, 800);
    cr_assert_eq(res[0].empty + res[1].empty, 0);
    int r0 = title_right(&img, 8, 28), r1 = title_right(&img, 408, 428);
    cr_assert_gt(r0, 200, "first panel has no title");
    cr_assert_gt(r1, r0 + 100, "the worst rank's title has no note (%d vs %d)", r1, r0);
    cr_assert_eq(mh__canvas_get(&img, 500, 400), MH__COL_AXIS, "no rule between the panels");
    mh__canvas_release(&img);
    mh__sink_free(&sink);

    o.kind = MH__PLOT_SEGMENTS;
    mh__sink_init_mem(&sink);
    cr_assert_eq(mh__plot_render_ranks(rd, names, 2, &o, &sink, NULL, err, sizeof err),
                 MH_EINVAL);
    cr_assert(strstr(err, "segment view draws one file") != NULL, "%s", err);
    o.kind = MH__PLOT_TIMELINE;
    o.height = 9000;
    cr_assert_eq(mh__plot_render_ranks(rd, names, 2, &o, &sink, NULL, err, sizeof err),
                 MH_EINVAL);
    cr_assert(strstr(err, "at most 16384 pixels tall") != NULL, "%s", err);
    mh__sink_free(&sink);
    run_free(&a);
    run_free(&b);
}

Test(plot_category, ranks_share_the_time_axis_only_when_they_overlap)
{
    struct run a, b;
    training_run(&a, 0, 1);
    training_run(&b, 10000, 1); /* ten seconds later: no overlap */
    struct mh__session *rd[2] = {a.s, b.s};
    const char *names[2] = {"a.memhist", "b.memhist"};
    struct mh__plot_opts o;
    opts_for(&o, MH__PLOT_COLOR_CATEGORY);
    o.height = 400;
    struct mh__sink s1, s2;
    char err[256];
    mh__sink_init_mem(&s1);
    mh__sink_init_mem(&s2);
    cr_assert_eq(mh__plot_render_ranks(rd, names, 2, &o, &s1, NULL, err, sizeof err), 0);
    /* separate axes: each panel draws like its own file alone */
    struct mh__session *only_b[1] = {b.s};
    cr_assert_eq(mh__plot_render_ranks(only_b, names + 1, 1, &o, &s2, NULL, err, sizeof err),
                 0);
    struct mh__canvas both, one;
    cr_assert_eq(mh__png_read(s1.buf, s1.len, &both), 0);
    cr_assert_eq(mh__png_read(s2.buf, s2.len, &one), 0);
    cr_assert_eq(one.height, 400);
    /* the second panel's plot area equals b alone (titles differ: a single
     * file has no worst-rank note) */
    cr_assert_eq(memcmp(both.px + (size_t)(400 + 60) * 1000 * 3, one.px + (size_t)60 * 1000 * 3,
                        (size_t)300 * 1000 * 3),
                 0, "separate time axes expected for runs that do not overlap");
    mh__canvas_release(&both);
    mh__canvas_release(&one);
    mh__sink_free(&s1);
    mh__sink_free(&s2);
    run_free(&a);
    run_free(&b);
}
