/* fit_search.c - the search of `memhist fit`: what the runs prove about
 * each card, and which runs to make next.
 *
 * What a run proves (mh__fit_fact). A run on the card's own virtual device
 * (its capacity less the headroom) is that card's answer. A run on another
 * device of the same kind (preset: the same SMs and compute capability,
 * which torch's kernels and workspaces depend on) answers too where the
 * caching allocator's decisions cannot have differed: they depend on the
 * capacity only through allocations the device refuses (then torch frees
 * its cache and retries, or runs out) and through the program asking how
 * much memory is free. A run in which neither happened (the virtual
 * device's counts say so) went exactly as it goes on every card of its kind
 * whose memory holds its peak in use: it fits them, with the same peaks.
 * And a run whose program had more bytes requested and not yet freed at
 * once than a card's allocator may use cannot fit that card, whatever the
 * allocator does. Anything else needs a run on the card itself.
 *
 * Which runs come next. For each card, the values known to fit and to fail
 * bracket its boundary: the largest value that fits (lo) and the smallest
 * above it that fails (hi). Peak memory is close to affine in batch size
 * or sequence length, so the boundary is predicted from the runs so far
 * (the line through the two clean runs nearest the card's limit, or from
 * one run with what does not grow with the value taken out), and the
 * prediction V is tested with V and V+1 at once; when predictions miss
 * twice in a row, or the line falls outside a bracket whose both ends are
 * known (reserved memory is noisy where the caching allocator reuses
 * blocks), the bracket is halved once before the line is tried again. A card of a kind with
 * several cards runs on the largest one's device, which answers all of them
 * where the rules above allow; the first failing value of every card is
 * then run on the card itself, for what it ran out on and the levers. The
 * first run goes alone (it checks that the program runs and measures its
 * host memory); then up to f->jobs run at once. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fit.h"

/* ---- the bracket of a card ------------------------------------------ */

struct bracket {
    int has_lo;
    int64_t lo, hi;     /* lo fits; hi fails (hi = HI + 1: nothing above lo failed yet) */
    int64_t fail_below; /* a value below lo that fails (-1: none) */
};

static struct bracket card_bracket(const struct mh__fit *f, int card)
{
    const struct mh__fit_opts *o = f->o;
    struct bracket b = {0, 0, o->hi + 1, -1};
    int kind = o->cards[card].kind;
    for (int i = 0; i < f->ntrials; i++) {
        const struct mh__fit_trial *t = &f->trials[i];
        if (mh__fit_trial_informative(t) && t->kind == kind &&
            mh__fit_fact(f, card, t->value).verdict == MH__FIT_FITS &&
            (!b.has_lo || t->value > b.lo)) {
            b.has_lo = 1;
            b.lo = t->value;
        }
    }
    for (int i = 0; i < f->ntrials; i++) {
        const struct mh__fit_trial *t = &f->trials[i];
        if (!mh__fit_trial_informative(t) || t->kind != kind ||
            mh__fit_fact(f, card, t->value).verdict != MH__FIT_FAILS)
            continue;
        if (!b.has_lo || t->value > b.lo) {
            if (t->value < b.hi)
                b.hi = t->value;
        } else if (b.fail_below < 0 || t->value < b.fail_below) {
            b.fail_below = t->value;
        }
    }
    return b;
}

/* Whether a trial (pending or done) exists for this kind, capacity and value. */
static int scheduled(const struct mh__fit *f, int kind, uint64_t capacity, int64_t value)
{
    for (int i = 0; i < f->ntrials; i++) {
        const struct mh__fit_trial *t = &f->trials[i];
        if (t->kind == kind && t->capacity == capacity && t->value == value)
            return 1;
    }
    return 0;
}

static int pending_for(const struct mh__fit *f, int card)
{
    int n = 0;
    for (int i = 0; i < f->ntrials; i++)
        n += f->trials[i].running && f->trials[i].kind == f->o->cards[card].kind;
    return n;
}

