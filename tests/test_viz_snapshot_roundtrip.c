/* test_viz_snapshot_roundtrip.c - snapshot export and import in memory:
 * events written with the writer API -> export (checked field by field with
 * the strict reader, including memo sharing of frame lists) -> import ->
 * the same allocator events back, and a second export byte-identical to the
 * first. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/memhist.h"
#include "pickle_read.h"
#include "snapshot_export.h"
#include "snapshot_import.h"

#define MiB (1ull << 20)
#define A 0x7f0000000000ull
#define B 0x7f4000000000ull
#define T0 1700000000000000000ull

struct file {
    struct mh_writer *w;
    const void *data;
    size_t len;
};

static struct mh_event ev(uint64_t i, int kind, int dev, uint64_t addr, uint64_t size)
{
    struct mh_event e;
    memset(&e, 0, sizeof e);
    e.time_ns = T0 + i * 1000;
    e.kind = (uint8_t)kind;
    e.device = (int16_t)dev;
    e.addr = addr;
    e.size = size;
    return e;
}

static void make_file(struct file *f)
{
    struct mh_writer_opts o = {"simulated", 0};
    cr_assert_eq(mh_writer_open_mem(&o, &f->w), 0);
    uint32_t f1 = (uint32_t)mh_writer_intern_frame(f->w, "train.py", "forward", 10);
    uint32_t f2 = (uint32_t)mh_writer_intern_frame(f->w, "train.py", "main", 99);
    uint32_t fr[2] = {f1, f2};
    uint32_t s1 = (uint32_t)mh_writer_intern_stack(f->w, fr, 2);
    uint32_t s2 = (uint32_t)mh_writer_intern_stack(f->w, fr + 1, 1);
    uint32_t tag = (uint32_t)mh_writer_intern_string(f->w, "tagged", 6);
    struct mh_event e[12];
    int n = 0;
    e[n] = ev(n, MH_EV_STEP_BEGIN, 0, 0, 0), e[n++].aux = 1;
    e[n] = ev(n, MH_EV_PHASE, 0, 0, 0), e[n++].aux = MH_PHASE_FORWARD;
    e[n] = ev(n, MH_EV_SEGMENT_ALLOC, 0, A, 20 * MiB), e[n].flags = MH_EVF_POOL_KNOWN,
    e[n++].stack = s1;
    e[n] = ev(n, MH_EV_ALLOC, 0, A, 3 * MiB), e[n++].stack = s1;
    e[n] = ev(n, MH_EV_ALLOC, 0, A + 3 * MiB, 4 * MiB - 100), e[n].stack = s1, e[n++].str = tag;
    e[n] = ev(n, MH_EV_PHASE, 0, 0, 0), e[n++].aux = MH_PHASE_BACKWARD;
    e[n] = ev(n, MH_EV_FREE_REQUESTED, 0, A, 3 * MiB), e[n++].stack = s1;
    e[n] = ev(n, MH_EV_FREE_COMPLETED, 0, A, 3 * MiB), e[n++].stack = s1;
    e[n] = ev(n, MH_EV_SEGMENT_ALLOC, 1, B, 2 * MiB),
    e[n].flags = MH_EVF_POOL_KNOWN | MH_EVF_POOL_SMALL, e[n++].stack = s2;
    e[n] = ev(n, MH_EV_ALLOC, 1, B, 1000), e[n++].stack = s2;
    e[n] = ev(n, MH_EV_STEP_END, 0, 0, 0), e[n++].aux = 1;
    e[n] = ev(n, MH_EV_OOM, 0, 1ull << 30, 40ull << 30), e[n++].stack = s1;
    for (int i = 0; i < n; i++)
        cr_assert_eq(mh_writer_event(f->w, &e[i]), 0);
    cr_assert_eq(mh_writer_close(f->w), 0);
    cr_assert_eq(mh_writer_mem(f->w, &f->data, &f->len), 0);
}

static void export_mem(const void *data, size_t len, struct mh__sink *sink)
{
    struct mh__session *r;
    cr_assert_eq(mh__session_open_mem(data, len, "recording", &r), 0);
    struct mh__snapshot *s;
    cr_assert_eq(mh__snapshot_build(r, NULL, &s), 0);
    struct mh__snapshot_info info;
    mh__snapshot_info(s, &info);
    cr_assert_eq(info.entries, 8);
    cr_assert_eq(info.anomalies, 0);
    cr_assert_eq(info.overflowed, 0);
    cr_assert(info.estimate_bytes > 500);
    mh__sink_init_mem(sink);
    cr_assert_eq(mh__snapshot_write(s, sink), 0);
    mh__snapshot_free(s);
    mh__session_close(r);
}

static const struct mh__pv *entry(const struct mh__pv *root, int dev, int i)
{
    return mh__pv_at(mh__pv_at(mh__pv_get(root, "device_traces"), (size_t)dev), (size_t)i);
}

static uint64_t u(const struct mh__pv *d, const char *key)
{
    uint64_t v = 0;
    cr_assert_eq(mh__pv_u64(mh__pv_get(d, key), &v), 0, "'%s' missing", key);
    return v;
}

static void check_export(const struct mh__sink *sink)
{
    struct mh__pickle_doc *doc;
    char err[200];
    cr_assert_eq(mh__pickle_parse(sink->buf, sink->len, NULL, &doc, err, sizeof err), 0, "%s", err);
    const struct mh__pv *root = mh__pickle_doc_root(doc);
    cr_assert_eq(mh__pv_get(root, "device_traces")->n, 2);
    cr_assert_eq(mh__pv_at(mh__pv_get(root, "device_traces"), 0)->n, 6);
    const struct mh__pv *e1 = entry(root, 0, 1), *e2 = entry(root, 0, 2);
    cr_assert(mh__pv_is_str(mh__pv_get(e1, "action"), "alloc"));
    cr_assert_eq(u(e1, "addr"), A);
    cr_assert_eq(u(e1, "size"), 3 * MiB);
    cr_assert_eq(u(e1, "time_us"), (T0 + 3000) / 1000);
    cr_assert(mh__pv_is_str(mh__pv_get(e1, "user_metadata"), "step 1 forward"));
    cr_assert(mh__pv_is_str(mh__pv_get(e2, "user_metadata"), "step 1 forward | tagged"));
    cr_assert(mh__pv_is_str(mh__pv_get(entry(root, 0, 3), "user_metadata"), "step 1 backward"));
    cr_assert_neq(e1, e2, "entry dicts are never shared");
    cr_assert_eq(mh__pv_get(e1, "frames"), mh__pv_get(e2, "frames"), "frame lists are shared");
    const struct mh__pv *fr = mh__pv_at(mh__pv_get(e1, "frames"), 0);
    cr_assert(mh__pv_is_str(mh__pv_get(fr, "filename"), "train.py"));
    cr_assert(mh__pv_is_str(mh__pv_get(fr, "name"), "forward"), "innermost first");
    const struct mh__pv *oom = entry(root, 0, 5);
    cr_assert(mh__pv_is_str(mh__pv_get(oom, "action"), "oom"));
    cr_assert_eq(u(oom, "device_free"), 1ull << 30);
    cr_assert_null(mh__pv_get(oom, "addr"));
    const struct mh__pv *segs = mh__pv_get(root, "segments");
    cr_assert_eq(segs->n, 2);
    const struct mh__pv *s0 = mh__pv_at(segs, 0), *blocks = mh__pv_get(s0, "blocks");
    cr_assert_eq(u(s0, "total_size"), 20 * MiB);
    cr_assert(mh__pv_is_str(mh__pv_get(s0, "segment_type"), "large"));
    cr_assert(mh__pv_is_str(mh__pv_get(mh__pv_at(segs, 1), "segment_type"), "small"));
    uint64_t sum = 0;
    for (size_t i = 0; i < blocks->n; i++)
        sum += u(mh__pv_at(blocks, i), "size");
    cr_assert_eq(sum, 20 * MiB, "blocks tile the segment");
    cr_assert(mh__pv_is_str(mh__pv_get(mh__pv_at(blocks, 0), "state"), "inactive"));
    cr_assert(mh__pv_is_str(mh__pv_get(mh__pv_at(blocks, 1), "state"), "active_allocated"));
    cr_assert_eq(u(mh__pv_at(blocks, 1), "requested_size"), 4 * MiB - 100);
    const struct mh__pv *notes = mh__pv_get(root, "external_annotations");
    cr_assert_eq(notes->n, 2);
    cr_assert(mh__pv_is_str(mh__pv_get(mh__pv_at(notes, 0), "name"), "step 1"));
    cr_assert(mh__pv_is_str(mh__pv_get(mh__pv_at(notes, 1), "stage"), "END"));
    int64_t split;
    cr_assert_eq(
        mh__pv_i64(mh__pv_get(mh__pv_get(root, "allocator_settings"), "max_split_size"), &split),
        0);
    cr_assert_eq(split, -1);
    mh__pickle_doc_free(doc);
}

/* The allocator events of a file, with stacks as text, in order. */
struct flat {
    struct mh_event e[32];
    char stack[32][128];
    char str[32][64];
    int n;
};

