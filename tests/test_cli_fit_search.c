/* test_cli_fit_search.c - the search of `memhist fit` (src/cli/fit_search.c
 * and fit_facts.c) on programs whose memory is a formula, so that every
 * answer can be checked against the truth and thousands of searches run in
 * a second. The runs are made by a stand-in for fit_trial.c and fit_read.c
 * (below): a run at value v on a device of capacity C "needs" D(v) bytes
 * requested at once and reserves P(v) = max(optimizer peak, D(v)) plus an
 * overhead; it runs when P(v) fits, runs out when D(v) does not, and in
 * between (where torch would free its cache and retry) runs or runs out as
 * a hash of (kind, v, C) says, with the device's counts and the program's
 * requested peak as the real ones would be. Checks: every answer is true
 * (the value given as fitting fits the card, the next one does not); on
 * affine memory the search needs at most four runs per card on average;
 * cards of one preset share runs; memory that falls with the value is
 * reported as not monotonic with a true answer; the run limit leaves cards
 * undecided, never wrong. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"

#define MIB (1ull << 20)
#define CTX (512 * MIB)

/* ---- the programs --------------------------------------------------- */

struct program {
    double base, slope, opt_peak, overhead; /* bytes; overhead a fraction */
    double kind_extra[4];                   /* bytes more on a kind (its workspaces) */
    double falling;                         /* bytes less per unit of the value */
    int64_t bump_at;                        /* a value that needs bump more (-1: none) */
    double bump;
};

static struct program prog;

static double demand(int kind, int64_t v)
{
    double d =
        prog.base + prog.slope * (double)v + prog.kind_extra[kind % 4] - prog.falling * (double)v;
    if (v == prog.bump_at)
        d += prog.bump;
    return d > MIB ? d : MIB;
}

static uint64_t reserved(int kind, int64_t v)
{
    double d = demand(kind, v), p = (d > prog.opt_peak ? d : prog.opt_peak) * (1 + prog.overhead);
    return ((uint64_t)p + 2 * MIB - 1) / (2 * MIB) * (2 * MIB);
}

static unsigned hash3(int kind, int64_t v, uint64_t cap)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)kind;
    h = (h ^ (uint64_t)v) * 1099511628211ull;
    h = (h ^ (cap >> 20)) * 1099511628211ull;
    return (unsigned)(h >> 33);
}

/* The truth: whether the program fits an allocator of `usable` bytes. */
static int truly_fits(int kind, int64_t v, uint64_t usable)
{
    if (reserved(kind, v) <= usable)
        return 1;
    if (demand(kind, v) > (double)usable)
        return 0;
    return hash3(kind, v, usable) % 3 == 0; /* retries saved it, or not */
}

/* ---- the stand-in runner (fit_trial.c, fit_read.c) ------------------- */

static int runs_started;

int mh__fit_trial_start(const struct mh__fit_opts *o, struct mh__fit_trial *t)
{
    (void)o;
    t->running = 1;
    t->pid = ++runs_started;
    return 0;
}

int mh__fit_trial_wait(struct mh__fit *f)
{
    int best = -1;
    for (int i = 0; i < f->ntrials; i++)
        if (f->trials[i].running && (best < 0 || f->trials[i].pid < f->trials[best].pid))
            best = i;
    if (best >= 0) {
        f->trials[best].running = 0;
        f->trials[best].seconds = 1;
        f->trials[best].host_peak = 1ull << 30;
    }
    return best;
}

void mh__fit_trial_stop_all(struct mh__fit *f)
{
    for (int i = 0; i < f->ntrials; i++)
        f->trials[i].running = 0;
}

uint64_t mh__fit_host_available(void)
{
    return 16ull << 30;
}

int mh__fit_trial_read(const struct mh__fit_opts *o, struct mh__fit_trial *t)
{
    uint64_t usable = t->capacity - o->context;
    double d = demand(t->kind, t->value);
    uint64_t p = reserved(t->kind, t->value);
    t->done = 1;
    t->has_stats = 1;
    t->steps = 4;
    t->persistent = (uint64_t)(prog.base * 0.9);
    if (p <= usable) { /* it never met the capacity */
        t->outcome = MH__FIT_RAN;
        t->peak_reserved = t->peak_used = p;
        t->peak_used += o->context;
        t->peak_requested = (uint64_t)(d > prog.opt_peak ? d : prog.opt_peak);
        t->fb_requested = (uint64_t)d;
        t->peak_allocated = t->peak_requested;
        return 0;
    }
    t->refused = 1 + hash3(t->kind, t->value, usable) % 3;
    t->mem_info_late = 1;
    if (truly_fits(t->kind, t->value, usable)) { /* retried and fitted */
        t->outcome = MH__FIT_RAN;
        t->retries = t->early_retries = 1;
        t->peak_reserved = usable;
        t->peak_used = usable + o->context;
        t->peak_requested = (uint64_t)d;
        return 0;
    }
    t->outcome = MH__FIT_OOM;
    t->steps = 1;
    t->oom.request = 64 * MIB;
    t->oom.reserved = usable;
    t->peak_reserved = usable;
    /* requested up to the OOM: past the capacity when the demand is */
    t->peak_requested = d > (double)usable ? usable + 1 : (uint64_t)d;
    return 0;
}