/* The largest card of `card`'s kind: its device runs the kind's search. */
static int probe_card(const struct mh__fit *f, int card)
{
    int best = card;
    for (int i = 0; i < f->o->ncards; i++)
        if (f->o->cards[i].kind == f->o->cards[card].kind &&
            f->o->cards[i].trial_capacity > f->o->cards[best].trial_capacity)
            best = i;
    return best;
}

/* ---- prediction ----------------------------------------------------- */

struct point {
    int64_t v;
    double peak;  /* device memory the allocator used at most */
    double fb;    /* bytes requested at the forward and backward peak */
    double ratio; /* peak over the run's requested peak: rounding, caching, fragmentation */
    double grow;  /* the peak less what does not grow with the value (an upper bound of
                   * what does: it holds the optimizer's temporaries) */
};

/* Clean runs of the card's kind, else of every kind, one per value. */
static int collect_points(const struct mh__fit *f, int card, struct point *p, int cap)
{
    int n = 0;
    for (int pass = 0; pass < 2 && n < 2; pass++)
        for (int i = 0; i < f->ntrials && n < cap; i++) {
            const struct mh__fit_trial *t = &f->trials[i];
            int own = t->kind == f->o->cards[card].kind;
            if (!t->done || !mh__fit_trial_clean(t) || own != (pass == 0) || !t->peak_requested)
                continue;
            int dup = 0;
            for (int j = 0; j < n; j++)
                dup |= p[j].v == t->value;
            if (dup)
                continue;
            double used = (double)(mh__fit_trial_used(t, f->o->context) - f->o->context);
            double grow = used > (double)t->persistent ? used - (double)t->persistent : 0;
            p[n++] = (struct point){t->value, used, (double)t->fb_requested,
                                    used / (double)t->peak_requested, grow};
        }
    return n;
}

/* The prediction: where the line through the anchor's peak (the largest
 * run that fits) reaches `limit` (a real number: the boundary is its
 * floor if the line is right), with the slope of the forward and backward
 * peaks of the anchor and the run nearest it. The forward and
 * backward peaks are affine in the value where the run's peak may not be
 * (the optimizer step's temporaries set the peak of small values), so two
 * of them give the slope; one run alone gives a rougher one (its peak less
 * what does not grow, over the value). *npoints says how many runs it
 * rests on (0: no prediction, NAN returned). */
static double predict(const struct mh__fit *f, int card, int *npoints)
{
    struct point p[MH__FIT_MAX_TRIALS];
    int n = collect_points(f, card, p, MH__FIT_MAX_TRIALS);
    double limit = (double)f->o->cards[card].limit;
    int a = -1, other = -1;
    *npoints = 0;
    for (int i = 0; i < n; i++)
        if (p[i].peak <= limit && (a < 0 || p[i].v > p[a].v))
            a = i;
    for (int i = 0; a < 0 && i < n; i++)
        if (a < 0 || p[i].v < p[a].v)
            a = i;
    if (a < 0)
        return NAN;
    for (int i = 0; i < n; i++) /* the nearest run above, else the nearest below */
        if (i != a && p[i].v != p[a].v &&
            (other < 0 || ((p[i].v > p[a].v) != (p[other].v > p[a].v)
                               ? p[i].v > p[a].v
                               : llabs(p[i].v - p[a].v) < llabs(p[other].v - p[a].v))))
            other = i;
    double slope = other >= 0 ? (p[other].fb - p[a].fb) / (double)(p[other].v - p[a].v) : 0;
    *npoints = slope > 0 ? 2 : 1;
    if (!(slope > 0) && p[a].v > 0)
        slope = p[a].grow / (double)p[a].v;
    if (!(slope > 0)) {
        *npoints = 0;
        return NAN;
    }
    /* in reserved bytes: from the anchor's peak, growing at the slope with the
     * anchor's overhead (rounding, caching) on what grows, at most 10 % */
    double r = p[a].ratio < 1 ? 1 : p[a].ratio > 1.1 ? 1.1 : p[a].ratio;
    double x = (double)p[a].v + (limit - p[a].peak) / (slope * r);
    return x < -1e15 ? -1e15 : x > 1e15 ? 1e15 : x;
}

/* ---- proposals ------------------------------------------------------ */

