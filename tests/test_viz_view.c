/* test_viz_view.c - `memhist view`'s page writer (viz/view/view_html.h): the
 * data block is one valid JSON document that no text of the recording can
 * end early (a frame and a module named "</script>..." come back whole),
 * the page loads nothing from elsewhere, and the limits hold: raw events
 * past --events are dropped and counted, moments stay within their limit,
 * and trees keep at most their node limit. Recordings come from the
 * simulator's GPT workload and from events written here. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "json_read.h"
#include "memhist/memhist.h"
#include "sim.h"
#include "view_html.h"
#include "workload.h"

#define EVIL "</script><script>alert(\"x\\\\\")</script>"

struct page {
    struct mh_writer *w;
    struct mh__analysis a;
    struct mh__sink out;
    struct mh__jr_doc doc;
    struct mh__jr_value root;
};

static void put(struct mh_writer *w, int kind, uint64_t t, uint64_t addr, uint64_t size,
                uint32_t stack, uint32_t str)
{
    struct mh_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = (uint8_t)kind;
    ev.time_ns = 1000000000ull + t;
    ev.addr = addr;
    ev.size = size;
    ev.stack = stack;
    ev.str = str;
    ev.thread = 7;
    cr_assert_eq(mh_writer_event(w, &ev), 0);
}

/* Writes the page of the recording in p->w and parses its data block. */
static void make_page(struct page *p, const struct mh__view_opts *o)
{
    const void *data;
    size_t len;
    cr_assert_eq(mh_writer_close(p->w), 0);
    cr_assert_eq(mh_writer_mem(p->w, &data, &len), 0);
    const struct mh__analysis_want want = {MH__WANT_WHATIF_TREND, 1, 1};
    cr_assert_eq(mh__analysis_open_mem(data, len, "run", &want, &p->a), 0);
    struct mh__view_part *part;
    cr_assert_eq(mh__view_part_make(&p->a, o, &part), 0);
    mh__sink_init_mem(&p->out);
    cr_assert_eq(mh__view_write(&p->out, "the title", &part, NULL, 1, 0), 0);
    mh__view_part_free(part);
    mh__sink_write(&p->out, "", 1); /* a C string */
    const char *open = "<script type=\"application/json\" id=\"mh-data\">";
    char *from = strstr(p->out.buf, open);
    cr_assert_not_null(from);
    from += strlen(open);
    char *to = strstr(from, "</script>");
    cr_assert_not_null(to);
    char err[160];
    cr_assert_eq(mh__jr_parse(&p->doc, from, (size_t)(to - from), 0, 0, &p->root, err, sizeof err),
                 0, "the data block is not one JSON document: %s", err);
}

static void page_free(struct page *p)
{
    mh__sink_free(&p->out);
    mh__analysis_close(&p->a);
    mh_writer_free_mem(p->w);
}

/* The first device object of the first file. */
static struct mh__jr_value first_device(const struct page *p)
{
    struct mh__jr_value files, file, devs, dev;
    size_t pos = 0;
    cr_assert(mh__jr_find(&p->doc, &p->root, "files", &files));
    cr_assert(mh__jr_next(&p->doc, &files, &pos, NULL, &file));
    cr_assert(mh__jr_find(&p->doc, &file, "devices", &devs));
    pos = 0;
    cr_assert(mh__jr_next(&p->doc, &devs, &pos, NULL, &dev));
    return dev;
}

static size_t count(const struct page *p, const struct mh__jr_value *v)
{
    struct mh__jr_value item;
    size_t pos = 0, n = 0;
    while (mh__jr_next(&p->doc, v, &pos, NULL, &item))
        n++;
    return n;
}

