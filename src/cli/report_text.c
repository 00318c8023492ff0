/* report_text.c - the human-readable form of `memhist report` (see device_report.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "printers.h"
#include "stacks.h"
#include "whatif_check.h"

static void print_header(const struct mh__replay *rp)
{
    char b1[256], b2[256];
    const char *source = mh__cli_text(mh_reader_meta(rp->reader, "source"), b1, sizeof b1);
    const char *torch = mh__cli_text(mh_reader_meta(rp->reader, "torch_version"), b2, sizeof b2);
    printf("memhist report: %s", rp->path);
    if (source)
        printf(" (%s%s%s)", source, torch ? ", torch " : "", torch ? torch : "");
    printf("\n%" PRIu64 " events", rp->summary.events);
    if (rp->summary.dropped)
        printf(", %" PRIu64 " dropped by the recorder", rp->summary.dropped);
    if (rp->read_error)
        printf(", DAMAGED: read up to byte %" PRIu64, rp->summary.damage_offset);
    if (rp->t0_ns != rp->summary.first_time_ns) {
        char t[32];
        printf("; times from the job's earliest start (this file's first event at %s)",
               mh__cli_duration(rp->summary.first_time_ns - rp->t0_ns, t));
    }
    printf("\n");
    /* an imported snapshot's caveats (snapshot_import.c) */
    static const char *const notes[] = {"synthetic_times", "trace_start", "initial_state",
                                        "trace_overflowed"};
    for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++) {
        const char *text = mh_reader_meta(rp->reader, notes[i]);
        if (text)
            printf("note: %s\n", text);
    }
}

/* Time of an event from the start; a peak never reached (no allocation) has
 * time 0 and reads as the start. */
static uint64_t since(uint64_t t, uint64_t t0)
{
    return t > t0 ? t - t0 : 0;
}

/* mh__step_text, or "after step N" for a step in the device's tail. */
static const char *device_step_text(const struct mh__replay *rp, int device, int64_t step,
                                    char buf[24])
{
    struct mh_step_stats tail;
    if (step > 0 && mh_model_tail(rp->model, device, &tail) == 0 && tail.step == step) {
        snprintf(buf, 24, "after step %lld", (long long)((step - 1) % 1000000000000LL));
        return buf;
    }
    return mh__step_text(step, buf);
}

static void print_peaks(const struct mh__replay *rp, const struct mh__device_report *d)
{
    char b[32], t[32], s[24], name[256];
    uint64_t t0 = rp->t0_ns;
    printf("\ndevice %d", d->device);
    if (d->info.name && d->info.name[0])
        printf(" (%s%s%s)", mh__cli_text(d->info.name, name, sizeof name),
               d->info.total_bytes ? ", " : "",
               d->info.total_bytes ? mh__bytes_text(d->info.total_bytes, b) : "");
    printf("\n  peak allocated  %-11s at %s (%s)\n", mh__bytes_text(d->peak_allocated.value, b),
           mh__cli_duration(since(d->peak_allocated.time_ns, t0), t),
           device_step_text(rp, d->device, d->peak_allocated.step, s));
    printf("  peak reserved   %-11s at %s (%s)\n", mh__bytes_text(d->peak_reserved.value, b),
           mh__cli_duration(since(d->peak_reserved.time_ns, t0), t),
           device_step_text(rp, d->device, d->peak_reserved.step, s));
    printf("  at the end      allocated %s", mh__bytes_text(d->final.allocated, b));
    printf(", reserved %s in %u segment%s\n", mh__bytes_text(d->final.reserved, t),
           d->final.segments, d->final.segments == 1 ? "" : "s");
    if (d->final.driver_outside)
        printf("  outside the allocator (driver level) at the end: %s\n",
               mh__bytes_text(d->final.driver_outside, b));
}

/* Length of a stack text without its "(+N more frames)" line. */
static size_t shown_frames_length(const char *text)
{
    const char *more = strstr(text, "(+");
    for (const char *p = more; p; p = strstr(p + 1, "(+"))
        more = p;
    return more ? (size_t)(more - text) : strlen(text);
}

/* Whether group i's stack text shows the same frames as another listed group's. */
static int looks_like_another(char (*texts)[4096], size_t n, size_t i)
{
    size_t len = shown_frames_length(texts[i]);
    for (size_t k = 0; k < n; k++)
        if (k != i && shown_frames_length(texts[k]) == len && memcmp(texts[k], texts[i], len) == 0)
            return 1;
    return 0;
}

