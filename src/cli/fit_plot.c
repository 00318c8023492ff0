/* fit_plot.c - the PNG of `memhist fit`: fills viz/plot/plot_fit.h's arrays
 * from the answer (per kind of card and value, the run on the largest
 * device of the kind that completed, else one that ran out; per card its
 * limit and largest fitting value), renders it into memory and writes it
 * all or nothing. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fit.h"
#include "plot_fit.h"

/* The run shown at its value and kind: completed before out of memory,
 * then the largest device. */
static int better(const struct mh__fit_trial *t, const struct mh__fit_trial *best)
{
    int ran = t->outcome == MH__FIT_RAN, best_ran = best->outcome == MH__FIT_RAN;
    return ran != best_ran ? ran : t->capacity > best->capacity;
}

static size_t fill_points(const struct mh__fit *f, struct mh__fit_plot_point *pts, const int *series)
{
    size_t n = 0;
    for (int i = 0; i < f->ntrials; i++) {
        const struct mh__fit_trial *t = &f->trials[i];
        if (t->outcome != MH__FIT_RAN && t->outcome != MH__FIT_OOM)
            continue;
        int shown = 1;
        for (int j = 0; j < f->ntrials && shown; j++) {
            const struct mh__fit_trial *u = &f->trials[j];
            if (j != i && u->kind == t->kind && u->value == t->value &&
                (u->outcome == MH__FIT_RAN || u->outcome == MH__FIT_OOM) &&
                (better(u, t) || (!better(t, u) && j < i)))
                shown = 0;
        }
        if (shown)
            pts[n++] = (struct mh__fit_plot_point){
                t->value, t->outcome == MH__FIT_OOM ? t->oom.reserved : t->peak_reserved,
                t->outcome == MH__FIT_OOM, series[t->kind]};
    }
    return n;
}

int mh__fit_write_plot(const struct mh__fit *f)
{
    const struct mh__fit_opts *o = f->o;
    struct mh__fit_plot_point pts[MH__FIT_MAX_TRIALS];
    struct mh__fit_plot_card cards[MH__FIT_MAX_CARDS];
    const char *names[MH__FIT_MAX_CARDS];
    int series[MH__FIT_MAX_CARDS];
    size_t nseries = 0;
    for (int c = 0; c < o->ncards; c++) {
        if (o->cards[c].kind == c) {
            series[c] = (int)nseries;
            names[nseries++] = o->cards[c].gpu->key;
        }
        cards[c] = (struct mh__fit_plot_card){o->cards[c].label, o->cards[c].limit,
                                             f->answers[c].fit_value, 0};
    }
    for (int c = 0; c < o->ncards; c++)
        cards[c].series = series[o->cards[c].kind];
    char title[160];
    snprintf(title, sizeof title, "memhist fit: peak reserved against %s", o->cmd.name);
    struct mh__fit_plot p = {
        title, o->cmd.name,       names, nseries, pts, fill_points(f, pts, series),
        cards, (size_t)o->ncards, 0,     0};
    struct mh__sink sink;
    char err[160];
    mh__sink_init_mem(&sink);
    int rc = mh__plot_fit_render(&p, &sink, err, sizeof err);
    if (rc < 0) {
        mh__cli_error("fit: %s: %s", o->plot, rc == MH_EINVAL ? err : mh_strerror(rc));
        mh__sink_free(&sink);
        return -1;
    }
    struct mh__outfile of;
    int errnum = 0;
    if (mh__cli_output_open(&of, o->plot, NULL, 0) < 0) {
        mh__sink_free(&sink);
        return -1;
    }
    if (fwrite(sink.buf, 1, sink.len, of.fp) != sink.len) {
        errnum = errno ? errno : EIO;
        rc = MH_EIO;
    }
    mh__sink_free(&sink);
    if (mh__cli_output_close(&of, o->plot, rc, errnum) < 0)
        return -1;
    mh__cli_status_wrote(o->plot, NULL, "peak reserved of %d run%s", f->ntrials,
                         f->ntrials == 1 ? "" : "s");
    return 0;
}
