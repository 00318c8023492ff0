/* test_analysis_flame.c - the flame tree (src/analysis/flame.h): every
 * node's bytes are its own plus its children's, children never exceed their
 * parent, the folded lines sum to the root, frame names are made safe (no
 * ';', newline or bad UTF-8), children come in natural order, and the tree
 * of a recording's live set at the peak holds exactly the bytes the model
 * has allocated there on the device asked for, by module path (tagged
 * parameters under their names) or by stack. Recordings are written
 * here by hand and by the simulator's GPT workload. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "flame.h"
#include "moment.h"
#include "memhist/memhist.h"
#include "sim.h"
#include "utf8.h"
#include "workload.h"

/* Checks the sums of every node; returns the root's bytes. */
static uint64_t check_sums(const struct mh__flame *f)
{
    size_t n;
    const struct mh__flame_node *nd = mh__flame_nodes(f, &n);
    cr_assert_gt(n, 0);
    for (size_t i = 0; i < n; i++) {
        uint64_t kids = 0, cats = 0;
        for (uint32_t c = nd[i].first_child; c != MH__FLAME_NONE; c = nd[c].next_sibling) {
            cr_expect_leq(nd[c].bytes, nd[i].bytes, "child %s > parent %s", nd[c].name, nd[i].name);
            cr_expect_eq(nd[c].parent, (uint32_t)i);
            cr_expect_eq(nd[c].depth, nd[i].depth + 1);
            kids += nd[c].bytes;
        }
        for (int k = 0; k < MH__CAT_COUNT; k++)
            cats += nd[i].by_category[k];
        cr_expect_eq(nd[i].bytes, nd[i].self + kids, "node %s: %" PRIu64 " != self + children",
                     nd[i].name, nd[i].bytes);
        cr_expect_eq(cats, nd[i].bytes, "node %s: categories do not sum", nd[i].name);
    }
    return nd[0].bytes;
}

struct folded {
    uint64_t sum;
    size_t lines;
    int bad;
    char first[512];
};

static int on_line(void *user, const char *stack, uint64_t bytes)
{
    struct folded *fo = user;
    if (strchr(stack, '\n') || strchr(stack, '\r') || stack[0] == '\0' || strstr(stack, ";;") ||
        !mh__utf8_clean(stack, strlen(stack), MH__UTF8_ESC_CONTROL))
        fo->bad = 1;
    if (fo->lines++ == 0)
        snprintf(fo->first, sizeof fo->first, "%s", stack);
    fo->sum += bytes;
    return 0;
}

Test(flame_tree, sums_fold_and_order)
{
    struct mh__flame *f;
    cr_assert_eq(mh__flame_new("all", &f), 0);
    const char *a[] = {"model", "h", "10"}, *b[] = {"model", "h", "2"}, *c[] = {"model"};
    uint32_t la, lb, lc;
    cr_assert_eq(mh__flame_path(f, 0, a, NULL, 3, MH__FLAME_MODULE, &la), 0);
    cr_assert_eq(mh__flame_path(f, 0, b, NULL, 3, MH__FLAME_MODULE, &lb), 0);
    cr_assert_eq(mh__flame_path(f, 0, c, NULL, 1, MH__FLAME_MODULE, &lc), 0);
    uint32_t again;
    cr_assert_eq(mh__flame_path(f, 0, a, NULL, 3, MH__FLAME_MODULE, &again), 0);
    cr_expect_eq(again, la, "the same path gives the same node");
    mh__flame_add(f, la, 1000, MH__CAT_ACTIVATION);
    mh__flame_add(f, la, 24, MH__CAT_GRADIENT);
    mh__flame_add(f, lb, 300, MH__CAT_ACTIVATION);
    mh__flame_add(f, lc, 7, MH__CAT_PARAMETER);
    mh__flame_finish(f);
    cr_expect_eq(check_sums(f), 1331);
    size_t n;
    const struct mh__flame_node *nd = mh__flame_nodes(f, &n);
    cr_expect_eq(nd[la].count, 2);
    cr_expect_eq(mh__flame_main_category(&nd[la]), MH__CAT_ACTIVATION);
    uint32_t h = nd[la].parent;
    cr_expect_str_eq(nd[nd[h].first_child].name, "2", "natural order: 2 before 10");
    struct folded fo = {0};
    cr_assert_eq(mh__flame_fold(f, on_line, &fo), 0);
    cr_expect_eq(fo.sum, 1331);
    cr_expect_eq(fo.lines, 3, "one line per node with self bytes");
    cr_expect_str_eq(fo.first, "model", "depth first, the parent's own bytes first");
    cr_expect_eq(fo.bad, 0);
    mh__flame_free(f);
}