static void print_top(const struct mh__replay *rp, const struct mh__device_report *d,
                      size_t max_frames)
{
    char b[32];
    if (d->ntop == 0)
        return;
    char (*texts)[4096] = calloc(d->ntop, sizeof *texts);
    if (!texts)
        return;
    const char *sep = "\n                                    ";
    for (size_t i = 0; i < d->ntop; i++)
        mh__cli_stack_text(rp->reader, d->top[i].stack, sep, max_frames, 0, texts[i],
                           sizeof texts[i]);
    printf("\n  live at the allocated peak: %s in %" PRIu64 " blocks; largest groups by stack:\n",
           mh__bytes_text(d->live_at_peak_bytes, b), d->live_at_peak_count);
    for (size_t i = 0; i < d->ntop; i++) {
        const struct mh__stack_group *g = &d->top[i];
        double share = d->live_at_peak_bytes ? 100.0 * g->bytes / d->live_at_peak_bytes : 0;
        printf("  %11s %5.1f%% %6" PRIu64 " block%s  ", mh__bytes_text(g->bytes, b), share, g->count,
               g->count == 1 ? " " : "s");
        char again[4096];
        const char *text = texts[i];
        if (text[0] && looks_like_another(texts, d->ntop, i))
            text = mh__cli_stack_text(rp->reader, g->stack, sep, max_frames, 1, again,
                                      sizeof again);
        printf("%s\n", text[0] ? text : "<no stack recorded>");
    }
    free(texts);
}

static void print_categories(const struct mh__device_report *d)
{
    char b[32];
    int any = 0;
    for (int c = 0; c < MH__CAT_COUNT; c++) {
        if (!d->category_at_peak[c])
            continue;
        printf("%s%s %s",
               any ? ", " : "\n  by category at the allocated peak: ", mh__category_name(c),
               mh__bytes_text(d->category_at_peak[c], b));
        any = 1;
    }
    if (any)
        printf("\n");
}

/* One row of the step table; `label` names it ("setup") or NULL for the number. */
static void print_stats_row(const struct mh_step_stats *st, const char *label)
{
    char a[32], r[32], e[32], ar[32], is[32], lf[32], seg[24], num[24];
    struct mh_step_stats s = *st;
    snprintf(num, sizeof num, "%" PRId64, s.step);
    snprintf(seg, sizeof seg, "+%" PRIu64 "/-%" PRIu64, s.segment_allocs, s.segment_frees);
    printf("  %5s %11s %11s %11s %5.1f%% %11s %11s %11s %5u %9s %5" PRIu64 " %4" PRIu64 "\n",
           label ? label : num, mh__bytes_text(s.peak_allocated, a), mh__bytes_text(s.peak_reserved, r),
           mh__bytes_text(s.end_reserved, e), 100.0 * s.fragmentation,
           mh__bytes_text(s.allocated_at_reserved_peak, ar),
           mh__bytes_text(s.inactive_split_at_reserved_peak, is),
           mh__bytes_text(s.largest_free_at_reserved_peak, lf), s.segments_at_end, seg, s.retries,
           s.ooms);
}

static void print_step_row(const struct mh__replay *rp, int device, size_t i)
{
    struct mh_step_stats s;
    if (mh_model_step(rp->model, device, i, &s) == 0)
        print_stats_row(&s, NULL);
}

/* The per-step table: every step, the --steps window, or for long runs the
 * rows mh__report_step_rows picks, with "..." for the steps in between. */
static void print_steps(const struct mh__replay *rp, int device, const struct mh__report_view *v)
{
    size_t n = mh_model_step_count(rp->model, device);
    size_t *rows = n ? malloc(n * sizeof *rows) : NULL;
    size_t shown = rows ? mh__report_step_rows(rp->model, device, v, rows, n) : 0;
    if (n && v->steps.has_steps && shown == 0)
        printf("\n  no steps in the chosen window (the run has %zu)\n", n);
    if (shown)
        printf("\n  %5s %11s %11s %11s %6s %11s %11s %11s %5s %9s %5s %4s\n", "step",
               "peak alloc", "peak reserv", "end reserv", "frag", "alloc@rpeak", "inact split",
               "largest free", "segs", "seg +/-", "retry", "ooms");
    struct mh_step_stats setup; /* the set-up before step 0, when a marker opened step 0 */
    if (shown && !v->steps.has_steps && mh_model_setup(rp->model, device, &setup) == 0 &&
        setup.peak_reserved > 0)
        print_stats_row(&setup, "setup");
    for (size_t k = 0; k < shown; k++) {
        size_t gap = rows[k] - (k ? rows[k - 1] + 1 : 0);
        if (gap && !v->steps.has_steps)
            printf("  %5s (%zu step%s)\n", "...", gap, gap == 1 ? "" : "s");
        print_step_row(rp, device, rows[k]);
    }
    struct mh_step_stats tail; /* after the last complete step: shown, never a step */
    if (shown && !v->steps.has_steps && mh_model_tail(rp->model, device, &tail) == 0)
        print_stats_row(&tail, "tail");
    if (shown && shown < n && !v->steps.has_steps)
        printf("  %zu of %zu steps: the first and last, the peak steps and the outliers; "
               "--all-steps shows every step, --steps A:B a range\n", shown, n);
    if (shown && !v->steps.has_steps && mh_model_tail(rp->model, device, &tail) == 0)
        printf("  tail: after step %lld, not a complete step (left out of the trend)\n",
               (long long)(tail.step - 1));
    free(rows);
}

