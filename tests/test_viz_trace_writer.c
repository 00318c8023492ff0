/* test_viz_trace_writer.c - the Chrome trace writer on a hand-written
 * .memhist file: the document parses, follows the trace-format rules (X
 * slices have dur, flows are paired, counters are numeric, every track is
 * named), launches link to their kernels, windows and device filters cut
 * cleanly, merging into a Kineto trace keeps its events and clock, and the
 * protobuf output is a stream of whole packets with names interned once. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memhist/memhist.h"
#include "json_read.h"
#include "trace_writer.h"

#define T0 1700000000000000000ull
#define US 1000ull

static char path[512];

static struct mh_event ev_at(unsigned kind, uint64_t t)
{
    struct mh_event e;
    memset(&e, 0, sizeof e);
    e.kind = (uint8_t)kind;
    e.time_ns = T0 + t;
    return e;
}

/* Two steps on GPU 0 (plus one kernel on GPU 1): a range that launches a
 * kernel, a segment and an allocation, a driver allocation, a copy, an OOM. */
static void write_sample(void)
{
    snprintf(path, sizeof path, "%s/trace_writer_%ld.memhist", MH_BINARY_DIR, (long)getpid());
    struct mh_writer *w;
    cr_assert_eq(mh_writer_open(path, NULL, &w), 0);
    mh_writer_set_meta(w, "pid", "4242");
    uint32_t op = (uint32_t)mh_writer_intern_string(w, "aten::add", 9);
    uint32_t launch = (uint32_t)mh_writer_intern_string(w, "cudaLaunchKernel", 16);
    uint32_t kname = (uint32_t)mh_writer_intern_string(w, "add_kernel", 10);
    for (uint32_t step = 0; step < 2; step++) {
        uint64_t b = step * 1000 * US;
        struct mh_event e = ev_at(MH_EV_STEP_BEGIN, b);
        e.aux = step;
        mh_writer_event(w, &e);
        e = ev_at(MH_EV_RANGE_BEGIN, b + 10 * US);
        e.str = op;
        e.thread = 4242;
        mh_writer_event(w, &e);
        if (step == 0) {
            e = ev_at(MH_EV_SEGMENT_ALLOC, b + 11 * US);
            e.addr = 0x7f0000000000ull;
            e.size = 2 << 20;
            mh_writer_event(w, &e);
        }
        e = ev_at(MH_EV_ALLOC, b + 12 * US);
        e.addr = 0x7f0000000000ull + step * 4096;
        e.size = 1000;
        mh_writer_event(w, &e);
        e = ev_at(MH_EV_API_CALL, b + 21 * US);
        e.str = launch;
        e.thread = 4242;
        e.dur_ns = 4125;
        e.correlation = 900 + step;
        e.aux = 211;
        e.device = -1;
        mh_writer_event(w, &e);
        e = ev_at(MH_EV_RANGE_END, b + 35 * US);
        e.str = op;
        e.thread = 4242;
        mh_writer_event(w, &e);
        e = ev_at(MH_EV_DRIVER_ALLOC, b + 40 * US);
        e.addr = 0x7e0000000000ull + step * (1 << 20);
        e.size = 1 << 20;
        e.aux = MH_MEM_DEVICE;
        mh_writer_event(w, &e);
        e = ev_at(MH_EV_STEP_END, b + 900 * US);
        e.aux = step;
        mh_writer_event(w, &e);
        /* device records arrive late and out of order, as CUPTI delivers them */
        e = ev_at(MH_EV_KERNEL, b + 30 * US + 125);
        e.str = kname;
        e.dur_ns = 3875;
        e.stream = 7;
        e.correlation = 900 + step;
        mh_writer_event(w, &e);
    }
    struct mh_event e = ev_at(MH_EV_KERNEL, 50 * US);
    e.str = kname;
    e.device = 1;
    e.stream = 3;
    e.dur_ns = 1000;
    e.correlation = 777; /* no launch recorded: no flow */
    mh_writer_event(w, &e);
    e = ev_at(MH_EV_MEMCPY, 60 * US);
    e.aux = 1;
    e.size = 4096;
    e.stream = 7;
    e.dur_ns = 500;
    mh_writer_event(w, &e);
    e = ev_at(MH_EV_OOM, 1950 * US);
    e.addr = 1 << 20;
    e.size = 8 << 20;
    mh_writer_event(w, &e);
    cr_assert_eq(mh_writer_close(w), 0);
}