const char *mh__fit_value_text(const struct mh__fit_opts *o, int64_t v, char *buf, size_t len)
{
    snprintf(buf, len, "%s=%" PRId64, o->cmd.name, v);
    return buf;
}

/* ---- a search ------------------------------------------------------- */

struct setup {
    int ncards;
    int kind_of[MH__FIT_MAX_CARDS]; /* preset index per card */
    uint64_t capacity[MH__FIT_MAX_CARDS];
    int64_t lo, hi;
    int bisect;
    uint64_t max_runs;
};

static char *cmd_words[] = {"python", "train.py", "--batch", "{batch}", NULL};

static const char *const preset_keys[] = {"H100", "A100-40GB", "RTX4090", "L4"};

static struct mh__fit *search(const struct setup *s, struct mh__fit_opts *o)
{
    memset(o, 0, sizeof *o);
    o->cmd.argv = cmd_words;
    o->cmd.name = "batch";
    o->lo = s->lo;
    o->hi = s->hi;
    o->steps = 4;
    o->context = CTX;
    o->dir = "/nonexistent";
    o->max_trials = s->max_runs ? s->max_runs : 64;
    o->jobs = 2;
    o->bisect = s->bisect;
    o->ncards = s->ncards;
    for (int c = 0; c < s->ncards; c++) {
        struct mh__fit_card *k = &o->cards[c];
        k->gpu = mh__vdev_preset_find(preset_keys[s->kind_of[c]]);
        k->capacity = s->capacity[c];
        k->limit = k->capacity - CTX;
        k->trial_capacity = k->capacity;
        k->kind = c;
        for (int i = 0; i < c; i++)
            if (s->kind_of[i] == s->kind_of[c]) {
                k->kind = o->cards[i].kind;
                break;
            }
        snprintf(k->label, sizeof k->label, "card%d", c);
    }
    struct mh__fit *f = calloc(1, sizeof *f);
    cr_assert(f);
    f->o = o;
    cr_assert_eq(mh__fit_search(f), 0);
    return f;
}

/* Every answer true; returns the runs made. */
static int check_answers(const struct mh__fit *f, const struct setup *s, const char *what)
{
    for (int c = 0; c < s->ncards; c++) {
        const struct mh__fit_answer *a = &f->answers[c];
        const struct mh__fit_card *k = &f->o->cards[c];
        int kind = k->kind;
        if (a->fit_value >= 0)
            cr_assert(truly_fits(kind, a->fit_value, k->limit), "%s: card %d: %" PRId64 " fits?",
                      what, c, a->fit_value);
        if (a->fail_value >= 0)
            cr_assert(!truly_fits(kind, a->fail_value, k->limit), "%s: card %d: %" PRId64 " fails?",
                      what, c, a->fail_value);
        if (a->status == MH__FIT_BOUNDARY)
            cr_assert_eq(a->fail_value, a->fit_value + 1, "%s: card %d", what, c);
        if (a->status == MH__FIT_ALL_FIT)
            cr_assert_eq(a->fit_value, s->hi, "%s", what);
        if (a->status == MH__FIT_NONE_FIT)
            cr_assert_eq(a->fail_value, s->lo, "%s", what);
        if (a->fit_trial >= 0)
            cr_assert_eq(a->fit_peak_reserved, f->trials[a->fit_trial].peak_reserved);
    }
    return f->ntrials;
}

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}
static double uniform(double a, double b)
{
    return a + (b - a) * (double)(rnd() % 1000000) / 1e6;
}

static void random_program(int affine)
{
    memset(&prog, 0, sizeof prog);
    prog.base = uniform(0.5, 8) * (1u << 30);
    prog.slope = uniform(0.01, 2.5) * (1u << 30);
    prog.opt_peak = affine ? 0 : prog.base * uniform(1.0, 1.4);
    prog.overhead = uniform(0.0, 0.06);
    for (int k = 0; k < 4; k++)
        prog.kind_extra[k] = (double)(rnd() % 64) * MIB;
    prog.bump_at = -1;
}