/* The status of a card from its bracket; -1 while undecided. */
static int card_status(const struct mh__fit *f, int card, const struct bracket *b)
{
    const struct mh__fit_opts *o = f->o;
    if (b->has_lo && b->lo == o->hi)
        return MH__FIT_ALL_FIT;
    if (b->has_lo && b->hi == b->lo + 1)
        return MH__FIT_BOUNDARY;
    if (!b->has_lo && b->hi == o->lo && mh__fit_fact(f, card, o->hi).verdict == MH__FIT_FAILS)
        return MH__FIT_NONE_FIT;
    if (!b->has_lo && o->lo == o->hi && b->hi == o->lo)
        return MH__FIT_NONE_FIT;
    return -1;
}

/* The value whose failure the card's answer names: to be run on the card
 * itself (for what it ran out on, and the levers). */
static int64_t fail_to_confirm(const struct mh__fit *f, int card, int status,
                               const struct bracket *b)
{
    int64_t v = status == MH__FIT_BOUNDARY ? b->lo + 1 : status == MH__FIT_NONE_FIT ? f->o->lo : -1;
    if (v < 0)
        return -1;
    struct mh__fit_fact fact = mh__fit_fact(f, card, v);
    if (fact.trial >= 0 && f->trials[fact.trial].capacity == f->o->cards[card].trial_capacity)
        return -1;
    return v;
}

/* Adds `v` to the values wanted when it lies strictly inside (lo, hi) and
 * is new. */
static void add_want(int64_t *want, int *n, int64_t v, int64_t lo, int64_t hi)
{
    if (v > lo && v < hi && (*n == 0 || want[0] != v))
        want[(*n)++] = v;
}

/* The two values to test around a predicted crossing x in [lo, hi): the
 * boundary floor(x) and the value above it, which together decide it; when
 * x lies just above an integer, the value below instead (the allocator's
 * overhead grows with the peak, so the line misses low more often than
 * high). With one run behind the line, the value halfway to x instead of
 * the neighbour: likely to fit, it gives the second run for the slope. */
static int around(double x, int npoints, int64_t lo, int64_t hi, int64_t want[2])
{
    int n = 0;
    int64_t v = (int64_t)floor(x);
    v = v < lo ? lo : v > hi - 1 ? hi - 1 : v;
    if (npoints < 2) {
        add_want(want, &n, lo + (v - lo + 1) / 2, lo, hi);
        add_want(want, &n, v, lo, hi);
    } else if (x - floor(x) < 0.25) {
        add_want(want, &n, v - 1, lo, hi);
        add_want(want, &n, v, lo, hi);
    } else {
        add_want(want, &n, v, lo, hi);
        add_want(want, &n, v + 1, lo, hi);
    }
    if (n == 0)
        add_want(want, &n, v + 1, lo, hi);
    return n;
}

/* Up to two values to try next for a card (n returned); *prediction says
 * where they come from: 1 the line, 2 bisection, 0 neither (the ends of the
 * range, or the run on the card itself of its first failing value). A
 * prediction outside the bracket is taken to its nearer end while the
 * bracket is open above or narrow (the line missed, but says where the
 * boundary lies); else, and after two misses in a row, the bracket is
 * halved instead. Before anything is known about the card, a line from
 * other kinds' runs (two or more) is tried first, else the bottom of the
 * range. */
static int card_wants(struct mh__fit *f, int card, int64_t want[2], int *prediction)
{
    const struct mh__fit_opts *o = f->o;
    struct bracket b = card_bracket(f, card);
    int status = card_status(f, card, &b), npoints = 0;
    *prediction = 0;
    if (status >= 0) {
        want[0] = fail_to_confirm(f, card, status, &b);
        return want[0] >= 0;
    }
    int64_t lo = b.has_lo ? b.lo : o->lo - 1, hi = b.hi;
    double x = f->o->bisect || f->misses[card] >= 2 ? NAN : predict(f, card, &npoints);
    if (!b.has_lo) {
        struct mh__fit_fact at_lo = mh__fit_fact(f, card, o->lo);
        if (at_lo.verdict == MH__FIT_FAILS) { /* does anything larger fit? */
            want[0] = o->hi;
            return 1;
        }
        if (npoints < 2 || !(x >= (double)o->lo && x < (double)hi)) {
            want[0] = o->lo;
            return 1;
        }
    }
    /* a line outside a bracket with both ends known is wrong there: halve it */
    int outside = !isnan(x) && (x < (double)lo + 1 || x >= (double)hi);
    if (isnan(x) || (outside && hi <= o->hi && hi - lo > 4)) {
        want[0] = lo + (hi - lo) / 2;
        *prediction = 2;
        return 1;
    }
    /* else it still says which end the boundary is near */
    x = x < (double)lo + 1 ? (double)lo + 1 : x >= (double)hi ? (double)hi - 0.5 : x;
    *prediction = 1;
    return around(x, npoints, lo, hi, want);
}

