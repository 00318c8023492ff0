/* fit.h - `memhist fit`: the largest value of a setting ({NAME} in a
 * command) with which a program fits each card, found by short runs of the
 * unchanged program on the virtual device (`memhist simulate --steps N`).
 *
 * The pieces, each a small file of src/cli: cmd_fit.c (options, cards,
 * the order of the work), fit_command.c (the command with {NAME} replaced
 * and its environment assignments), fit_trial.c (one run as a child
 * process, several at once, their host memory watched), fit_read.c (what a
 * run's recording and the virtual device's counts say), fit_search.c (what
 * the runs prove about each card, and which runs come next), fit_levers.c
 * (the allocator settings and the checkpointing plan at the first value
 * that does not fit), fit_print.c and fit_json.c (the answer as text and
 * JSON) and viz/plot/plot_fit.c (the PNG). The answer is the plain structs
 * below, which the printers read without computing. */
#ifndef MH_CLI_FIT_H
#define MH_CLI_FIT_H

#include <limits.h>
#include <stdint.h>

#include "cli.h"
#include "vdev_presets.h"

#define MH__FIT_MAX_CARDS 16
#define MH__FIT_MAX_TRIALS 200
#define MH__FIT_MAX_LEVERS 5
#define MH__FIT_TAIL_LINES 12 /* lines of a failed program's output shown */

/* The program to run: argv with {NAME} in it (arguments or NAME=VALUE
 * environment assignments before the program). */
struct mh__fit_command {
    char **argv; /* borrowed from the command line, NULL-terminated */
    int nenv;    /* leading VAR=VALUE words: the environment of the program */
    const char *name;
};
/* How many words at the start are VAR=VALUE assignments. */
int mh__fit_command_env_count(char **argv);
/* Whether `{name}` occurs in any word. */
int mh__fit_command_uses(const struct mh__fit_command *c);
/* The name of the first {NAME} of the command (letters, digits, '_', '-'),
 * copied into `out`; 0, or -1 when there is none. */
int mh__fit_command_first_name(char **argv, char *out, size_t len);
/* The words with {name} replaced by `value`, NULL-terminated, in one
 * allocation the caller frees (NULL when out of memory). */
char **mh__fit_command_expand(const struct mh__fit_command *c, int64_t value);
/* The command as one line for messages and `fit --json` ("{batch}" kept). */
void mh__fit_command_text(char **argv, char *out, size_t len);
/* "LO..HI", whole numbers from 0 to INT32_MAX (LO > HI is left to the
 * caller); 0 or -1. */
int mh__fit_parse_range(const char *text, int64_t *lo, int64_t *hi);
/* --headroom: a size, or a percentage (below 100) of `usable`; NULL gives
 * 0. Returns 0 or -1. */
int mh__fit_parse_headroom(const char *text, uint64_t usable, uint64_t *out);

/* One card to fit: a preset (its kind: SMs, compute capability, which
 * torch's kernels and workspaces depend on) and a memory size. Cards of one
 * kind share their runs. */
struct mh__fit_card {
    const struct mh__vdev_gpu *gpu;
    uint64_t capacity;       /* the device's total memory */
    uint64_t headroom;       /* kept free: the program must fit in usable - headroom */
    uint64_t limit;          /* what the allocator may use: capacity - context - headroom */
    uint64_t trial_capacity; /* the virtual device that runs as this card: limit + context */
    int kind;                /* cards with the same kind share runs (index of its first card) */
    char label[48];          /* "RTX4090", or "H100-24GiB" with --device-memory */
};

enum mh__fit_outcome {
    MH__FIT_RAN,        /* the program ended by itself or after --steps steps */
    MH__FIT_OOM,        /* it ran out of memory (whatever it did then) */
    MH__FIT_FAILED,     /* it failed otherwise: exit status, signal, no recording */
    MH__FIT_NO_STEP,    /* it ended without completing a training step */
    MH__FIT_HOST_LIMIT, /* stopped: its processes held more host memory than allowed */
    MH__FIT_TIMEOUT,    /* stopped: it ran longer than --timeout */
};
const char *mh__fit_outcome_name(int outcome);

/* The first OOM of a run: the request, where, and the memory then. */
struct mh__fit_oom {
    uint64_t request, allocated, reserved;
    int64_t step;
    int phase; /* enum mh_phase */
};