Test(view_page, no_recorded_text_ends_the_data_block)
{
    struct page p;
    memset(&p, 0, sizeof p);
    struct mh_writer_opts wo = {.source = "recorded"};
    cr_assert_eq(mh_writer_open_mem(&wo, &p.w), 0);
    uint32_t fr = (uint32_t)mh_writer_intern_frame(p.w, "/x/" EVIL ".py", EVIL, 3);
    uint32_t st = (uint32_t)mh_writer_intern_stack(p.w, &fr, 1);
    uint32_t mod = (uint32_t)mh_writer_intern_string(p.w, "net." EVIL, strlen("net." EVIL));
    const uint64_t seg = 0x7f0000000000ull;
    put(p.w, MH_EV_SEGMENT_ALLOC, 0, seg, 64 << 20, st, 0);
    put(p.w, MH_EV_SCOPE_ENTER, 1, 0, 0, 0, mod);
    put(p.w, MH_EV_ALLOC, 2, seg, 4 << 20, st, 0);
    put(p.w, MH_EV_SCOPE_EXIT, 3, 0, 0, 0, mod);
    make_page(&p, NULL);
    struct mh__jr_value files, file, strings, s;
    size_t pos = 0, found = 0;
    cr_assert(mh__jr_find(&p.doc, &p.root, "files", &files));
    cr_assert(mh__jr_next(&p.doc, &files, &pos, NULL, &file));
    cr_assert(mh__jr_find(&p.doc, &file, "strings", &strings));
    for (pos = 0; mh__jr_next(&p.doc, &strings, &pos, NULL, &s);) {
        char text[256];
        mh__jr_string(&p.doc, &s, text, sizeof text);
        found += strstr(text, EVIL) != NULL;
    }
    cr_expect_geq(found, 2, "the frame's and the module's names come back whole (%zu)", found);
    cr_expect_null(strstr(p.out.buf, "http://"), "the page names no address to load");
    cr_expect_null(strstr(p.out.buf, "https://"));
    cr_expect_not_null(strstr(p.out.buf, "default-src 'none'"), "and forbids every load");
    page_free(&p);
}

Test(view_page, limits_hold_and_say_what_they_left_out)
{
    struct page p;
    memset(&p, 0, sizeof p);
    const struct mh__workload *wl = mh__workload_find("gpt");
    int64_t values[MH__WORKLOAD_MAX_PARAMS];
    char err[128];
    cr_assert_eq(mh__workload_parse_params(wl,
                                           "layers=2,hidden=256,heads=4,seq=256,batch=2,"
                                           "vocab=1000,seqvar=30",
                                           values, err, sizeof err),
                 0, "%s", err);
    struct mh_writer_opts wo = {.source = "simulated"};
    cr_assert_eq(mh_writer_open_mem(&wo, &p.w), 0);
    struct mh__sim_opts so;
    memset(&so, 0, sizeof so);
    so.writer = p.w;
    struct mh__sim *sim;
    struct mh__workload_result res;
    cr_assert_eq(mh__sim_new(&so, &sim), 0);
    cr_assert_eq(mh__workload_run(wl, sim, values, 30, 1, &res), 0);
    mh__sim_free(sim);
    const struct mh__view_opts o = {.max_moments = 20, .max_tree_nodes = 12, .max_events = 100};
    make_page(&p, &o);
    struct mh__jr_value dev = first_device(&p), ev, list, dropped, moments, m, trees, t, nodes;
    cr_assert(mh__jr_find(&p.doc, &dev, "events", &ev));
    cr_assert(mh__jr_find(&p.doc, &ev, "list", &list));
    cr_assert(mh__jr_find(&p.doc, &ev, "dropped", &dropped));
    uint64_t ndropped;
    cr_assert_eq(mh__jr_u64(&p.doc, &dropped, &ndropped), 0);
    cr_expect_eq(count(&p, &list), 100, "the raw events stop at the limit");
    cr_expect_gt(ndropped, 0, "and those left out are counted");
    cr_assert(mh__jr_find(&p.doc, &dev, "moments", &moments));
    size_t nm = count(&p, &moments), pos = 0;
    cr_expect_leq(nm, 20, "%zu moments", nm);
    cr_expect_gt(nm, 16, "the peak and the samples at least");
    while (mh__jr_next(&p.doc, &moments, &pos, NULL, &m)) {
        cr_assert(mh__jr_find(&p.doc, &m, "trees", &trees));
        size_t tp = 0;
        while (mh__jr_next(&p.doc, &trees, &tp, NULL, &t)) {
            cr_assert(mh__jr_find(&p.doc, &t, "nodes", &nodes));
            cr_expect_leq(count(&p, &nodes), 13, "a tree keeps its largest nodes and its root");
        }
    }
    page_free(&p);
}
