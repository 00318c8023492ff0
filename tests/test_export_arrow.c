/* test_export_arrow.c - the Arrow C data interface of src/export
 * (memhist/arrow.h) as a consumer sees it: every table's schema is a struct
 * of its columns with Arrow's format strings; a stream's batches hold every
 * event once (the event indices a permutation of the file's), their lengths
 * and null counts agree with their buffers and validity bitmaps, a
 * dictionary column's indices fall inside its dictionary; a child moved out
 * of a batch outlives the batch's release; a stream released before its
 * end stops its producer; bad inputs (not a recording, standard input, an
 * unknown table) are refused with a message, and a cut file opens with a
 * warning. Recordings come from the simulator and tests/data. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memhist/arrow.h"
#include "memhist/memhist.h"
#include "sim.h"
#include "workload.h"

static char *simulate(uint64_t steps)
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
    cr_assert_eq(mh__workload_parse_params(wl, "", values, err, sizeof err), 0, "%s", err);
    cr_assert_eq(mh_writer_open_mem(&wo, &w), 0);
    so.writer = w;
    cr_assert_eq(mh__sim_new(&so, &s), 0);
    cr_assert_eq(mh__workload_run(wl, s, values, steps, 1, &res), 0);
    mh__sim_free(s);
    cr_assert_eq(mh_writer_close(w), 0);
    const void *data;
    size_t len;
    cr_assert_eq(mh_writer_mem(w, &data, &len), 0);
    char *path = strdup("/tmp/mh_arrow_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
    mh_writer_free_mem(w);
    return path;
}

static int child_index(const struct ArrowSchema *s, const char *name)
{
    for (int64_t i = 0; i < s->n_children; i++)
        if (strcmp(s->children[i]->name, name) == 0)
            return (int)i;
    return -1;
}

Test(export_arrow, schemas)
{
    cr_assert_eq(mh_arrow_schema_version(), MH_ARROW_SCHEMA_VERSION);
    size_t n = 0;
    for (; mh_arrow_table_name(n); n++) {
        struct ArrowSchema s;
        cr_assert_eq(mh_arrow_schema(mh_arrow_table_name(n), &s), 0);
        cr_expect_str_eq(s.format, "+s");
        cr_expect_gt(s.n_children, 4);
        cr_expect_str_eq(s.children[0]->name, "run");
        cr_expect_not_null(s.children[0]->dictionary, "run is dictionary-encoded");
        cr_expect_str_eq(s.children[1]->format, "i");
        cr_expect_not_null(s.metadata);
        s.release(&s);
        cr_expect_null(s.release);
    }
    cr_expect_eq(n, 6);
    struct ArrowSchema s;
    cr_expect_eq(mh_arrow_schema("nope", &s), MH_ENOTFOUND);
    cr_assert_eq(mh_arrow_schema("events", &s), 0);
    int alloc = child_index(&s, "allocated"), kind = child_index(&s, "kind");
    cr_expect(alloc > 0 && strcmp(s.children[alloc]->format, "l") == 0);
    cr_expect(s.children[alloc]->flags & ARROW_FLAG_NULLABLE);
    cr_expect(kind > 0 && strcmp(s.children[kind]->format, "c") == 0);
    cr_expect_str_eq(s.children[kind]->dictionary->format, "u");
    s.release(&s);
}

static int bit(const void *bitmap, int64_t i)
{
    return !bitmap || (((const uint8_t *)bitmap)[i >> 3] >> (i & 7)) & 1;
}

/* A batch's children: lengths, null counts and dictionary indices as the
 * buffers say. */
static void check_batch(const struct ArrowSchema *schema, const struct ArrowArray *b)
{
    cr_assert_eq(b->n_children, schema->n_children);
    for (int64_t c = 0; c < b->n_children; c++) {
        const struct ArrowArray *a = b->children[c];
        const struct ArrowSchema *f = schema->children[c];
        cr_assert_eq(a->length, b->length, "%s", f->name);
        int64_t nulls = 0;
        for (int64_t i = 0; i < a->length; i++)
            nulls += !bit(a->buffers[0], i);
        cr_assert_eq(a->null_count, nulls, "%s: null count", f->name);
        if (!(f->flags & ARROW_FLAG_NULLABLE))
            cr_assert_eq(nulls, 0, "%s is not nullable", f->name);
        if (!f->dictionary)
            continue;
        cr_assert_not_null(a->dictionary, "%s", f->name);
        for (int64_t i = 0; i < a->length; i++) {
            int64_t k = f->format[0] == 'c' ? ((const int8_t *)a->buffers[1])[i]
                                            : ((const int32_t *)a->buffers[1])[i];
            if (bit(a->buffers[0], i))
                cr_assert(k >= 0 && k < a->dictionary->length, "%s row %lld", f->name,
                          (long long)i);
        }
    }
}