/* Whether the kind's largest card is running `value` now: what it shows
 * may answer the card, so the card waits for it. */
static int probe_running(const struct mh__fit *f, int card, int64_t value)
{
    const struct mh__fit_card *p = &f->o->cards[probe_card(f, card)];
    for (int i = 0; i < f->ntrials; i++) {
        const struct mh__fit_trial *t = &f->trials[i];
        if (t->running && t->kind == p->kind && t->capacity == p->trial_capacity &&
            t->value == value)
            return 1;
    }
    return 0;
}

/* Where the card's value runs: its own device, or the kind's largest
 * card's when that has not run it yet (it then answers the whole kind). */
static int run_card(const struct mh__fit *f, int card, int64_t value)
{
    int probe = probe_card(f, card);
    if (f->o->bisect || probe == card)
        return card;
    return scheduled(f, f->o->cards[card].kind, f->o->cards[probe].trial_capacity, value) ? card
                                                                                          : probe;
}

static void trial_files(const struct mh__fit_opts *o, struct mh__fit_trial *t)
{
    char base[PATH_MAX];
    snprintf(base, sizeof base, "%s/%s%" PRId64 "-%s", o->dir, o->cmd.name, t->value,
             o->cards[t->card].label);
    snprintf(t->path, sizeof t->path, "%.*s.memhist", PATH_MAX - 9, base);
    snprintf(t->log, sizeof t->log, "%.*s.log", PATH_MAX - 5, base);
    snprintf(t->stats, sizeof t->stats, "%.*s.vdev", PATH_MAX - 6, base);
}

static int schedule(struct mh__fit *f, int card, int64_t value)
{
    if (f->ntrials >= MH__FIT_MAX_TRIALS || (uint64_t)f->ntrials >= f->o->max_trials)
        return 0;
    struct mh__fit_trial *t = &f->trials[f->ntrials];
    memset(t, 0, sizeof *t);
    t->value = value;
    t->card = run_card(f, card, value);
    t->kind = f->o->cards[card].kind;
    t->capacity = f->o->cards[t->card].trial_capacity;
    t->oom.step = -1;
    trial_files(f->o, t);
    if (mh__fit_trial_start(f->o, t) < 0)
        return -1;
    f->ntrials++;
    return 1;
}

/* Whether the runs decide the card at `value`, but for its first failing
 * value, which wants a run on the card itself (fail_to_confirm). */
static int known(const struct mh__fit *f, int card, int64_t value)
{
    struct mh__fit_fact fact = mh__fit_fact(f, card, value);
    if (fact.verdict == MH__FIT_UNKNOWN)
        return 0;
    struct bracket b = card_bracket(f, card);
    int status = card_status(f, card, &b);
    return !(status >= 0 && fail_to_confirm(f, card, status, &b) == value);
}

/* Whether a run of the card's kind going now may change what the card
 * wants next: its value lies inside the card's bracket and, when the card
 * has a line through two runs, near where the line puts its boundary. */
static int pending_matters(const struct mh__fit *f, int card)
{
    struct bracket b = card_bracket(f, card);
    int64_t lo = b.has_lo ? b.lo : f->o->lo - 1;
    int npoints = 0;
    double x = predict(f, card, &npoints);
    for (int i = 0; i < f->ntrials; i++) {
        const struct mh__fit_trial *t = &f->trials[i];
        if (!t->running || t->kind != f->o->cards[card].kind)
            continue;
        if (t->value <= lo || t->value >= b.hi)
            continue;
        double near = x > 8 ? x / 4 : 2;
        if (npoints < 2 || isnan(x) || fabs((double)t->value - x) <= near)
            return 1;
    }
    return 0;
}