static void random_setup(struct setup *s, int kinds)
{
    static const uint64_t sizes[] = {16, 24, 40, 48, 80, 141};
    memset(s, 0, sizeof *s);
    s->ncards = 1 + (int)(rnd() % 4);
    s->lo = 1;
    s->hi = (int64_t)(64 << (rnd() % 3));
    for (int c = 0; c < s->ncards; c++) {
        s->kind_of[c] = (int)(rnd() % (uint64_t)kinds);
        s->capacity[c] = sizes[rnd() % 6] << 30;
        for (int i = 0; i < c; i++)
            if (s->kind_of[i] == s->kind_of[c] && s->capacity[i] == s->capacity[c])
                s->capacity[c] += 1ull << 30;
    }
}

Test(fit_search, answers_are_true_on_random_programs)
{
    mh__cli_set_quiet();
    struct mh__fit_opts o;
    for (int i = 0; i < 400; i++) {
        struct setup s;
        char what[64];
        random_program(i % 2);
        random_setup(&s, 1 + i % 4);
        s.bisect = i % 5 == 0;
        snprintf(what, sizeof what, "instance %d", i);
        struct mh__fit *f = search(&s, &o);
        check_answers(f, &s, what);
        for (int c = 0; c < s.ncards; c++)
            cr_assert_neq(f->answers[c].status, MH__FIT_UNDECIDED, "%s: card %d undecided", what, c);
        free(f);
    }
}

Test(fit_search, few_runs_per_card_on_affine_memory)
{
    mh__cli_set_quiet();
    struct mh__fit_opts o;
    int runs = 0, cards = 0, bisect_runs = 0;
    for (int i = 0; i < 200; i++) {
        struct setup s;
        random_program(1);
        random_setup(&s, 4);
        for (int c = 0; c < s.ncards; c++) /* one card per preset */
            s.kind_of[c] = c;
        struct mh__fit *f = search(&s, &o);
        runs += check_answers(f, &s, "affine");
        cards += s.ncards;
        free(f);
        s.bisect = 1;
        f = search(&s, &o);
        bisect_runs += check_answers(f, &s, "affine, bisect");
        free(f);
    }
    double per_card = (double)runs / cards;
    cr_log_info("runs per card: %.2f predicting, %.2f bisecting\n", per_card,
                (double)bisect_runs / cards);
    cr_assert_leq(per_card, 4.0, "%.2f runs per card", per_card);
    cr_assert_lt(runs, bisect_runs);
}

Test(fit_search, cards_of_one_preset_share_runs)
{
    mh__cli_set_quiet();
    struct mh__fit_opts o;
    memset(&prog, 0, sizeof prog);
    prog.base = 6.0 * (1u << 30);
    prog.slope = 1.9 * (1u << 30);
    prog.overhead = 0.02;
    prog.bump_at = -1;
    struct setup s = {3, {0, 0, 0}, {24ull << 30, 40ull << 30, 80ull << 30}, 1, 256, 0, 0};
    struct mh__fit *f = search(&s, &o);
    check_answers(f, &s, "shared");
    int own[3] = {0}, on_largest = 0;
    for (int i = 0; i < f->ntrials; i++) {
        own[f->trials[i].card]++;
        on_largest += f->trials[i].capacity == (80ull << 30);
    }
    /* the largest card's device runs the search; the others run their own
     * first failing value, and values its runs leave undecided */
    cr_assert_gt(on_largest, 0);
    int alone = 0; /* each card searched by itself */
    for (int c = 0; c < 3; c++) {
        struct setup one = {1, {0}, {s.capacity[c]}, 1, 256, 0, 0};
        struct mh__fit_opts o1;
        struct mh__fit *g = search(&one, &o1);
        alone += check_answers(g, &one, "alone");
        free(g);
    }
    cr_log_info("three cards of one preset: %d runs shared, %d alone\n", f->ntrials, alone);
    cr_assert_lt(f->ntrials, alone, "%d runs shared, %d alone", f->ntrials, alone);
    for (int c = 0; c < 3; c++) {
        const struct mh__fit_answer *a = &f->answers[c];
        cr_assert_eq(a->status, MH__FIT_BOUNDARY);
        cr_assert_eq(f->trials[a->fail_trial].capacity, s.capacity[c],
                     "card %d's first failing value ran on the card itself", c);
    }
    free(f);
}