Test(flame_tree, names_made_safe)
{
    char buf[64];
    cr_expect_str_eq(mh__flame_safe_name("a;b", buf, sizeof buf), "a\\x3bb");
    cr_expect_str_eq(mh__flame_safe_name("line\nbreak", buf, sizeof buf), "line\\x0abreak");
    cr_expect_str_eq(mh__flame_safe_name("bad\xff", buf, sizeof buf), "bad\\xff");
    cr_expect_str_eq(mh__flame_safe_name("", buf, sizeof buf), "<unnamed>");
    cr_expect_str_eq(mh__flame_safe_name("caf\xc3\xa9", buf, sizeof buf), "caf\xc3\xa9");
    /* a cut never leaves half a character */
    char small[6];
    mh__flame_safe_name("ab\xc3\xa9\xc3\xa9", small, sizeof small);
    cr_expect(mh__utf8_clean(small, strlen(small), MH__UTF8_ESC_CONTROL), "'%s'", small);
}

/* ---- from recordings -------------------------------------------------------- */
static char *write_temp(const void *data, size_t len)
{
    char *path = strdup("/tmp/mh_flame_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
    return path;
}

static char *close_to_temp(struct mh_writer *w)
{
    const void *data;
    size_t len;
    cr_assert_eq(mh_writer_close(w), 0);
    cr_assert_eq(mh_writer_mem(w, &data, &len), 0);
    char *path = write_temp(data, len);
    mh_writer_free_mem(w);
    return path;
}

static void put_dev(struct mh_writer *w, int device, int kind, uint64_t t, uint64_t addr,
                    uint64_t size, uint32_t stack, uint32_t str, uint32_t aux)
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
    ev.aux = aux;
    ev.device = (int16_t)device;
    cr_assert_eq(mh_writer_event(w, &ev), 0);
}

static void put_aux(struct mh_writer *w, int kind, uint64_t t, uint64_t addr, uint64_t size,
                    uint32_t stack, uint32_t str, uint32_t aux)
{
    put_dev(w, 0, kind, t, addr, size, stack, str, aux);
}

static void put(struct mh_writer *w, int kind, uint64_t t, uint64_t addr, uint64_t size,
                uint32_t stack, uint32_t str)
{
    put_aux(w, kind, t, addr, size, stack, str, 0);
}

/* A recording with awkward frame names, a module scope, an allocation with
 * no stack and a parameter tagged with its name outside every scope;
 * `*live` gets the bytes device 0 has live at the end. Device 1 holds one
 * allocation of 32 MiB. */
static char *awkward_recording(uint64_t *live)
{
    struct mh_writer_opts wo = {.source = "recorded"};
    struct mh_writer *w;
    cr_assert_eq(mh_writer_open_mem(&wo, &w), 0);
    uint32_t fr[3];
    fr[0] = (uint32_t)mh_writer_intern_frame(w, "/x/lib/ops.py", "op;with;semicolons", 3);
    fr[1] = (uint32_t)mh_writer_intern_frame(w, "/x/weird\nname.py", "f\xff", 9);
    fr[2] = (uint32_t)mh_writer_intern_frame(w, "/x/train.py", "<module>", 1);
    uint32_t st = (uint32_t)mh_writer_intern_stack(w, fr, 3);
    uint32_t mod = (uint32_t)mh_writer_intern_string(w, "net.blocks.3.mlp", 16);
    uint32_t weight = (uint32_t)mh_writer_intern_string(w, "net.blocks.3.mlp.weight", 23);
    const uint64_t seg = 0x7f0000000000ull;
    put(w, MH_EV_SEGMENT_ALLOC, 0, seg, 64 << 20, st, 0);
    put(w, MH_EV_ALLOC, 1, seg, 1 << 20, st, 0);            /* stack only */
    put(w, MH_EV_ALLOC, 2, seg + (1 << 20), 2 << 20, 0, 0); /* nothing */
    put(w, MH_EV_SCOPE_ENTER, 3, 0, 0, 0, mod);
    put(w, MH_EV_ALLOC, 4, seg + (3 << 20), 4 << 20, st, 0); /* in the scope */
    put(w, MH_EV_ALLOC, 5, seg + (7 << 20), 8 << 20, st, 0); /* freed below */
    put(w, MH_EV_FREE_REQUESTED, 6, seg + (7 << 20), 8 << 20, st, 0);
    put(w, MH_EV_FREE_COMPLETED, 7, seg + (7 << 20), 8 << 20, st, 0);
    put(w, MH_EV_SCOPE_EXIT, 8, 0, 0, 0, mod);
    put(w, MH_EV_ALLOC, 9, seg + (15 << 20), 16 << 20, st, 0); /* a parameter */
    put_aux(w, MH_EV_TAG, 10, seg + (15 << 20), 0, 0, weight, MH_ROLE_PARAMETER);
    put_dev(w, 1, MH_EV_SEGMENT_ALLOC, 11, seg, 64 << 20, st, 0, 0);
    put_dev(w, 1, MH_EV_ALLOC, 12, seg, 32 << 20, st, mod, 0);
    *live = (1 << 20) + (2 << 20) + (4 << 20) + (16 << 20);
    return close_to_temp(w);
}