/* Starts one run of the card's batch `want` that is not made yet; 1 if
 * one started, 0 if none is left (or the run limit), -1 on failure. */
static int start_batch(struct mh__fit *f, int c, const int64_t *want, int n)
{
    for (int k = 0; k < n; k++) {
        int card = run_card(f, c, want[k]);
        if (scheduled(f, f->o->cards[c].kind, f->o->cards[card].trial_capacity, want[k]) ||
            probe_running(f, c, want[k]) || known(f, c, want[k]))
            continue;
        return schedule(f, c, want[k]);
    }
    return 0;
}

/* Starts the next wanted run; 1 if one started, 0 if nothing is wanted.
 * A card asks for a batch of values (the pair around a prediction) only
 * when none of its kind's runs is going: until then, what they show
 * decides what it wants next. The batch's runs start as jobs allow. */
static int start_next(struct mh__fit *f)
{
    for (int c = 0; c < f->o->ncards; c++) {
        int rc;
        if (f->nbatch[c] && (rc = start_batch(f, c, f->batch[c], f->nbatch[c])) != 0)
            return rc;
        if (pending_matters(f, c))
            continue;
        int prediction;
        f->nbatch[c] = card_wants(f, c, f->batch[c], &prediction);
        if ((rc = start_batch(f, c, f->batch[c], f->nbatch[c])) != 0) {
            if (rc > 0 && !f->predicted[c])
                f->predicted[c] = prediction;
            return rc;
        }
        f->nbatch[c] = 0;
    }
    return 0;
}

/* After a run of a kind ended: a decided card drops the rest of its
 * batch; a card whose runs from a prediction are all done and that is
 * still undecided counts a miss; after a bisection it tries the line
 * again. */
static void count_misses(struct mh__fit *f, int kind)
{
    for (int c = 0; c < f->o->ncards; c++) {
        if (f->o->cards[c].kind != kind)
            continue;
        struct bracket b = card_bracket(f, c);
        int status = card_status(f, c, &b);
        if (status >= 0)
            f->nbatch[c] = 0; /* decided: the rest of its batch is not needed */
        if (!f->predicted[c] || pending_for(f, c))
            continue;
        if (status < 0)
            f->misses[c] = f->predicted[c] == 1 ? f->misses[c] + 1 : 1;
        else
            f->misses[c] = 0;
        f->predicted[c] = 0;
    }
}

/* ---- the answer ----------------------------------------------------- */

/* A peak lower at a larger value among the card's kind's clean runs. */
static void peaks_monotonic(const struct mh__fit *f, int card, struct mh__fit_answer *a)
{
    for (int i = 0; i < f->ntrials; i++)
        for (int j = 0; j < f->ntrials; j++) {
            const struct mh__fit_trial *s = &f->trials[i], *t = &f->trials[j];
            if (a->not_monotonic || s->kind != f->o->cards[card].kind || t->kind != s->kind ||
                s->capacity != t->capacity || !mh__fit_trial_clean(s) || !mh__fit_trial_clean(t))
                continue;
            if (s->value < t->value && s->peak_reserved > t->peak_reserved) {
                a->not_monotonic = a->nm_by_peak = 1;
                a->nm_low = s->value;
                a->nm_high = t->value;
            }
        }
}