Test(fit_search, falling_memory_is_not_monotonic)
{
    mh__cli_set_quiet();
    struct mh__fit_opts o;
    memset(&prog, 0, sizeof prog);
    prog.base = 30.0 * (1u << 30);
    prog.falling = 0.1 * (1u << 30);
    prog.bump_at = -1;
    struct setup s = {1, {0}, {24ull << 30}, 1, 100, 0, 0};
    struct mh__fit *f = search(&s, &o);
    check_answers(f, &s, "falling");
    const struct mh__fit_answer *a = &f->answers[0];
    cr_assert_eq(a->status, MH__FIT_ALL_FIT);
    cr_assert(a->not_monotonic);
    cr_assert_eq(a->nm_low, 1);
    cr_assert_eq(a->nm_high, 100);
    free(f);
}

Test(fit_search, a_bump_never_gives_a_wrong_answer)
{
    mh__cli_set_quiet();
    struct mh__fit_opts o;
    for (int64_t at = 2; at < 40; at++) {
        memset(&prog, 0, sizeof prog);
        prog.base = 4.0 * (1u << 30);
        prog.slope = 0.5 * (1u << 30);
        prog.bump_at = at;
        prog.bump = 20.0 * (1u << 30);
        struct setup s = {1, {0}, {24ull << 30}, 1, 256, 0, 0};
        struct mh__fit *f = search(&s, &o);
        check_answers(f, &s, "bump");
        const struct mh__fit_answer *a = &f->answers[0];
        cr_assert_eq(a->status, MH__FIT_BOUNDARY);
        /* the boundary found is above every value that fitted */
        for (int i = 0; i < f->ntrials; i++)
            if (f->trials[i].outcome == MH__FIT_RAN)
                cr_assert_leq(f->trials[i].value, a->fit_value);
        free(f);
    }
}

Test(fit_search, the_run_limit_leaves_cards_undecided)
{
    mh__cli_set_quiet();
    struct mh__fit_opts o;
    random_program(1);
    struct setup s = {2, {0, 1}, {24ull << 30, 80ull << 30}, 1, 1 << 20, 1, 3};
    struct mh__fit *f = search(&s, &o);
    cr_assert_leq(f->ntrials, 3);
    check_answers(f, &s, "limit");
    int undecided = 0;
    for (int c = 0; c < 2; c++)
        undecided += f->answers[c].status == MH__FIT_UNDECIDED;
    cr_assert_gt(undecided, 0);
    free(f);
}

Test(fit_command, placeholders_are_replaced_in_arguments_and_assignments)
{
    char *argv[] = {"BATCH={b}", "X=1", "python", "t.py", "--b={b}", "{b}{b}", "{bb}", "{b", NULL};
    struct mh__fit_command c = {argv, 0, "b"};
    c.nenv = mh__fit_command_env_count(argv);
    cr_assert_eq(c.nenv, 2);
    cr_assert(mh__fit_command_uses(&c));
    char **w = mh__fit_command_expand(&c, 12);
    cr_assert_str_eq(w[0], "BATCH=12");
    cr_assert_str_eq(w[4], "--b=12");
    cr_assert_str_eq(w[5], "1212");
    cr_assert_str_eq(w[6], "{bb}");
    cr_assert_str_eq(w[7], "{b");
    cr_assert_null(w[8]);
    free(w);
    char name[16];
    cr_assert_eq(mh__fit_command_first_name(argv, name, sizeof name), 0);
    cr_assert_str_eq(name, "b");
    char *none[] = {"python", "{}", "{a b}", NULL};
    cr_assert_eq(mh__fit_command_first_name(none, name, sizeof name), -1);
}

Test(fit_command, ranges_and_headroom)
{
    int64_t lo, hi;
    uint64_t h;
    cr_assert_eq(mh__fit_parse_range("1..256", &lo, &hi), 0);
    cr_assert(lo == 1 && hi == 256);
    cr_assert_eq(mh__fit_parse_range("7..7", &lo, &hi), 0);
    const char *bad[] = {"",      "1",     "1..",   "..5",           "a..b",
                         "-1..4", "1...4", "1..4x", "99999999999..1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(mh__fit_parse_range(bad[i], &lo, &hi), -1, "%s", bad[i]);
    cr_assert_eq(mh__fit_parse_headroom("10%", 1000, &h), 0);
    cr_assert_eq(h, 100);
    cr_assert_eq(mh__fit_parse_headroom("1GiB", 0, &h), 0);
    cr_assert_eq(h, 1ull << 30);
    cr_assert_eq(mh__fit_parse_headroom(NULL, 5, &h), 0);
    cr_assert_eq(h, 0);
    cr_assert_eq(mh__fit_parse_headroom("100%", 5, &h), -1);
    cr_assert_eq(mh__fit_parse_headroom("x%", 5, &h), -1);
    cr_assert_eq(mh__fit_parse_headroom("-1", 5, &h), -1);
}