static uint64_t end_index(const struct mh__analysis *a)
{
    return mh__lifetimes_event_count(a->lt) - 1;
}

/* The records live right after event `index` (one more pass). */
static struct mh__lifetimes *records_at(const struct mh__analysis *a, uint64_t index)
{
    struct mh__lifetimes *kept;
    cr_assert_eq(mh__analysis_moments(a, &index, 1, &kept), 0);
    return kept;
}

Test(flame_live, awkward_names_by_module_and_stack)
{
    uint64_t live;
    char *path = awkward_recording(&live);
    struct mh__analysis a;
    cr_assert_eq(mh__analysis_open(path, NULL, &a), 0);
    struct mh__lifetimes *kept = records_at(&a, end_index(&a));
    struct mh__flame *f;
    int used;
    cr_assert_eq(mh__flame_live(kept, a.rp.reader, 0, end_index(&a), MH__FLAME_BY_AUTO, &f, &used),
                 0);
    cr_expect_eq(used, MH__FLAME_BY_MODULE, "a module path is live: by module");
    cr_expect_eq(check_sums(f), live);
    struct folded fo = {0};
    cr_assert_eq(mh__flame_fold(f, on_line, &fo), 0);
    cr_expect_eq(fo.sum, live);
    cr_expect_eq(fo.bad, 0, "folded lines are one line each, valid UTF-8");
    size_t n;
    const struct mh__flame_node *nd = mh__flame_nodes(f, &n);
    int blocks = 0, no_module = 0, no_stack = 0, param = 0;
    for (size_t i = 0; i < n; i++) {
        cr_expect_null(strchr(nd[i].name, ';'), "'%s' has a ';'", nd[i].name);
        blocks |= strcmp(nd[i].name, "3") == 0 && nd[i].detail &&
                  strcmp(nd[i].detail, "net.blocks.3") == 0 && nd[i].bytes == (20u << 20);
        param |= strcmp(nd[i].name, "weight") == 0 && nd[i].depth == 5 &&
                 nd[i].by_category[MH__CAT_PARAMETER] == (16u << 20) && nd[i].bytes == (16u << 20);
        no_module |= nd[i].depth == 1 && strcmp(nd[i].name, MH__FLAME_NO_MODULE) == 0 &&
                     nd[i].bytes == (3u << 20);
        no_stack |= strcmp(nd[i].name, MH__FLAME_NO_STACK) == 0 && nd[i].bytes == (2u << 20);
    }
    cr_expect(blocks, "net.blocks.3 holds the scope's allocation and the parameter");
    cr_expect(param, "the tagged parameter sits at net.blocks.3.mlp.weight");
    cr_expect(no_module, "the rest is under <no module>");
    cr_expect(no_stack, "the allocation with no stack is under <no stack>");
    mh__flame_free(f);

    cr_assert_eq(mh__flame_live(kept, a.rp.reader, 0, end_index(&a), MH__FLAME_BY_STACK, &f, &used),
                 0);
    cr_expect_eq(used, MH__FLAME_BY_STACK);
    cr_expect_eq(check_sums(f), live);
    nd = mh__flame_nodes(f, &n);
    int outer = 0;
    for (uint32_t c = nd[0].first_child; c != MH__FLAME_NONE; c = nd[c].next_sibling)
        outer |= strcmp(nd[c].name, "<module> (x/train.py:1)") == 0 && nd[c].bytes == (21u << 20);
    cr_expect(outer, "by stack the root's child is the outermost frame");
    mh__flame_free(f);

    cr_assert_eq(mh__flame_live(kept, a.rp.reader, 1, end_index(&a), MH__FLAME_BY_AUTO, &f, &used),
                 0);
    cr_expect_eq(check_sums(f), 32u << 20, "device 1 alone");
    mh__flame_free(f);
    mh__lifetimes_free(kept);
    mh__analysis_close(&a);
    unlink(path);
    free(path);
}