Test(export_arrow, events_once_each)
{
    char *path = simulate(6);
    struct mh_arrow_file *f;
    char err[256];
    struct mh_arrow_opts o = {.batch_rows = 1000};
    cr_assert_eq(mh_arrow_open(path, &o, &f, err, sizeof err), 0, "%s", err);
    struct mh_arrow_info info;
    mh_arrow_info(f, &info);
    cr_assert_gt(info.events, 5000);
    cr_expect_eq(info.damaged, 0);
    cr_expect_eq(info.rank, -1);
    struct ArrowArrayStream st;
    cr_assert_eq(mh_arrow_stream(f, "events", &st), 0);
    mh_arrow_close(f); /* the stream keeps what it needs */
    struct ArrowSchema schema;
    cr_assert_eq(st.get_schema(&st, &schema), 0);
    int idx = child_index(&schema, "event_index");
    uint8_t *seen = calloc(info.events, 1);
    uint64_t rows = 0;
    for (;;) {
        struct ArrowArray b;
        cr_assert_eq(st.get_next(&st, &b), 0, "%s", st.get_last_error(&st));
        if (!b.release)
            break;
        cr_assert_leq(b.length, 1000);
        check_batch(&schema, &b);
        const int64_t *ix = b.children[idx]->buffers[1];
        for (int64_t i = 0; i < b.length; i++) {
            cr_assert(ix[i] >= 0 && (uint64_t)ix[i] < info.events);
            cr_assert_eq(seen[ix[i]]++, 0, "event %lld twice", (long long)ix[i]);
        }
        rows += (uint64_t)b.length;
        struct ArrowArray moved = *b.children[idx]; /* a consumer may keep one column */
        b.children[idx]->release = NULL;
        b.release(&b);
        cr_expect_eq(((const int64_t *)moved.buffers[1])[0], ix[0]);
        moved.release(&moved);
    }
    cr_expect_eq(rows, info.events);
    schema.release(&schema);
    st.release(&st);
    free(seen);
    unlink(path);
    free(path);
}

Test(export_arrow, released_early)
{
    char *path = simulate(20);
    struct mh_arrow_file *f;
    struct mh_arrow_opts o = {.batch_rows = 64};
    cr_assert_eq(mh_arrow_open(path, &o, &f, NULL, 0), 0);
    for (int t = 0; mh_arrow_table_name((size_t)t); t++) {
        struct ArrowArrayStream st;
        struct ArrowArray b;
        cr_assert_eq(mh_arrow_stream(f, mh_arrow_table_name((size_t)t), &st), 0);
        cr_assert_eq(st.get_next(&st, &b), 0);
        if (b.release)
            b.release(&b);
        st.release(&st); /* its producer is still in the pass, or done */
        cr_expect_null(st.release);
    }
    uint64_t done, total;
    mh_arrow_progress(f, &done, &total);
    cr_expect_lt(done, total, "the events pass stopped early");
    mh_arrow_close(f);
    unlink(path);
    free(path);
}

Test(export_arrow, bad_inputs)
{
    struct mh_arrow_file *f = NULL;
    char err[256];
    cr_expect_lt(mh_arrow_open(MH_TEST_DATA_DIR "/not-a-recording.txt", NULL, &f, err, sizeof err),
                 0);
    cr_expect_null(f);
    cr_expect(strstr(err, "not-a-recording.txt") && strstr(err, "not a .memhist file"), "%s", err);
    cr_expect_lt(mh_arrow_open(MH_TEST_DATA_DIR "/no-such-file", NULL, &f, err, sizeof err), 0);
    cr_expect(strstr(err, "no-such-file") != NULL, "%s", err);
    cr_expect_eq(mh_arrow_open("-", NULL, &f, err, sizeof err), MH_EUNSUPPORTED);
    cr_expect(strstr(err, "standard input") != NULL, "%s", err);
    cr_assert_eq(mh_arrow_open(MH_TEST_DATA_DIR "/truncated.memhist", NULL, &f, err, sizeof err),
                 0);
    const char *w = mh_arrow_warning(f, 0);
    cr_expect(w && strstr(w, "cut short"), "%s", w ? w : "(none)");
    cr_expect_null(mh_arrow_warning(f, 1));
    struct mh_arrow_info info;
    mh_arrow_info(f, &info);
    cr_expect_eq(info.damaged, 1);
    struct ArrowArrayStream st;
    cr_expect_eq(mh_arrow_stream(f, "nope", &st), MH_ENOTFOUND);
    cr_assert_eq(mh_arrow_stream(f, "events", &st), 0);
    uint64_t rows = 0;
    struct ArrowArray b;
    while (st.get_next(&st, &b) == 0 && b.release) {
        rows += (uint64_t)b.length;
        b.release(&b);
    }
    cr_expect_eq(rows, info.events, "the events up to the damage");
    st.release(&st);
    mh_arrow_close(f);
}
