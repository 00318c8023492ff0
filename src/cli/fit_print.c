/* fit_print.c - the text answer of `memhist fit`: per card the largest
 * value that fits with its peaks and what is left, the first value that
 * does not and what it ran out on; the levers at that value; every run
 * with its figures and recording; notes on what the runs showed (memory
 * not monotonic in the value, peaks still rising, retries). Reads the
 * answer structs of fit.h; computes nothing. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "fit.h"

const char *mh__fit_value_text(const struct mh__fit_opts *o, int64_t v, char *buf, size_t len)
{
    snprintf(buf, len, "%s=%" PRId64, o->cmd.name, v);
    return buf;
}

static const char *phase_text(int phase)
{
    return phase > 0 && phase < MH_PHASE_COUNT ? mh_phase_name((unsigned)phase) : "";
}

static void print_header(const struct mh__fit *f)
{
    const struct mh__fit_opts *o = f->o;
    char cmd[512], hr[32];
    mh__fit_command_text(o->cmd.argv, cmd, sizeof cmd);
    printf("memhist fit: %s from %" PRId64 " to %" PRId64 ", %" PRIu64 " step%s a run: %s\n",
           o->cmd.name, o->lo, o->hi, o->steps, o->steps == 1 ? "" : "s", cmd);
    printf("%d run%s in %.1f s, up to %d at a time", f->ntrials, f->ntrials == 1 ? "" : "s",
           f->wall_seconds, f->jobs);
    if (o->cards[0].headroom)
        printf("; %s kept free on each card", mh__bytes_text(o->cards[0].headroom, hr));
    printf("\n\n");
}

static void ran_out_text(const struct mh__fit_trial *t, char *buf, size_t len)
{
    char b[32], s[24];
    if (t->outcome != MH__FIT_OOM) {
        snprintf(buf, len, "-");
        return;
    }
    const char *ph = phase_text(t->oom.phase);
    snprintf(buf, len, "asking for %s in %s%s%s", mh__bytes_text(t->oom.request, b),
             mh__step_text(t->oom.step, s), *ph ? ", " : "", ph);
}

/* The card column: as wide as the longest card name. */
static int label_width(const struct mh__fit_opts *o)
{
    int w = 6;
    for (int c = 0; c < o->ncards; c++)
        w = mh__cli_fit_width(w, o->cards[c].label);
    return w;
}

static void print_cards(const struct mh__fit *f)
{
    const struct mh__fit_opts *o = f->o;
    char b[5][32], v1[64], v2[64], out[128];
    int w = label_width(o);
    printf("%-*s %10s  %-12s %10s %11s %10s  %-12s %s\n", w, "card", "usable", "fits", "peak alloc",
           "peak reserv", "to spare", "fails", "ran out");
    for (int c = 0; c < o->ncards; c++) {
        const struct mh__fit_card *card = &o->cards[c];
        const struct mh__fit_answer *a = &f->answers[c];
        uint64_t usable = card->capacity - o->context;
        printf("%-*s %10s  ", w, card->label, mh__bytes_text(usable, b[0]));
        if (a->fit_value >= 0)
            printf("%-12s %10s %11s %10s  ", mh__fit_value_text(o, a->fit_value, v1, sizeof v1),
                   mh__bytes_text(a->fit_peak_allocated, b[1]),
                   mh__bytes_text(a->fit_peak_reserved, b[2]),
                   mh__bytes_text(usable > a->fit_peak_reserved ? usable - a->fit_peak_reserved : 0,
                                  b[3]));
        else
            printf("%-12s %10s %11s %10s  ", "none", "-", "-", "-");
        if (a->fail_value >= 0 && a->fail_trial >= 0)
            ran_out_text(&f->trials[a->fail_trial], out, sizeof out);
        else
            snprintf(out, sizeof out,
                     a->status == MH__FIT_ALL_FIT ? "(the top of the range fits)" : "-");
        printf("%-12s %s\n",
               a->fail_value >= 0 ? mh__fit_value_text(o, a->fail_value, v2, sizeof v2) : "none",
               out);
    }
}

static const char *lever_result(const struct mh__fit_lever *l, char *buf, size_t len)
{
    char b1[32], b2[32];
    if (l->kind == MH__FIT_LEVER_SETTING && l->in_effect)
        snprintf(buf, len, "already in effect");
    else if (l->kind == MH__FIT_LEVER_SETTING && l->avoids)
        snprintf(buf, len, "no OOM, peak reserved %s", mh__bytes_text(l->peak_reserved, b1));
    else if (l->kind == MH__FIT_LEVER_SETTING)
        snprintf(buf, len, "still runs out (%" PRIu64 " OOM%s)", l->ooms, l->ooms == 1 ? "" : "s");
    else if (l->kind == MH__FIT_LEVER_PLAN_OOM)
        snprintf(buf, len, "frees %s at the OOM: %s", mh__bytes_text(l->freed, b1),
                 l->avoids ? "the request would then fit" : "still not enough");
    else
        snprintf(buf, len, "peak allocated %s -> %s", mh__bytes_text(l->peak_before, b1),
                 mh__bytes_text(l->peak_after, b2));
    return buf;
}

static void print_lever(const struct mh__fit *f, const struct mh__fit_answer *a,
                        const struct mh__fit_lever *l)
{
    char res[160], where[96], v[64];
    lever_result(l, res, sizeof res);
    if (l->kind == MH__FIT_LEVER_SETTING) {
        printf("  %-56s %-17s %s\n", l->setting, l->checked ? "checked by replay" : "estimate",
               res);
        return;
    }
    if (l->kind == MH__FIT_LEVER_PLAN_OOM)
        snprintf(where, sizeof where, "at the OOM");
    else
        snprintf(where, sizeof where, "at %s", mh__fit_value_text(f->o, a->fit_value, v, sizeof v));
    printf("  checkpoint %d layer%s %-*s estimate          %s\n      %s\n", l->layers,
           l->layers == 1 ? " " : "s", 42, where, res, l->setting);
}