static const char *signed_bytes(int64_t v, char buf[32])
{
    char b[32];
    snprintf(buf, 32, "%s%s", v < 0 ? "-" : "+",
             mh__bytes_text(v < 0 ? (uint64_t)-v : (uint64_t)v, b));
    return buf;
}

static void print_trend(const struct mh__device_report *d)
{
    const struct mh__frag_trend *t = &d->trend;
    char b[3][32];
    if (t->steps < 2)
        return;
    printf("  trend: peak reserved %s and peak allocated %s from step %" PRId64 " to its highest "
           "step; ",
           signed_bytes(t->reserved_growth, b[0]), signed_bytes(t->allocated_growth, b[1]),
           t->first_step);
    int64_t gain = t->whatif_ok ? (int64_t)t->whatif_peak_reserved - (int64_t)d->peak_reserved.value : 0;
    if (!t->fragmenting)
        printf("no fragmentation trend");
    else if (t->whatif_ok && gain >= 0)
        printf("fragmentation: reserved grows while allocated does not; expandable_segments:True "
               "would not lower the peak");
    else
        printf("fragmentation: reserved grows while allocated does not; try expandable_segments:True");
    if (t->whatif_ok)
        printf(" (what-if with expandable_segments:True: peak reserved %s%s)",
               signed_bytes(gain, b[2]), !t->fragmenting ? ""
                                         : t->whatif_checked ? ", checked by replay"
                                                             : ", an estimate");
    if (t->whatif_ok && t->fragmenting && !t->whatif_checked)
        printf("\n  the replay under the recorded settings reproduces %.1f%% of the run's "
               "allocator events (checked from %.0f%%)", t->baseline_match, MH__WHATIF_CHECKED_MATCH);
    printf("\n");
}

/* One line when some allocation site grows across steps (growth.h). */
static void print_growth(const struct mh__replay *rp, const struct mh__device_report *d)
{
    if (!d->ngrowth)
        return;
    const struct mh__growth_entry *e = &d->growth[0];
    char b[32], label[512], more[64] = "";
    if (d->ngrowth > 1)
        snprintf(more, sizeof more, "; %zu sites grow, ", d->ngrowth);
    printf("  growth: %s per step stays live, from %s, since step %lld "
           "(grew in %u of %u steps)%s%s\n",
           mh__bytes_text(e->bytes_per_step, b), mh__growth_label(rp->reader, e, label, sizeof label),
           (long long)e->first_step, e->steps_grown, e->steps, more[0] ? more : "; ",
           "`memhist growth` lists them");
}

static void print_ooms(const struct mh__replay *rp, int device)
{
    char b[5][32], s[24];
    for (size_t i = 0; i < mh_model_oom_count(rp->model); i++) {
        struct mh_oom_info o;
        if (mh_model_oom(rp->model, i, &o) != 0 || o.device != device)
            continue;
        printf("\n  OOM at %s (%s): requested %s on stream %#" PRIx64 "\n",
               mh__cli_duration(since(o.time_ns, rp->t0_ns), b[0]),
               device_step_text(rp, device, o.step, s),
               mh__bytes_text(o.request, b[1]), o.stream);
        printf("      device free %s, reserved %s, allocated %s\n",
               mh__bytes_text(o.device_free, b[2]), mh__bytes_text(o.reserved, b[3]),
               mh__bytes_text(o.allocated, b[4]));
        printf("      reserved but unallocated %s, largest free block %s (same stream), %s (any)\n",
               mh__bytes_text(o.reserved - o.allocated, b[1]),
               mh__bytes_text(o.largest_free_same_stream, b[2]),
               mh__bytes_text(o.largest_free_any, b[3]));
    }
}

static void print_anomalies(const struct mh__replay *rp)
{
    int any = 0;
    for (int a = 1; a < MH_ANOM_COUNT; a++) {
        uint64_t n = mh_model_anomaly_count(rp->model, a);
        if (!n)
            continue;
        printf("%s%" PRIu64 " %s", any ? ", " : "\nevents inconsistent with the allocator state: ", n,
               mh_anomaly_name(a));
        any = 1;
    }
    if (any)
        printf("\n");
}

void mh__report_print_text(const struct mh__replay *rp, const struct mh__device_report *devs,
                           size_t ndev, const struct mh__report_view *v)
{
    print_header(rp);
    if (ndev == 0)
        printf("\nno allocator events in this file\n");
    for (size_t i = 0; i < ndev; i++) {
        print_peaks(rp, &devs[i]);
        print_top(rp, &devs[i], v->max_frames);
        print_categories(&devs[i]);
        print_steps(rp, devs[i].device, v);
        print_trend(&devs[i]);
        print_growth(rp, &devs[i]);
        print_ooms(rp, devs[i].device);
    }
    print_anomalies(rp);
}