struct stats {
    int x, x_nodur, c, c_nonnum, s, f, f_nobp, i, m, b, e, kernels, oom, oom_args;
    int flow_ids[16], nflow;
    int pid_named[8];
};

static void check_event(const struct mh__jr_doc *d, const struct mh__jr_value *ev, struct stats *st)
{
    struct mh__jr_value ph, v, args, a;
    cr_assert(mh__jr_find(d, ev, "ph", &ph));
    char p[8];
    mh__jr_string(d, &ph, p, sizeof p);
    cr_assert(mh__jr_find(d, ev, "ts", &v) && v.type == MH__JR_NUMBER, "every event has a ts");
    cr_assert(mh__jr_find(d, ev, "pid", &v));
    if (!strcmp(p, "X")) {
        st->x++;
        if (!mh__jr_find(d, ev, "dur", &v) || v.type != MH__JR_NUMBER)
            st->x_nodur++;
        if (mh__jr_find(d, ev, "cat", &v) && mh__jr_string_eq(d, &v, "kernel"))
            st->kernels++;
    } else if (!strcmp(p, "C")) {
        st->c++;
        cr_assert(mh__jr_find(d, ev, "args", &args));
        size_t pos = 0;
        struct mh__jr_value k;
        while (mh__jr_next(d, &args, &pos, &k, &a))
            if (a.type != MH__JR_NUMBER)
                st->c_nonnum++;
    } else if (!strcmp(p, "s") || !strcmp(p, "f")) {
        uint64_t id;
        cr_assert(mh__jr_find(d, ev, "id", &v));
        cr_assert_eq(mh__jr_u64(d, &v, &id), 0);
        if (p[0] == 's') {
            st->s++;
            st->flow_ids[st->nflow++ % 16] = (int)id;
        } else {
            st->f++;
            if (!mh__jr_find(d, ev, "bp", &v) || !mh__jr_string_eq(d, &v, "e"))
                st->f_nobp++;
        }
    } else if (!strcmp(p, "i")) {
        st->i++;
        if (mh__jr_find(d, ev, "name", &v) && mh__jr_string_eq(d, &v, "OOM")) {
            st->oom++;
            cr_assert(mh__jr_find(d, ev, "args", &args));
            static const char *const keys[] = {"request", "device_free", "allocated", "reserved",
                                               "largest free block"};
            for (size_t k = 0; k < 5; k++)
                st->oom_args += mh__jr_find(d, &args, keys[k], &a) && a.type == MH__JR_NUMBER;
        }
    } else if (!strcmp(p, "M")) {
        st->m++;
    } else if (!strcmp(p, "B")) {
        st->b++;
    } else if (!strcmp(p, "E")) {
        st->e++;
    }
}

static void check_doc(const char *json, size_t len, struct stats *st, uint64_t *base)
{
    struct mh__jr_doc d;
    struct mh__jr_value root, evs, ev, v;
    char err[160];
    cr_assert_eq(mh__jr_parse(&d, json, len, 0, 0, &root, err, sizeof err), 0, "%s", err);
    cr_assert(mh__jr_find(&d, &root, "traceEvents", &evs));
    cr_assert(mh__jr_find(&d, &root, "baseTimeNanoseconds", &v));
    cr_assert_eq(mh__jr_u64(&d, &v, base), 0);
    memset(st, 0, sizeof *st);
    size_t pos = 0;
    while (mh__jr_next(&d, &evs, &pos, NULL, &ev))
        check_event(&d, &ev, st);
    cr_assert_eq(st->x_nodur, 0, "X events have dur");
    cr_assert_eq(st->c_nonnum, 0, "counters are numeric");
    cr_assert_eq(st->s, st->f, "flows are paired");
    cr_assert_eq(st->f_nobp, 0, "flow ends bind to the enclosing slice");
    cr_assert_eq(st->b, st->e, "every B has an E");
}