static void print_levers(const struct mh__fit *f)
{
    const struct mh__fit_opts *o = f->o;
    char v[64];
    for (int c = 0; c < o->ncards; c++) {
        const struct mh__fit_answer *a = &f->answers[c];
        if (a->nlevers == 0)
            continue;
        printf("\n%s at %s", o->cards[c].label, mh__fit_value_text(o, a->fail_value, v, sizeof v));
        if (a->fail_trial >= 0)
            printf(" (memhist oom %s)", f->trials[a->fail_trial].path);
        printf(":\n");
        for (int i = 0; i < a->nlevers; i++)
            print_lever(f, a, &a->levers[i]);
    }
}

static void print_trials(const struct mh__fit *f)
{
    const struct mh__fit_opts *o = f->o;
    char b[4][32];
    int w = label_width(o);
    printf("\nruns:\n%4s %8s  %-*s %-15s %10s %11s %11s %5s %8s %10s  %s\n", "#", o->cmd.name, w,
           "ran as", "result", "peak alloc", "peak reserv", "requested", "steps", "seconds",
           "host mem", "recording");
    for (int i = 0; i < f->ntrials; i++) {
        const struct mh__fit_trial *t = &f->trials[i];
        printf("%4d %8" PRId64 "  %-*s %-15s %10s %11s %11s %5" PRId64 " %8.1f %10s  %s\n", i + 1,
               t->value, w, o->cards[t->card].label,
               t->outcome == MH__FIT_RAN   ? "ran"
               : t->outcome == MH__FIT_OOM ? "out of memory"
                                          : mh__fit_outcome_name(t->outcome),
               mh__bytes_text(t->peak_allocated, b[0]), mh__bytes_text(t->peak_reserved, b[1]),
               mh__bytes_text(t->peak_requested, b[2]), t->steps, t->seconds,
               mh__bytes_text(t->host_peak, b[3]), t->path);
    }
}

static void print_notes(const struct mh__fit *f)
{
    const struct mh__fit_opts *o = f->o;
    char v1[64], v2[64], b1[32], b2[32];
    int shown = 0;
    for (int c = 0; c < o->ncards; c++) {
        const struct mh__fit_answer *a = &f->answers[c];
        const char *label = o->cards[c].label;
        if (a->not_monotonic && !a->nm_by_peak)
            printf("%snote: %s: memory is not monotonic in %s: %s does not fit but %s does; the "
                   "answer holds for the values run, others between were not all tried\n",
                   shown++ ? "" : "\n", label, o->cmd.name,
                   mh__fit_value_text(o, a->nm_low, v1, sizeof v1),
                   mh__fit_value_text(o, a->nm_high, v2, sizeof v2));
        else if (a->not_monotonic)
            printf("%snote: %s: peak reserved is not monotonic in %s: lower at %s than at %s\n",
                   shown++ ? "" : "\n", label, o->cmd.name,
                   mh__fit_value_text(o, a->nm_high, v1, sizeof v1),
                   mh__fit_value_text(o, a->nm_low, v2, sizeof v2));
        if (a->status == MH__FIT_UNDECIDED)
            printf("%snote: %s: undecided after %" PRIu64 " runs (--max-runs)\n",
                   shown++ ? "" : "\n", label, o->max_trials);
        if (a->fit_trial >= 0 && f->trials[a->fit_trial].retries)
            printf("%snote: %s: at %s the allocator freed its cache and retried %" PRIu64
                   " time%s: it fits, but those steps are slower\n",
                   shown++ ? "" : "\n", label, mh__fit_value_text(o, a->fit_value, v1, sizeof v1),
                   f->trials[a->fit_trial].retries,
                   f->trials[a->fit_trial].retries == 1 ? "" : "s");
    }
    for (int i = 0; i < f->ntrials; i++) {
        const struct mh__fit_trial *t = &f->trials[i];
        if (t->rising)
            printf("%snote: run %d (%s): the last step's peak reserved (%s) is above every earlier "
                   "step's (%s): the peak may not have settled; try a larger --steps\n",
                   shown++ ? "" : "\n", i + 1, mh__fit_value_text(o, t->value, v1, sizeof v1),
                   mh__bytes_text(t->rising_to, b1), mh__bytes_text(t->rising_from, b2));
        if (t->mem_info)
            printf("%snote: run %d (%s): the program asked how much device memory is free: runs "
                   "answer only the card they ran as\n",
                   shown++ ? "" : "\n", i + 1, mh__fit_value_text(o, t->value, v1, sizeof v1));
    }
}

void mh__fit_print_text(const struct mh__fit *f)
{
    print_header(f);
    print_cards(f);
    print_levers(f);
    print_trials(f);
    print_notes(f);
}

void mh__fit_print_tail(const struct mh__fit_trial *t, int lines)
{
    FILE *fp = fopen(t->log, "r");
    char buf[MH__FIT_TAIL_LINES][512];
    int n = 0;
    if (!fp)
        return;
    if (lines > MH__FIT_TAIL_LINES)
        lines = MH__FIT_TAIL_LINES;
    while (fgets(buf[n % lines], sizeof buf[0], fp))
        n++;
    fclose(fp);
    for (int i = n > lines ? n - lines : 0; i < n; i++) {
        char esc[2048], *line = buf[i % lines];
        line[strcspn(line, "\r\n")] = '\0';
        fprintf(stderr, "  | %s\n", mh__cli_text(line, esc, sizeof esc));
    }
}