static char *simulate_gpt(void)
{
    const struct mh__workload *wl = mh__workload_find("gpt");
    int64_t values[MH__WORKLOAD_MAX_PARAMS];
    char err[128];
    struct mh_writer_opts wo = {.source = "simulated"};
    struct mh__sim_opts so;
    struct mh__sim *s;
    struct mh_writer *w;
    struct mh__workload_result res;
    memset(&so, 0, sizeof so);
    cr_assert_not_null(wl);
    cr_assert_eq(mh__workload_parse_params(wl, "layers=4", values, err, sizeof err), 0, "%s", err);
    cr_assert_eq(mh_writer_open_mem(&wo, &w), 0);
    so.writer = w;
    cr_assert_eq(mh__sim_new(&so, &s), 0);
    cr_assert_eq(mh__workload_run(wl, s, values, 3, 1, &res), 0);
    mh__sim_free(s);
    return close_to_temp(w);
}

Test(flame_live, gpt_peak_equals_the_model)
{
    char *path = simulate_gpt();
    struct mh__analysis a;
    cr_assert_eq(mh__analysis_open(path, NULL, &a), 0);
    struct mh__flame_moment m;
    char err[160];
    cr_assert_eq(mh__flame_moment(&a, 0, MH__MOMENT_PEAK, 0, &m, err, sizeof err), 0);
    struct mh__lifetimes *kept = records_at(&a, m.index);
    struct mh__flame *f;
    int used;
    cr_assert_eq(mh__flame_live(kept, a.rp.reader, 0, m.index, MH__FLAME_BY_AUTO, &f, &used), 0);
    cr_expect_eq(used, MH__FLAME_BY_MODULE);
    cr_expect_eq(check_sums(f), m.value, "the tree holds the allocated peak");
    uint64_t cat[MH__CAT_COUNT], total = 0;
    cr_assert_eq(mh__lifetimes_live_by_category(kept, 0, m.index, cat, NULL), 0);
    size_t n;
    const struct mh__flame_node *nd = mh__flame_nodes(f, &n);
    for (int k = 0; k < MH__CAT_COUNT; k++) {
        cr_expect_eq(nd[0].by_category[k], cat[k], "category %s", mh__category_name(k));
        total += cat[k];
    }
    cr_expect_eq(total, m.value);
    int blocks = 0;
    for (size_t i = 0; i < n; i++)
        blocks += nd[i].kind == MH__FLAME_MODULE && nd[i].depth == 3 && nd[i].detail &&
                  strncmp(nd[i].detail, "transformer.h.", 14) == 0;
    cr_expect_eq(blocks, 4, "one node per transformer block");
    mh__flame_free(f);
    /* by stack: the same bytes, no module nodes */
    cr_assert_eq(mh__flame_live(kept, a.rp.reader, 0, m.index, MH__FLAME_BY_STACK, &f, &used), 0);
    cr_expect_eq(check_sums(f), m.value);
    nd = mh__flame_nodes(f, &n);
    for (size_t i = 0; i < n; i++)
        cr_expect_neq(nd[i].kind, MH__FLAME_MODULE);
    mh__flame_free(f);
    /* no OOM on this run; a time after the end is refused */
    cr_expect_eq(mh__flame_moment(&a, 0, MH__MOMENT_OOM, 0, &m, err, sizeof err), MH_EINVAL);
    cr_expect_eq(
        mh__flame_moment(&a, 0, MH__MOMENT_TIME, 1000000000000000ull, &m, err, sizeof err),
        MH_EINVAL);
    cr_expect(strstr(err, "after the end"), "%s", err);
    mh__lifetimes_free(kept);
    mh__analysis_close(&a);
    unlink(path);
    free(path);
}
