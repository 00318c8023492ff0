/* test_analysis_session.c - the replay session: observers see every event in
 * order with the model's state, passes rewind without reopening, a pass or a
 * state query stops at a given event, observer codes end a pass, and the
 * live groups an observer gathers at the allocated peak in one pass equal
 * those of a replay stopped at the peak. Recordings come from the simulator
 * (GPT and ResNet workloads) and the committed example. A progress callback
 * hears the bytes read of the file in every pass, ending at its size. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "device_report.h"
#include "memhist/memhist.h"
#include "session.h"
#include "sim.h"
#include "workload.h"

/* Simulates `workload` with `params` into a temporary file; returns its path. */
static char *simulate(const char *workload, const char *params, uint64_t steps)
{
    const struct mh__workload *wl = mh__workload_find(workload);
    int64_t values[MH__WORKLOAD_MAX_PARAMS];
    char err[128];
    struct mh_writer_opts wo = {.source = "simulated"};
    struct mh__sim_opts so;
    struct mh__sim *s;
    struct mh_writer *w;
    struct mh__workload_result res;
    memset(&so, 0, sizeof so);
    cr_assert_not_null(wl);
    cr_assert_eq(mh__workload_parse_params(wl, params, values, err, sizeof err), 0, "%s", err);
    cr_assert_eq(mh_writer_open_mem(&wo, &w), 0);
    so.writer = w;
    cr_assert_eq(mh__sim_new(&so, &s), 0);
    cr_assert_eq(mh__workload_run(wl, s, values, steps, 1, &res), 0);
    mh__sim_free(s);
    cr_assert_eq(mh_writer_close(w), 0);
    const void *data;
    size_t len;
    cr_assert_eq(mh_writer_mem(w, &data, &len), 0);
    char *path = strdup("/tmp/mh_session_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
    mh_writer_free_mem(w);
    return path;
}

struct counter {
    uint64_t begins, events, ends, next_index, stop_at;
    int misordered, code_at_stop;
    uint64_t allocated; /* allocated bytes of device 0 by the apply results */
    int allocated_mismatch;
};

static int c_begin(void *user, struct mh__session *s)
{
    struct counter *c = user;
    cr_expect_not_null(mh__session_model(s));
    c->begins++;
    c->next_index = 0;
    c->allocated = 0;
    return 0;
}

static int c_event(void *user, struct mh__session *s, const struct mh_event *ev,
                   const struct mh_apply_result *res)
{
    struct counter *c = user;
    if (mh__session_index(s) != c->next_index)
        c->misordered = 1;
    c->next_index++;
    c->events++;
    if (ev->device == 0) {
        c->allocated += (uint64_t)res->allocated_delta;
        struct mh_mem_stats st;
        if (mh_model_stats(mh__session_model(s), 0, &st) == 0 && st.allocated != c->allocated)
            c->allocated_mismatch = 1;
    }
    if (c->stop_at && c->events == c->stop_at)
        return c->code_at_stop;
    return 0;
}

static int c_end(void *user, struct mh__session *s)
{
    (void)s;
    ((struct counter *)user)->ends++;
    return 0;
}

static struct mh__observer counting(struct counter *c)
{
    return (struct mh__observer){"counter", c, c_begin, c_event, c_end};
}

static uint64_t peak_reserved(const struct mh_model *m)
{
    struct mh_peak p;
    cr_assert_eq(mh_model_peak_reserved(m, 0, &p), 0);
    return p.value;
}

Test(session, observers_see_every_event_in_order_and_passes_rewind)
{
    char *path = simulate("gpt", "layers=2,hidden=256,heads=4,seq=128,batch=2,vocab=1000", 3);
    struct mh__session *s;
    struct counter c = {0};
    cr_assert_eq(mh__session_open(path, &s), 0);
    struct mh__observer o = counting(&c);
    cr_assert_eq(mh__session_observe(s, &o), 0);
    cr_assert_eq(mh__session_run(s, 0), 0);
    struct mh_file_summary sum;
    mh_reader_summary(mh__session_reader(s), &sum);
    cr_assert_gt(sum.events, 100);
    cr_expect_eq(c.events, sum.events);
    cr_expect_eq(c.begins, 1);
    cr_expect_eq(c.ends, 1);
    cr_expect_not(c.misordered);
    cr_expect_not(c.allocated_mismatch, "the observer sees the model after each event");
    uint64_t first = peak_reserved(mh__session_model(s));
    cr_assert_gt(first, 0);

    cr_assert_eq(mh__session_run(s, 0), 0);
    cr_expect_eq(mh__session_passes(s), 2);
    cr_expect_eq(c.events, 2 * sum.events, "the second pass sees every event again");
    cr_expect_eq(c.begins, 2);
    cr_expect_eq(peak_reserved(mh__session_model(s)), first);
    mh__session_close(s);
    unlink(path);
    free(path);
}

Test(session, a_pass_and_a_state_query_stop_at_an_event)
{
    char *path = simulate("resnet", "depth=18,batch=8,image=64", 2);
    struct mh__session *s;
    cr_assert_eq(mh__session_open(path, &s), 0);
    cr_assert_eq(mh__session_run(s, 0), 0);
    struct mh_peak pa;
    cr_assert_eq(mh_model_peak_allocated(mh__session_model(s), 0, &pa), 0);
    cr_assert_gt(pa.value, 0);

    struct mh_model *at;
    cr_assert_eq(mh__session_state_at(s, pa.event_index + 1, &at), 0);
    struct mh_mem_stats st;
    cr_assert_eq(mh_model_stats(at, 0, &st), 0);
    cr_expect_eq(st.allocated, pa.value, "allocated after the peak event is the peak");
    cr_assert_eq(mh__session_state_at(s, pa.event_index, &at) == 0 ? 0 : 1, 0);
    cr_assert_eq(mh_model_stats(at, 0, &st), 0);
    cr_expect_lt(st.allocated, pa.value, "one event earlier the peak is not reached");
    mh_model_free(at);

    struct counter c = {0};
    struct mh__observer o = counting(&c);
    cr_assert_eq(mh__session_observe(s, &o), 0);
    cr_assert_eq(mh__session_run(s, pa.event_index + 1), 0);
    cr_expect_eq(c.events, pa.event_index + 1);
    cr_assert_eq(mh_model_stats(mh__session_model(s), 0, &st), 0);
    cr_expect_eq(st.allocated, pa.value);
    mh__session_close(s);
    unlink(path);
    free(path);
}

Test(session, observer_codes_end_the_pass)
{
    char *path = simulate("resnet", "depth=18,batch=8,image=64", 1);
    struct mh__session *s;
    cr_assert_eq(mh__session_open(path, &s), 0);
    struct counter c = {.stop_at = 50, .code_at_stop = 1};
    struct mh__observer o = counting(&c);
    cr_assert_eq(mh__session_observe(s, &o), 0);
    cr_assert_eq(mh__session_run(s, 0), 0, "1 ends the pass early, not in error");
    cr_expect_eq(c.events, 50);
    cr_expect_eq(c.ends, 1);
    c = (struct counter){.stop_at = 10, .code_at_stop = MH_EINVAL};
    cr_expect_eq(mh__session_run(s, 0), MH_EINVAL);
    cr_expect_eq(c.events, 10);
    cr_expect_eq(c.ends, 0, "a failed pass does not end normally");
    mh__session_forget(s);
    c = (struct counter){0};
    cr_assert_eq(mh__session_run(s, 0), 0);
    cr_expect_eq(c.events, 0, "forgotten observers are not called");
    mh__session_close(s);
    unlink(path);
    free(path);
}

static int same_groups(const struct mh__stack_group *a, size_t na, const struct mh__stack_group *b,
                       size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (a[i].stack != b[i].stack || a[i].bytes != b[i].bytes || a[i].count != b[i].count)
            return 0;
    return 1;
}

/* The groups gathered in the one pass equal those of a replay stopped at
 * the peak, for every device, with and without a top-N cut. */
static void check_peak_groups(const char *path)
{
    struct mh__analysis a;
    const struct mh__analysis_want want = {0, 1, 0};
    cr_assert_eq(mh__analysis_open(path, &want, &a), 0, "%s", path);
    const struct mh_model *m = a.rp.model;
    size_t checked = 0;
    for (size_t d = 0; d < mh_model_device_count(m); d++) {
        int dev = mh_model_device_at(m, d);
        struct mh_peak p;
        if (mh_model_peak_allocated(m, dev, &p) != 0 || p.value == 0)
            continue;
        for (size_t top = 0; top <= 3; top += 3) {
            struct mh__stack_group *g1, *g2;
            size_t n1, n2;
            uint64_t b1, c1, b2, c2;
            struct mh_model *at;
            cr_assert_eq(mh__peak_groups_get(a.peaks, m, dev, top, &g1, &n1, &b1, &c1), 0);
            cr_assert_eq(mh__analysis_state_at(&a, p.event_index + 1, &at), 0);
            cr_assert_eq(mh__report_group_live(at, dev, top, &g2, &n2, &b2, &c2), 0);
            cr_expect_gt(n2, 0);
            cr_expect(same_groups(g1, n1, g2, n2), "%s device %d top %zu: groups differ", path, dev,
                      top);
            cr_expect_eq(b1, b2);
            cr_expect_eq(c1, c2);
            cr_expect_eq(b2, p.value, "live bytes at the peak are the peak");
            free(g1);
            free(g2);
            mh_model_free(at);
            checked++;
        }
    }
    cr_expect_gt(checked, 0, "%s: no device with a peak", path);
    mh__analysis_close(&a);
}

Test(session, peak_groups_in_one_pass_equal_a_replay_to_the_peak)
{
    char *gpt =
        simulate("gpt", "layers=2,hidden=256,heads=4,seq=256,batch=2,vocab=1000,seqvar=40", 4);
    char *resnet = simulate("resnet", "depth=18,batch=8,image=64", 3);
    check_peak_groups(gpt);
    check_peak_groups(resnet);
    check_peak_groups(MH_TEST_DATA_DIR "/example.memhist");
    unlink(gpt);
    unlink(resnet);
    free(gpt);
    free(resnet);
}

Test(session, a_missing_file_is_an_error)
{
    struct mh__session *s = (struct mh__session *)1;
    cr_expect_eq(mh__session_open("/nonexistent-dir/x.memhist", &s), MH_ENOTFOUND);
    cr_expect_null(s);
}

/* What a progress callback heard. */
struct heard {
    char first_what[128], last_what[128];
    uint64_t calls, last_done, total, ends;
    int went_back, total_changed;
};

static void on_progress(void *user, const char *what, uint64_t done, uint64_t total)
{
    struct heard *h = user;
    if (h->calls++ == 0)
        snprintf(h->first_what, sizeof h->first_what, "%s", what);
    else if (strcmp(what, h->last_what) == 0 && done < h->last_done)
        h->went_back = 1;
    if (h->calls > 1 && total != h->total)
        h->total_changed = 1;
    snprintf(h->last_what, sizeof h->last_what, "%s", what);
    h->last_done = done;
    h->total = total;
    h->ends += done == total;
}

Test(session, progress_reports_the_bytes_read_of_the_file_and_each_pass_ends)
{
    char *path = simulate("gpt", "layers=2,hidden=256,heads=4,seq=128,batch=2,vocab=1000", 40);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    uint64_t size = (uint64_t)ftell(f);
    fclose(f);
    struct mh__session *s;
    struct heard h = {0};
    const struct mh__progress p = {on_progress, &h};
    cr_assert_eq(mh__session_open(path, &s), 0);
    mh__session_set_progress(s, &p);
    cr_assert_eq(mh__session_run(s, 0), 0);
    struct mh_file_summary sum;
    mh_reader_summary(mh__session_reader(s), &sum);
    cr_assert_gt(sum.events, 16384, "enough events for reports during the pass (%llu)",
                 (unsigned long long)sum.events);
    cr_expect_gt(h.calls, 1, "reports during the pass, then its end");
    cr_expect_eq(h.ends, 1, "one end per pass");
    cr_expect_eq(h.last_done, size, "the pass ends at the file's size");
    cr_expect_eq(h.total, size);
    cr_expect_not(h.went_back);
    cr_expect_not(h.total_changed);
    char want[512];
    snprintf(want, sizeof want, "reading %s", path);
    cr_expect_str_eq(h.first_what, want);

    uint64_t calls = h.calls;
    cr_assert_eq(mh__session_run(s, 0), 0);
    cr_expect_gt(h.calls, calls);
    cr_expect_eq(h.ends, 2);
    snprintf(want, sizeof want, "reading %s (pass 2)", path);
    cr_expect_str_eq(h.last_what, want);

    mh__session_set_progress(s, NULL);
    calls = h.calls;
    cr_assert_eq(mh__session_run(s, 0), 0);
    cr_expect_eq(h.calls, calls, "no reports once turned off");
    mh__session_close(s);
    unlink(path);
    free(path);
}
