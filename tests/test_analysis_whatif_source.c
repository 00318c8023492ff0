/* test_analysis_whatif_source.c - the what-if runner reads the recording
 * again for each replay: replays of the file read again, of the compact
 * in-memory copy (what standard input gets) and of the input's events held
 * in an array give the same results, on one device and on two, under the
 * recorded settings and others, with the recorded settings wrong (runs that
 * drift apart) and with a what-if OOM; the recorded run's figures from the
 * pass's own model equal those of the input replayed alone; the replay
 * started during the pass gives what a replay after it gives, also when
 * the file changed in between (it is then run again); runs of two replays
 * at once equal the same runs one after the other. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memhist/memhist.h"
#include "sim.h"
#include "whatif_int.h"
#include "workload.h"

#define PARAMS "layers=2,hidden=256,heads=4,seq=256,batch=4,vocab=5000,seqvar=50"

/* A simulated run under `run_conf` on `ndev` devices of `capacity` bytes,
 * one after the other, in a temporary file whose settings say `file_conf`. */
static char *recording(const char *run_conf, const char *file_conf, int ndev, uint64_t capacity,
                       uint64_t steps)
{
    const struct mh__workload *wl = mh__workload_find("gpt");
    int64_t values[MH__WORKLOAD_MAX_PARAMS];
    struct mh_alloc_conf conf;
    struct mh_writer *w;
    cr_assert_eq(mh__workload_parse_params(wl, PARAMS, values, NULL, 0), 0);
    cr_assert_eq(mh_alloc_conf_parse(run_conf, &conf, NULL, 0), 0);
    char *path = strdup("/tmp/mh_whatif_source_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(mh_writer_open_fd(fd, &(struct mh_writer_opts){.source = "simulated"}, &w), 0);
    cr_assert_eq(mh_writer_set_meta(w, "alloc_conf", file_conf), 0);
    uint64_t start = 0;
    for (int d = 0; d < ndev; d++) {
        struct mh__sim *s;
        struct mh__workload_result res;
        struct mh__sim_opts so = {.conf = conf,
                                 .capacity = capacity,
                                 .writer = w,
                                 .device = d,
                                 .start_ns = start,
                                 .base_addr = (0x7full + (uint64_t)d) << 40};
        cr_assert_eq(mh_writer_set_device(w, d, "simulated GPU", capacity), 0);
        cr_assert_eq(mh__sim_new(&so, &s), 0);
        cr_assert_eq(mh__workload_run(wl, s, values, steps, 1 + (uint64_t)d, &res), 0);
        start = mh__sim_time(s) + 1000000;
        mh__sim_free(s);
    }
    cr_assert_eq(mh_writer_close(w), 0);
    close(fd);
    return path;
}

struct evs {
    struct mh_event *ev;
    size_t n, cap;
};

/* The input of `device` as the runner used to keep it: every event but the
 * other devices' allocator events. */
static void input_events(const char *path, int device, struct evs *out)
{
    struct mh_reader *r;
    struct mh_event ev;
    memset(out, 0, sizeof *out);
    cr_assert_eq(mh_reader_open(path, &r), 0);
    while (mh_reader_next(r, &ev) == 1) {
        if (mh__sim_is_allocator_kind(ev.kind) && ev.device != device)
            continue;
        if (out->n == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 4096;
            out->ev = realloc(out->ev, out->cap * sizeof *out->ev);
            cr_assert_not_null(out->ev);
        }
        out->ev[out->n++] = ev;
    }
    mh_reader_close(r);
}

static void expect_same_result(const struct mh__sim_replay_result *a,
                               const struct mh__sim_replay_result *b, const char *what)
{
    cr_expect(
        a->recorded_alloc_events == b->recorded_alloc_events &&
            a->simulated_alloc_events == b->simulated_alloc_events && a->matched == b->matched &&
            a->requests == b->requests && a->allocs == b->allocs && a->placed == b->placed &&
            a->unknown_frees == b->unknown_frees && a->seeded_segments == b->seeded_segments &&
            a->seeded_blocks == b->seeded_blocks && a->seeded_unknown == b->seeded_unknown &&
            a->seed_rejected == b->seed_rejected &&
            a->recorded_segment_events == b->recorded_segment_events &&
            a->matched_segment_events == b->matched_segment_events &&
            a->empty_caches == b->empty_caches && a->oom == b->oom &&
            a->oom_index == b->oom_index && a->input_events == b->input_events,
        "%s: replay results differ (matched %llu vs %llu of %llu, oom %d vs %d)", what,
        (unsigned long long)a->matched, (unsigned long long)b->matched,
        (unsigned long long)a->recorded_alloc_events, a->oom, b->oom);
}

static void expect_same_outcome(const struct mh__whatif_outcome *a,
                                const struct mh__whatif_outcome *b, const char *what)
{
    cr_expect(a->peak_allocated == b->peak_allocated && a->peak_reserved == b->peak_reserved &&
                  a->end_reserved == b->end_reserved &&
                  a->allocated_at_peak == b->allocated_at_peak &&
                  a->segment_allocs == b->segment_allocs && a->segment_frees == b->segment_frees &&
                  a->retries == b->retries && a->ooms == b->ooms && a->oom == b->oom &&
                  a->oom_step == b->oom_step && a->oom_time_ns == b->oom_time_ns &&
                  a->oom_size == b->oom_size && a->oom_available == b->oom_available &&
                  a->match == b->match && a->events == b->events && a->placed == b->placed &&
                  a->segment_match == b->segment_match,
              "%s: outcomes differ (peak reserved %llu vs %llu)", what,
              (unsigned long long)a->peak_reserved, (unsigned long long)b->peak_reserved);
}

/* The recorded run of an array of events, as the runner figured it before
 * it read recordings again: a model of its own. */
static void recorded_of(const struct evs *in, const struct mh_alloc_conf *conf, int device,
                        struct mh__whatif_outcome *out)
{
    struct mh__wtrack t;
    cr_assert_eq(mh__wtrack_open(&t, conf, device), 0);
    for (size_t i = 0; i < in->n; i++)
        cr_assert_eq(mh__wtrack_event(&t, &in->ev[i]), 0);
    mh_model_finish(t.model);
    mh__wtrack_summarize(&t, t.model, in->n ? in->ev[0].time_ns : 0, out);
    mh__wtrack_close(&t);
}

/* The settings each file is replayed under. */
static int replay_opts(const struct mh__whatif_input *in, int i, struct mh__sim_replay_opts *ro)
{
    memset(ro, 0, sizeof *ro);
    ro->conf = in->conf;
    ro->capacity = in->total_bytes;
    switch (i) {
    case 0:
        ro->use_oracle = 1;
        return 1; /* the recorded settings */
    case 1:
        ro->conf.expandable_segments = 1;
        return 1; /* segments that grow */
    case 2:
        ro->conf.max_split_size = 20ull << 20;
        return 1;
    case 3:
        ro->capacity = 400ull << 20;
        return 1; /* a device too small */
    case 4:
        ro->use_oracle = 1, ro->address_ties = 1;
        return 1;
    default:
        return 0;
    }
}

/* Every replay of every device of `path` from the file, from the copy and
 * from the array agree, as does the recorded run. */
static void check_file(const char *path, int ndev)
{
    struct mh__session *s;
    struct mh__whatif_source *file, *copy;
    cr_assert_eq(mh__session_open(path, &s), 0);
    mh__session_set_progress(s, NULL);
    cr_assert_eq(mh__whatif_source_new(&file), 0);
    cr_assert_eq(mh__whatif_source_new(&copy), 0);
    mh__whatif_source_keep_copy(copy);
    cr_assert_eq(mh__session_observe(s, mh__whatif_source_observer(file)), 0);
    cr_assert_eq(mh__session_observe(s, mh__whatif_source_observer(copy)), 0);
    cr_assert_eq(mh__session_run(s, 0), 0);
    cr_expect_null(file->copy, "a file is read again, not copied");
    cr_expect_not_null(copy->copy);
    for (int d = 0; d < ndev; d++) {
        struct mh__whatif_input fin, cin;
        struct evs arr;
        cr_assert_eq(mh__whatif_input(file, s, d, &fin), 0);
        cr_assert_eq(mh__whatif_input(copy, s, d, &cin), 0);
        input_events(path, d, &arr);
        cr_expect_eq(fin.t0_ns, arr.ev[0].time_ns);
        struct mh__whatif_outcome fo, co, ao;
        cr_assert_eq(mh__whatif_recorded(&fin, &fo), 0);
        cr_assert_eq(mh__whatif_recorded(&cin, &co), 0);
        recorded_of(&arr, &fin.conf, d, &ao);
        expect_same_outcome(&fo, &ao, "recorded run, file");
        expect_same_outcome(&co, &ao, "recorded run, copy");
        cr_expect_gt(ao.peak_reserved, 0);
        struct mh__sim_replay_opts ro;
        for (int i = 0; replay_opts(&fin, i, &ro); i++) {
            struct mh__sim_replay_result fr, cr, ar;
            char what[64];
            snprintf(what, sizeof what, "%s device %d settings %d", path, d, i);
            fin.address_ties = cin.address_ties = ro.address_ties;
            cr_assert_eq(mh__whatif_run(&fin, &ro, &fo, &fr), 0, "%s", what);
            cr_assert_eq(mh__whatif_run(&cin, &ro, &co, &cr), 0, "%s", what);
            cr_assert_eq(mh__sim_replay_events(arr.ev, arr.n, &ro, &ar), 0, "%s", what);
            expect_same_result(&fr, &ar, what);
            expect_same_result(&cr, &ar, what);
            expect_same_outcome(&fo, &co, what);
            cr_expect_eq(fr.input_events, arr.n, "%s: every event of the input read", what);
        }
        free(arr.ev);
    }
    mh__whatif_source_free(file);
    mh__whatif_source_free(copy);
    mh__session_close(s);
}

Test(whatif_source, file_copy_and_array_agree)
{
    char *one = recording("", "", 1, 80ull << 30, 6);
    char *wrong = recording("expandable_segments:True", "", 1, 80ull << 30, 6);
    char *two = recording("", "", 2, 80ull << 30, 4);
    char *oom = recording("", "", 1, 700ull << 20, 6);
    check_file(one, 1);
    check_file(wrong, 1);
    check_file(two, 2);
    check_file(oom, 1);
    for (char **p = (char *[]){one, wrong, two, oom, NULL}; *p; p++) {
        unlink(*p);
        free(*p);
    }
}

/* The expandable-segments what-if of the file's first device. */
static void expandable(void *user, const struct mh__whatif_input *in,
                       const struct mh__whatif_outcome *recorded, struct mh__sim_replay_opts *ro,
                       int *baseline)
{
    (void)user;
    (void)recorded;
    memset(ro, 0, sizeof *ro);
    ro->conf = in->conf;
    ro->conf.expandable_segments = 1;
    ro->capacity = in->total_bytes;
    *baseline = 0;
}

/* The run `expandable` asks for, with the replay started during the pass
 * (`early`) or not; `append` bytes are added to the file after the pass. */
static void run_expandable(const char *path, int early, int append, struct mh__whatif_outcome *out,
                           struct mh__sim_replay_result *res)
{
    struct mh__session *s;
    struct mh__whatif_source *w;
    struct mh__whatif_input in;
    struct mh__sim_replay_opts ro;
    int baseline;
    cr_assert_eq(mh__session_open(path, &s), 0);
    mh__session_set_progress(s, NULL);
    cr_assert_eq(mh__whatif_source_new(&w), 0);
    if (early)
        mh__whatif_source_expect(w, expandable, NULL);
    cr_assert_eq(mh__session_observe(s, mh__whatif_source_observer(w)), 0);
    cr_assert_eq(mh__session_run(s, 0), 0);
    cr_expect_eq(w->expect != NULL, early, "the replay started during the pass");
    if (append) {
        FILE *f = fopen(path, "ab");
        cr_assert_not_null(f);
        for (int i = 0; i < append; i++)
            fputc(i, f);
        fclose(f);
    }
    cr_assert_eq(mh__whatif_input(w, s, -1, &in), 0);
    expandable(NULL, &in, NULL, &ro, &baseline);
    cr_assert_eq(mh__whatif_run(&in, &ro, out, res), 0);
    mh__whatif_source_free(w);
    mh__session_close(s);
}

Test(whatif_source, replay_started_during_the_pass)
{
    char *path = recording("", "", 1, 80ull << 30, 8);
    struct mh__whatif_outcome a, b, c;
    struct mh__sim_replay_result ra, rb, rc;
    run_expandable(path, 0, 0, &a, &ra);
    run_expandable(path, 1, 0, &b, &rb);
    expect_same_outcome(&a, &b, "started during the pass");
    expect_same_result(&ra, &rb, "started during the pass");
    run_expandable(path, 1, 4096, &c, &rc); /* the file grew: replayed again, as the pass saw it */
    expect_same_outcome(&a, &c, "file changed");
    expect_same_result(&ra, &rc, "file changed");
    unlink(path);
    free(path);
}

Test(whatif_source, two_at_once_equal_one_after_the_other)
{
    char *path = recording("expandable_segments:True", "", 1, 80ull << 30, 6);
    struct mh__session *s;
    struct mh__whatif_source *w;
    struct mh__whatif_input in;
    cr_assert_eq(mh__session_open(path, &s), 0);
    mh__session_set_progress(s, NULL);
    cr_assert_eq(mh__whatif_source_new(&w), 0);
    cr_assert_eq(mh__session_observe(s, mh__whatif_source_observer(w)), 0);
    cr_assert_eq(mh__session_run(s, 0), 0);
    cr_assert_eq(mh__whatif_input(w, s, -1, &in), 0);
    /* the recorded settings are wrong: the tie rule is tried both ways */
    struct mh__sim_replay_opts ro;
    struct mh__whatif_outcome base1, base2, out1, out2;
    struct mh__sim_replay_result res1, res2;
    int base_rc;
    expandable(NULL, &in, NULL, &ro, &(int){0});
    cr_assert_eq(mh__whatif_pick_ties(&in, in.total_bytes, &base1), 0);
    int ties = in.address_ties;
    cr_assert_eq(mh__whatif_run(&in, &ro, &out1, &res1), 0);
    in.address_ties = !ties; /* picked again, not kept */
    cr_assert_eq(
        mh__whatif_run_with_baseline(&in, in.total_bytes, &ro, &base2, &base_rc, &out2, &res2), 0);
    cr_assert_eq(base_rc, 0);
    cr_expect_eq(in.address_ties, ties, "the same tie rule");
    cr_expect_lt(base1.match, 100.0, "the baseline is not exact: both rules ran");
    cr_expect_eq(base1.match, base2.match);
    cr_expect_eq(base1.events, base2.events);
    expect_same_outcome(&out1, &out2, "what-if run");
    expect_same_result(&res1, &res2, "what-if run");
    struct mh__whatif_job jobs[3];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < 3; i++) {
        jobs[i].ro = ro;
        jobs[i].ro.capacity = (uint64_t)(i + 1) << 28;
    }
    jobs[2].baseline = 1;
    jobs[2].ro.use_oracle = 1;
    jobs[2].ro.conf = in.conf;
    cr_assert_eq(mh__whatif_run_all(&in, jobs, 3), 0);
    for (int i = 0; i < 3; i++) {
        struct mh__whatif_outcome o;
        char what[32];
        snprintf(what, sizeof what, "job %d", i);
        if (jobs[i].baseline)
            cr_assert_eq(mh__whatif_baseline(&in, jobs[i].ro.capacity, &o), 0);
        else
            cr_assert_eq(mh__whatif_run(&in, &jobs[i].ro, &o, NULL), 0);
        expect_same_outcome(&jobs[i].out, &o, what);
    }
    mh__whatif_source_free(w);
    mh__session_close(s);
    unlink(path);
    free(path);
}