/* One run of the program at `value` on a virtual device of `capacity`. */
struct mh__fit_trial {
    int64_t value;
    int kind; /* the card kind it ran as */
    int card; /* the card whose name the files take */
    uint64_t capacity;
    char path[PATH_MAX], log[PATH_MAX], stats[PATH_MAX + 8];
    /* running */
    int pid;
    uint64_t started_ns;
    int running, done;
    int stopped; /* MH__FIT_HOST_LIMIT or MH__FIT_TIMEOUT when the watcher stopped it */
    /* outcome */
    int outcome;     /* enum mh__fit_outcome */
    int exit_status; /* exit code, or 128 + signal */
    double seconds;
    uint64_t host_peak; /* the most host memory its processes held at once (bytes) */
    int64_t steps;      /* training steps completed (step ends recorded for its device) */
    uint64_t peak_allocated, peak_reserved;
    uint64_t peak_requested; /* the most bytes requested and not yet freed at once, up to
                              * the first OOM (its request included) */
    uint64_t persistent;     /* parameters, gradients and optimizer state at the allocated
                              * peak (runs without OOM) */
    uint64_t retries;        /* allocator retries (cached blocks freed to satisfy a request) */
    struct mh__fit_oom oom;
    /* the virtual device's counts (fit_read.c); has_stats 0 when missing */
    int has_stats;
    uint64_t peak_used, refused;
    uint64_t mem_info, mem_info_late; /* free-memory queries before the first refusal, after */
    uint64_t early_retries; /* requests that succeeded after the allocator freed its cache,
                             * before the first OOM (fit_read.c) */
    uint64_t fb_requested;  /* peak_requested within forward and backward phases */
    int rising;             /* the last step's peak above every earlier one's */
    uint64_t rising_from, rising_to;
};

/* fit_facts.c: whether a run ran or ran out of memory (what the search
 * reads), and its name ("ran", "oom", ...). */
int mh__fit_trial_informative(const struct mh__fit_trial *t);
/* Whether a run went exactly as it would on any card of its kind that has
 * at least its peak in use: nothing refused, no OOM, no retry, and the
 * program never asked how much memory is free. */
int mh__fit_trial_clean(const struct mh__fit_trial *t);
/* Whether the program's requests up to the run's first OOM were those it
 * makes on any device of the kind: it never asked how much memory is free
 * before the device first refused an allocation, and no request succeeded
 * after a refusal (torch freeing its cache and retrying) before the OOM. */
int mh__fit_trial_program_same(const struct mh__fit_trial *t);
/* The device memory the run used at most (allocator and context). */
uint64_t mh__fit_trial_used(const struct mh__fit_trial *t, uint64_t context);

enum mh__fit_verdict { MH__FIT_UNKNOWN = 0, MH__FIT_FITS = 1, MH__FIT_FAILS = 2 };

/* What the runs prove about one card at one value, and by which run. */
struct mh__fit_fact {
    int verdict;
    int trial; /* the run that proves it (-1: none) */
};

/* A lever at the first failing value: an allocator setting replayed on
 * the run's requests (checked by replay, or an estimate when the replay
 * reproduces the run poorly), or the checkpointing plan (an estimate). */
enum mh__fit_lever_kind {
    MH__FIT_LEVER_SETTING,   /* an allocator setting, replayed on the failing run's requests */
    MH__FIT_LEVER_PLAN_OOM,  /* the checkpointing plan at the failing run's OOM */
    MH__FIT_LEVER_PLAN_PEAK, /* the checkpointing plan of the largest fitting run */
};
struct mh__fit_lever {
    int kind;          /* enum mh__fit_lever_kind */
    char setting[160]; /* PYTORCH_CUDA_ALLOC_CONF text, or the layers to checkpoint */
    int layers;        /* plans: layers checkpointed */
    int checked;       /* checked by replay; 0: estimate */
    int avoids;        /* setting: no OOM in the replay; plan at the OOM: the request fits */
    int in_effect;     /* setting: the run already used it */
    uint64_t ooms, peak_reserved;     /* setting: the replay's */
    uint64_t freed;                   /* plan at the OOM: activations it frees there */
    uint64_t peak_before, peak_after; /* plan at the peak: allocated peak, and estimated with it */
};

enum mh__fit_status {
    MH__FIT_BOUNDARY,  /* fit_value fits and fit_value + 1 does not */
    MH__FIT_ALL_FIT,   /* the top of the range fits */
    MH__FIT_NONE_FIT,  /* the bottom of the range does not fit (nor the top) */
    MH__FIT_UNDECIDED, /* the run limit was reached first */
};

/* The answer for one card. */
struct mh__fit_answer {
    int status;
    int64_t fit_value, fail_value; /* -1 when none */
    int fit_trial, fail_trial;     /* the runs behind them (-1: none) */
    uint64_t fit_peak_allocated, fit_peak_reserved;
    int trials; /* runs made at this card's kind */
    /* memory not monotonic in the value, as the runs show it: a value that
     * fails below one that fits, or a peak lower at a larger value */
    int not_monotonic;
    int64_t nm_low, nm_high; /* the two values that show it */
    int nm_by_peak;          /* shown by the peaks (both fit), not the verdicts */
    struct mh__fit_lever levers[MH__FIT_MAX_LEVERS];
    int nlevers;
    int levers_error; /* the levers could not be computed (MH_E*) */
};