static void flatten(const void *data, size_t len, struct flat *out)
{
    struct mh_reader *r;
    cr_assert_eq(mh_reader_open_mem(data, len, &r), 0);
    struct mh_event e;
    memset(out, 0, sizeof *out);
    while (mh_reader_next(r, &e) == 1) {
        if (e.kind > MH_EV_SNAPSHOT)
            continue;
        cr_assert_lt(out->n, 32);
        cr_assert_eq(e.flags & MH_EVF_PREEXISTING, 0);
        out->e[out->n] = e;
        const uint32_t *fr;
        size_t nf;
        if (e.stack && mh_reader_stack(r, e.stack, &fr, &nf) == 0)
            for (size_t i = 0; i < nf; i++) {
                struct mh_frame f;
                mh_reader_frame(r, fr[i], &f);
                size_t used = strlen(out->stack[out->n]);
                snprintf(out->stack[out->n] + used, 128 - used, "%s:%u %s;", f.file, f.line,
                         f.func);
            }
        const char *s = e.str ? mh_reader_string(r, e.str) : NULL;
        snprintf(out->str[out->n], 64, "%s", s ? s : "");
        out->n++;
    }
    mh_reader_close(r);
}

Test(snapshot, export_import_round_trip)
{
    struct file f;
    make_file(&f);
    struct mh__sink first;
    export_mem(f.data, f.len, &first);
    check_export(&first);

    struct mh_writer_opts o = {"imported", 0};
    struct mh_writer *w2;
    cr_assert_eq(mh_writer_open_mem(&o, &w2), 0);
    struct mh__import_info info;
    char err[200];
    cr_assert_eq(mh__snapshot_import(first.buf, first.len, NULL, w2, &info, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(mh_writer_close(w2), 0);
    cr_assert_eq(info.entries, 8);
    cr_assert_eq(info.inconsistencies, 0);
    cr_assert_eq(info.preexisting_blocks, 0);
    cr_assert_eq(info.protocol, 4);
    const void *d2;
    size_t l2;
    cr_assert_eq(mh_writer_mem(w2, &d2, &l2), 0);

    struct flat *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    flatten(f.data, f.len, a);
    flatten(d2, l2, b);
    cr_assert_eq(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        const struct mh_event *x = &a->e[i], *y = &b->e[i];
        cr_assert(x->kind == y->kind && x->addr == y->addr && x->size == y->size &&
                      x->device == y->device && x->time_ns == y->time_ns && x->stream == y->stream,
                  "event %d differs", i);
        cr_assert_str_eq(a->stack[i], b->stack[i], "stack of event %d", i);
        cr_assert_str_eq(a->str[i], b->str[i], "metadata of event %d", i);
    }
    struct mh__sink second;
    export_mem(d2, l2, &second);
    cr_assert_eq(first.len, second.len);
    cr_assert_eq(memcmp(first.buf, second.buf, first.len), 0, "second export differs");
    free(a);
    free(b);
    mh__sink_free(&first);
    mh__sink_free(&second);
    mh_writer_free_mem(w2);
    mh_writer_free_mem(f.w);
}

Test(snapshot, import_committed_and_refused)
{
    const char *names[] = {"small.p2.pickle", "small.p4.pickle", "small.p5.pickle",
                           "evil_global.p2.pickle"};
    for (int i = 0; i < 4; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/snapshots/%s", MH_TEST_DATA_DIR, names[i]);
        FILE *fp = fopen(path, "rb");
        cr_assert(fp, "missing %s", path);
        static unsigned char buf[1 << 16];
        size_t len = fread(buf, 1, sizeof buf, fp);
        fclose(fp);
        struct mh_writer_opts o = {"imported", 0};
        struct mh_writer *w;
        cr_assert_eq(mh_writer_open_mem(&o, &w), 0);
        struct mh__import_info info;
        char err[200];
        int rc = mh__snapshot_import(buf, len, NULL, w, &info, err, sizeof err);
        mh_writer_close(w);
        if (i == 3) {
            cr_assert_eq(rc, MH_EUNSAFE);
            cr_assert(strstr(err, "GLOBAL"), "%s", err);
        } else {
            cr_assert_eq(rc, 0, "%s: %s", names[i], err);
            cr_assert_eq(info.entries, 7, "%s", names[i]);
            cr_assert_eq(info.inconsistencies, 0);
            cr_assert_eq(info.annotations, 2);
        }
        mh_writer_free_mem(w);
    }
}