static void answer_card(struct mh__fit *f, int card)
{
    struct mh__fit_answer *a = &f->answers[card];
    struct bracket b = card_bracket(f, card);
    int status = card_status(f, card, &b);
    memset(a, 0, sizeof *a);
    a->status = status >= 0 ? status : MH__FIT_UNDECIDED;
    a->fit_value = b.has_lo ? b.lo : -1;
    a->fail_value = b.hi <= f->o->hi ? b.hi : -1;
    if (a->status == MH__FIT_NONE_FIT)
        a->fail_value = f->o->lo;
    a->fit_trial = a->fit_value >= 0 ? mh__fit_fact(f, card, a->fit_value).trial : -1;
    a->fail_trial = a->fail_value >= 0 ? mh__fit_fact(f, card, a->fail_value).trial : -1;
    if (a->fit_trial >= 0) {
        a->fit_peak_allocated = f->trials[a->fit_trial].peak_allocated;
        a->fit_peak_reserved = f->trials[a->fit_trial].peak_reserved;
    }
    for (int i = 0; i < f->ntrials; i++)
        a->trials += f->trials[i].kind == f->o->cards[card].kind;
    if (b.has_lo && b.fail_below >= 0) {
        a->not_monotonic = 1;
        a->nm_low = b.fail_below;
        a->nm_high = b.lo;
    } else {
        peaks_monotonic(f, card, a);
    }
}

static int all_answered(struct mh__fit *f)
{
    for (int c = 0; c < f->o->ncards; c++) {
        struct bracket b = card_bracket(f, c);
        int status = card_status(f, c, &b);
        if (status < 0 || fail_to_confirm(f, c, status, &b) >= 0)
            return 0;
    }
    return 1;
}

static void say_trial(const struct mh__fit *f, const struct mh__fit_trial *t, int index)
{
    char v[64], b1[32], b2[32];
    if (mh__cli_is_quiet())
        return;
    const char *label = f->o->cards[t->card].label;
    mh__fit_value_text(f->o, t->value, v, sizeof v);
    if (t->outcome == MH__FIT_RAN)
        mh__cli_error("fit: run %d: %s on %s: ran %" PRId64 " steps, peak reserved %s (%.1f s)",
                      index + 1, v, label, t->steps, mh__bytes_text(t->peak_reserved, b1),
                      t->seconds);
    else if (t->outcome == MH__FIT_OOM)
        mh__cli_error("fit: run %d: %s on %s: out of memory asking for %s with %s reserved "
                      "(%.1f s)",
                      index + 1, v, label, mh__bytes_text(t->oom.request, b1),
                      mh__bytes_text(t->oom.reserved, b2), t->seconds);
}

/* The first run alone, then the number of runs at once and the host
 * memory each may hold. */
static void size_jobs(struct mh__fit *f, uint64_t available)
{
    const struct mh__fit_opts *o = f->o;
    uint64_t need = f->trials[0].host_peak + f->trials[0].host_peak / 4 + (256ull << 20);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    uint64_t by_memory = available ? available * 9 / 10 / need : 1;
    f->jobs =
        o->jobs ? (int)o->jobs : (int)(by_memory < (uint64_t)cores ? by_memory : (uint64_t)cores);
    if (f->jobs < 1)
        f->jobs = 1;
    if (!o->host_memory && available)
        f->host_limit = available * 9 / 10 / (uint64_t)f->jobs;
}

int mh__fit_search(struct mh__fit *f)
{
    uint64_t available = mh__fit_host_available();
    f->failed_trial = -1;
    f->jobs = 1;
    f->host_limit = f->o->host_memory ? f->o->host_memory : available * 9 / 10;
    for (;;) {
        if (all_answered(f))
            break;
        int running = 0;
        for (int i = 0; i < f->ntrials; i++)
            running += f->trials[i].running;
        int rc = 0;
        while (running < (f->ntrials ? f->jobs : 1) && (rc = start_next(f)) > 0)
            running++;
        if (rc < 0) {
            mh__fit_trial_stop_all(f);
            return -1;
        }
        int i = mh__fit_trial_wait(f);
        if (i == -2)
            return -2;
        if (i < 0)
            break; /* nothing runs and nothing is wanted: the run limit */
        struct mh__fit_trial *t = &f->trials[i];
        mh__fit_trial_read(f->o, t);
        say_trial(f, t, i);
        if (!mh__fit_trial_informative(t)) {
            f->failed_trial = i;
            mh__fit_trial_stop_all(f);
            break;
        }
        if (i == 0)
            size_jobs(f, available);
        count_misses(f, t->kind);
    }
    for (int c = 0; c < f->o->ncards; c++)
        answer_card(f, c);
    return 0;
}