/* Everything `memhist fit` was asked. */
struct mh__fit_opts {
    struct mh__fit_command cmd;
    int64_t lo, hi;
    uint64_t steps;
    uint64_t context;
    const char *alloc_conf, *dir, *plot;
    uint64_t jobs;        /* 0: by cores and host memory */
    uint64_t host_memory; /* per run; 0: the memory available divided by the runs at once */
    uint64_t timeout_s;
    uint64_t max_trials;
    int bisect; /* plain bisection per card, no prediction, nothing shared */
    int json;
    struct mh__fit_card cards[MH__FIT_MAX_CARDS];
    int ncards;
    char self[PATH_MAX]; /* this binary, which runs the trials */
};

/* The search state and the answer. */
struct mh__fit {
    const struct mh__fit_opts *o;
    struct mh__fit_trial trials[MH__FIT_MAX_TRIALS];
    int ntrials;
    struct mh__fit_answer answers[MH__FIT_MAX_CARDS];
    int misses[MH__FIT_MAX_CARDS];       /* predictions in a row that did not end the card */
    int predicted[MH__FIT_MAX_CARDS];    /* the card's pending runs came from a prediction */
    int64_t batch[MH__FIT_MAX_CARDS][2]; /* the values the card asked for last */
    int nbatch[MH__FIT_MAX_CARDS];
    int jobs;            /* runs at once */
    uint64_t host_limit; /* bytes of host memory per run */
    double wall_seconds;
    int failed_trial; /* the run that stopped the search (-1: none) */
};

/* fit_command.c: the environment assignments of `cmd` applied with setenv
 * (in a child, before exec); 0 or -1. */
int mh__fit_command_apply_env(char **words, int nenv);

/* fit_trial.c: starts trial `t` (its fields value..stats set): a child
 * running `memhist -q simulate ... -- COMMAND` with its output in t->log.
 * Returns 0 or -1 (reported). */
int mh__fit_trial_start(const struct mh__fit_opts *o, struct mh__fit_trial *t);
/* Waits until one running trial ends (watching host memory and time, and
 * drawing progress), fills its exit status, seconds and host memory and
 * returns its index; -1 when none runs, -2 when fit was interrupted
 * (SIGINT, SIGTERM: the trials were stopped and waited for). */
int mh__fit_trial_wait(struct mh__fit *f);
/* Stops every running trial (SIGKILL to their process groups) and waits
 * for them. */
void mh__fit_trial_stop_all(struct mh__fit *f);
/* Catches SIGINT and SIGTERM for mh__fit_trial_wait (the trials run in
 * process groups of their own, which the terminal's signals miss). */
void mh__fit_trial_catch_signals(void);
/* Host memory available now (MemAvailable), 0 if unknown. */
uint64_t mh__fit_host_available(void);

/* fit_read.c: fills the outcome of a finished trial from its recording, its
 * exit status and the virtual device's counts. Returns 0, or MH_E* when the
 * recording cannot be read (the outcome is then MH__FIT_FAILED). */
int mh__fit_trial_read(const struct mh__fit_opts *o, struct mh__fit_trial *t);

/* fit_facts.c: what the runs prove about `card` at `value`. */
struct mh__fit_fact mh__fit_fact(const struct mh__fit *f, int card, int64_t value);
/* Runs the search to its end: every card answered, the run limit reached
 * or a run that failed for another reason than memory (f->failed_trial).
 * Returns 0 or -1 (a trial could not be started; reported). */
int mh__fit_search(struct mh__fit *f);

/* fit_levers.c: the levers of card `card`'s first failing value. */
void mh__fit_levers(struct mh__fit *f, int card);

/* fit_print.c, fit_json.c: the answer. */
void mh__fit_print_text(const struct mh__fit *f);
void mh__fit_print_json(const struct mh__fit *f);
/* The last lines of a trial's output, for the message of a failed program. */
void mh__fit_print_tail(const struct mh__fit_trial *t, int lines);
/* "batch=12", into buf. */
const char *mh__fit_value_text(const struct mh__fit_opts *o, int64_t v, char *buf, size_t len);

/* fit_plot.c (src/cli): writes the PNG of peak reserved against the value
 * (viz/plot/plot_fit.h) to o->plot. Returns 0 or -1 (reported). */
int mh__fit_write_plot(const struct mh__fit *f);

#endif