static char *render(const struct mh__trace_opts *o, size_t *len, const struct mh__trace_plan **plan,
                    struct mh__trace **tout)
{
    struct mh__session *r;
    cr_assert_eq(mh__session_open(path, &r), 0);
    struct mh__trace *t;
    cr_assert_eq(mh__trace_new(o, &t), 0);
    struct mh__sink s;
    mh__sink_init_mem(&s);
    cr_assert_eq(mh__trace_write(t, r, &s), 0);
    *plan = mh__trace_get_plan(t);
    *tout = t;
    mh__session_close(r);
    char *out = malloc(s.len + 1);
    memcpy(out, s.buf, s.len);
    out[s.len] = '\0';
    *len = s.len;
    mh__sink_free(&s);
    return out;
}

static struct mh__trace_opts all_opts(void)
{
    struct mh__trace_opts o;
    memset(&o, 0, sizeof o);
    o.device = -1;
    return o;
}

Test(trace_writer, whole_file)
{
    write_sample();
    struct mh__trace_opts o = all_opts();
    size_t len;
    const struct mh__trace_plan *plan;
    struct mh__trace *t;
    char *json = render(&o, &len, &plan, &t);
    struct stats st;
    uint64_t base;
    check_doc(json, len, &st, &base);
    cr_assert_eq(base, T0, "base = first event of the window");
    cr_assert_eq(st.kernels, 3);
    cr_assert_eq(st.s, 2, "two launches with kernels -> two flows");
    cr_assert_eq(plan->flows, 2);
    cr_assert_gt(st.c, 0, "memory counters");
    cr_assert_eq(st.oom, 1);
    cr_assert_eq(st.oom_args, 5, "the OOM carries its explanation");
    cr_assert_gt(st.m, 6, "process and thread names");
    cr_assert(strstr(json, "\"name\":\"aten::add\"") != NULL);
    cr_assert(strstr(json, "\"cat\":\"cpu_op\"") != NULL);
    cr_assert(strstr(json, "\"name\":\"step 0\"") != NULL);
    cr_assert(strstr(json, "\"name\":\"Memcpy HtoD\"") != NULL);
    cr_assert(strstr(json, "\"process_sort_index\",\"pid\":1,") != NULL, "GPU 1 is named");
    cr_assert(strstr(json, "\"pid\":4242") != NULL, "host pid from the file's meta");
    /* the kernel of step 0 at 30.125 us lasting 3.875 us */
    cr_assert(strstr(json, "\"ts\":30.125,\"dur\":3.875") != NULL, "%s", json);
    cr_assert(strstr(json, "\"ph\":\"f\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"pid\":0,\"tid\":7,"
                           "\"ts\":30.125,\"id\":900,\"bp\":\"e\"") != NULL);
    free(json);
    mh__trace_free(t);
    unlink(path);
}

Test(trace_writer, step_window_and_device_filter)
{
    write_sample();
    struct mh__trace_opts o = all_opts();
    o.has_steps = 1;
    o.step_lo = o.step_hi = 1;
    o.device = 0;
    size_t len;
    const struct mh__trace_plan *plan;
    struct mh__trace *t;
    char *json = render(&o, &len, &plan, &t);
    struct stats st;
    uint64_t base;
    check_doc(json, len, &st, &base);
    cr_assert_geq(base, T0 + 1000 * US, "the window starts at step 1");
    cr_assert_eq(st.kernels, 1, "only step 1's kernel on GPU 0");
    cr_assert_eq(st.s, 1);
    cr_assert(strstr(json, "\"name\":\"step 0\"") == NULL);
    cr_assert(strstr(json, "\"name\":\"step 1\"") != NULL);
    free(json);
    mh__trace_free(t);
    unlink(path);
}

Test(trace_writer, size_warning_suggests_a_window)
{
    write_sample();
    struct mh__trace_opts o = all_opts();
    o.warn_bytes = 500;
    size_t len;
    const struct mh__trace_plan *plan;
    struct mh__trace *t;
    char *json = render(&o, &len, &plan, &t);
    cr_assert(plan->too_big);
    cr_assert(strncmp(plan->suggestion, "--steps 0:", 10) == 0, "%s", plan->suggestion);
    cr_assert_gt(plan->est_bytes, len / 4, "the estimate is in the right range");
    cr_assert_lt(plan->est_bytes, len * 4, "the estimate is in the right range");
    free(json);
    mh__trace_free(t);
    unlink(path);
}

Test(trace_writer, merge_into_kineto)
{
    write_sample();
    char kpath[512];
    snprintf(kpath, sizeof kpath, "%s/kineto/small_trace.json", MH_TEST_DATA_DIR);
    FILE *f = fopen(kpath, "rb");
    cr_assert_not_null(f, "%s", kpath);
    static char kin[1 << 16];
    size_t klen = fread(kin, 1, sizeof kin, f);
    fclose(f);
    struct mh__session *r;
    cr_assert_eq(mh__session_open(path, &r), 0);
    struct mh__trace *t;
    struct mh__trace_opts o = all_opts();
    cr_assert_eq(mh__trace_new(&o, &t), 0);
    struct mh__sink s;
    mh__sink_init_mem(&s);
    char err[200] = "";
    cr_assert_eq(mh__trace_merge_kineto(t, r, kin, klen, &s, err, sizeof err), 0, "%s", err);
    struct stats st;
    uint64_t base;
    check_doc(s.buf, s.len, &st, &base);
    cr_assert_eq(base, T0, "Kineto's base is kept");
    cr_assert_gt(st.c, 0, "memory counters were added");
    cr_assert_eq(st.kernels, 1, "Kineto's own kernel only: memhist adds memory tracks");
    cr_assert(memmem(s.buf, s.len, "\"traceName\"", 11) != NULL, "other members are kept");
    cr_assert(memmem(s.buf, s.len, "\"name\":\"aten::add\"", 18) != NULL);
    mh__sink_free(&s);
    mh__trace_free(t);
    /* malformed input: a clear error */
    cr_assert_eq(mh__trace_new(&o, &t), 0);
    mh__sink_init_mem(&s);
    cr_assert_neq(mh__trace_merge_kineto(t, r, "{\"traceEvents\":[1,]}", 20, &s, err, sizeof err),
                  0);
    cr_assert(strstr(err, "at byte") != NULL, "%s", err);
    cr_assert_neq(mh__trace_merge_kineto(t, r, "{\"x\":1}", 7, &s, err, sizeof err), 0);
    cr_assert(strstr(err, "traceEvents") != NULL, "%s", err);
    mh__sink_free(&s);
    mh__trace_free(t);
    mh__session_close(r);
    unlink(path);
}

static size_t count_of(const char *buf, size_t len, const char *what)
{
    size_t n = 0, w = strlen(what);
    for (const char *p = buf; (p = memmem(p, len - (size_t)(p - buf), what, w)) != NULL; p += w)
        n++;
    return n;
}

/* The protobuf output: a Trace whose every top-level field is a complete
 * packet (key 0x0a: field 1, length-delimited), names interned once however
 * often they are used, each track described once. Its content is checked
 * against the JSON by tests/python/test_trace_perfetto.py. */
Test(trace_writer, perfetto_packets)
{
    write_sample();
    struct mh__trace_opts o = all_opts();
    o.perfetto = 1;
    size_t len;
    const struct mh__trace_plan *plan;
    struct mh__trace *t;
    char *pb = render(&o, &len, &plan, &t);
    const unsigned char *p = (const unsigned char *)pb, *end = p + len;
    size_t packets = 0;
    while (p < end) {
        cr_assert_eq(*p++, 0x0a, "Trace.packet at byte %td", p - 1 - (const unsigned char *)pb);
        uint64_t n = 0;
        for (unsigned shift = 0; p < end; shift += 7) {
            n |= (uint64_t)(*p & 0x7f) << shift;
            if (!(*p++ & 0x80))
                break;
        }
        cr_assert_leq(n, (uint64_t)(end - p), "a packet ends within the file");
        p += n;
        packets++;
    }
    cr_assert_gt(packets, 20);
    cr_assert_eq(count_of(pb, len, "aten::add"), 1, "an op's name is interned once");
    cr_assert_eq(count_of(pb, len, "add_kernel"), 1, "a kernel's name is interned once");
    cr_assert_eq(count_of(pb, len, "GPU 0 allocated"), 1, "a track is described once");
    cr_assert_eq(count_of(pb, len, "GPU 1 allocated"), 0, "GPU 1 has no allocator events");
    cr_assert_eq(count_of(pb, len, "step 1"), 1);
    cr_assert_eq(plan->flows, 2);
    free(pb);
    mh__trace_free(t);
    unlink(path);
}
