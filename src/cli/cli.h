/* cli.h - shared pieces of the `memhist` command-line tool.
 *
 * main.c holds the command table; each subcommand lives in cmd_<name>.c and
 * defines one `const struct mh__cli_command mh__cmd_<name>`. This header gives
 * them the common conventions: errors go to stderr as one line naming the
 * file and the problem; usage errors exit 2, failures exit 1; stdout is
 * checked before exit. Only src/cli prints. */
#ifndef MH_CLI_CLI_H
#define MH_CLI_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memhist/memhist.h"
#include "outfile.h"
#include "moment.h"
#include "replay_file.h"
#include "units.h"

#define MH__EXIT_OK 0
#define MH__EXIT_FAIL 1
#define MH__EXIT_USAGE 2

struct mh__cli_command {
    const char *name;
    const char *summary; /* one line for `memhist --help` */
    const char *usage;   /* full text for `memhist help NAME` and -h */
    /* argv[0] is the command name; returns the exit code */
    int (*run)(int argc, char **argv);
};

/* "memhist: <message>" on stderr. */
void mh__cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Adds a line to the command's status ("wrote out.png (123 bytes)"), which
 * main.c prints on stderr as "memhist: <line>" once the command succeeded:
 * the one way commands say what they wrote. */
void mh__cli_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mh__cli_print_status(void);
/* The status line of an output file, in the one form every command uses:
 * "wrote PATH (SIZE, DETAILS)TAIL", SIZE read from the written file.
 * `fmt` formats DETAILS (may be ""); `tail` may be NULL. */
void mh__cli_status_wrote(const char *path, const char *tail, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* --quiet or MEMHIST_QUIET=1: no progress line and no status lines
 * (warnings and errors stay). */
void mh__cli_set_quiet(void);
int mh__cli_is_quiet(void);

/* The progress line on stderr (progress_line.c): set up once by main.c, which
 * makes it the libraries' default progress callback (src/model/progress.h)
 * when stderr is a terminal and MEMHIST_QUIET is not set. A piece of work
 * `what` ("reading FILE", "writing FILE") reports `done` of `total` bytes
 * (total 0 = unknown), done == total when it ends; safe from several
 * threads. The line appears after the command has run a second, is
 * redrawn a few times a second and is cleared by mh__cli_progress_clear,
 * which every stderr message calls first. */
void mh__cli_progress_setup(void);
void mh__cli_progress_off(void);
void mh__cli_progress_clear(void);
void mh__cli_progress(const char *what, uint64_t done, uint64_t total);

/* Prints the message and a hint to run `memhist help NAME`; returns 2. */
int mh__cli_usage_error(const struct mh__cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints the command's usage to stdout; returns 0. */
int mh__cli_print_usage(const struct mh__cli_command *cmd);
/* 1 if argv holds -h or --help before a "--". */
int mh__cli_wants_help(int argc, char **argv);
/* Flushes stdout; on failure prints why and returns 1, else returns `code`. */
int mh__cli_finish(int code);

/* Opens an output file through viz/common/outfile.h (temporary file and rename,
 * refusing an output that is one of the inputs); prints why on failure and
 * returns < 0. */
int mh__cli_output_open(struct mh__outfile *o, const char *path, const char *const *inputs,
                       size_t ninputs);
/* Finishes an output: when `rc` is 0 commits it, else abandons it (removing
 * the partial file). `errnum`, when not 0, is the system error behind a
 * failed write and is printed as "PATH: cannot write: <reason>". Returns 0
 * or the failure (< 0). */
int mh__cli_output_close(struct mh__outfile *o, const char *path, int rc, int errnum);

/* Parses "123", "4KiB", "1.5GiB", "80G", "512MB" (binary units) into bytes. */
int mh__cli_parse_size(const char *text, uint64_t *out);
/* Parses a non-negative integer within [lo, hi]. */
int mh__cli_parse_uint(const char *text, uint64_t lo, uint64_t hi, uint64_t *out);

/* One option of a subcommand, for mh__cli_options. */
enum mh__opt_kind {
    MH__OPT_FLAG,     /* int, set to 1 */
    MH__OPT_TEXT,     /* const char *, borrowed from argv */
    MH__OPT_UINT,     /* uint64_t in [lo, hi] */
    MH__OPT_INT,      /* int in [lo, hi] */
    MH__OPT_SIZE,     /* uint64_t bytes, "80GiB"; not 0 */
    MH__OPT_FRACTION, /* double in (0, 1] */
};
struct mh__cli_opt {
    const char *name; /* long name, without "--"; NULL ends the table */
    char short_name;  /* 0 = none */
    int kind;         /* enum mh__opt_kind */
    void *out;
    uint64_t lo, hi;  /* MH__OPT_UINT and MH__OPT_INT */
    const char *hint; /* added to the error for a bad value, e.g. "e.g. 80GiB" */
    int *seen;        /* set to 1 when the option is given (NULL = not wanted) */
};
/* The device options of the commands that replay or simulate a run. */
#define MH__CLI_OPT_DEVICE_MEMORY(out, seen) \
    {"device-memory", 0, MH__OPT_SIZE, (out), 0, 0, "a size such as 80GiB", (seen)}
#define MH__CLI_OPT_MEMORY_FRACTION(out, seen) \
    {"memory-fraction", 0, MH__OPT_FRACTION, (out), 0, 0, "in (0, 1]", (seen)}
/* Parses the options of argv[1..] (they may follow the operands) into their
 * `out`; on a bad one prints one usage error and returns MH__EXIT_USAGE.
 * Returns 0 with *first at the first operand (operands are moved last). */
int mh__cli_options(const struct mh__cli_command *cmd, int argc, char **argv,
                    const struct mh__cli_opt *opts, int *first);
/* As mh__cli_options, but the options end at the first operand (or "--"):
 * for the commands that run a program given after them. */
int mh__cli_options_in_order(const struct mh__cli_command *cmd, int argc, char **argv,
                             const struct mh__cli_opt *opts, int *first);

/* The skeleton of a command over one file per rank (multi.c): with several
 * files, every file's header is read first (a file that does not open stops
 * the command before any output) and times count from the job's earliest
 * start (job_origin.h); the files are replayed in parallel, a few alive at
 * once, `each` gives one file's result
 * in the order given, then the rank table and the worst rank by peak
 * reserved are printed. With `json_files` the skeleton prints one JSON
 * document on stdout (begun by mh__cli_json_begin), {..., "files": [each
 * file's result], "ranks": [...], "spread": {...}, "worst_rank": {...}},
 * and hands `each` the writer; otherwise `each` gets NULL and the rank
 * table is text when there are several files (unless `no_worst`). `each`
 * runs on the calling thread; it returns 0 or an exit code / MH_E* (a
 * failure it has reported). Returns an exit code. */
struct mh__json;
struct mh__analysis;
struct mh__analysis_want;
struct mh__cli_multi {
    const char *command; /* names the JSON document (mh__cli_json_begin) */
    const struct mh__analysis_want *want;
    int json_files;
    int no_worst;
    /* file i of n: its analysis and what `prepare` made of it (NULL without) */
    int (*each)(void *user, const struct mh__analysis *a, void *prepared, size_t i, size_t n,
                struct mh__json *j);
    void *user;
    /* optional: a file's work that prints nothing, run on the worker thread
     * right after its replay (so in parallel across files; `user` only
     * read): its result in *prepared goes to `each`, and `discard` frees
     * it. Returns 0 or MH_E* (the file then fails with that code). */
    int (*prepare)(void *user, const struct mh__analysis *a, void **prepared);
    void (*discard)(void *prepared);
};
int mh__cli_multi_run(char **paths, size_t n, const struct mh__cli_multi *m);

/* 1 if DIR/NAME is a regular file. */
int mh__cli_is_file(const char *dir, const char *name);

/* Human units: "12.3 ms", "4.20 s" (bytes: mh__bytes_text, units.h). Returns `buf`. */
const char *mh__cli_duration(uint64_t ns, char buf[32]);

/* A window of the run: --steps A:B (inclusive) or --time A:B (seconds from
 * the first event, "1.5:3", "2:" and ":4" allowed). */
struct mh__window {
    int has_steps, has_time;
    int64_t step_lo, step_hi;
    uint64_t t_lo_ns, t_hi_ns; /* relative to the first event */
};
/* Parses either option (the other NULL). Returns 0 or MH_EINVAL with a
 * message in err. */
int mh__cli_parse_window(const char *steps, const char *time, struct mh__window *w, char *err,
                         size_t errlen);
/* A moment of the run: --at peak|oom|SECONDS (seconds from the first event,
 * "2.5" or "2.5s"), as the segment plot and the flame graph take it: *at
 * an enum mh__moment_kind (moment.h). Returns 0 or MH_EINVAL. */
int mh__cli_parse_at(const char *text, int *at, uint64_t *at_ns);
/* `memhist trace --around peak|oom` (around_window.c): the window of the
 * step before, the step of and the step after the allocated peak of
 * `device` (-1: the GPU whose peak is highest; of several files, the highest
 * peak of any) or its last OOM (`oom`; the latest of any file); without
 * steps, the second before and after it (from the job's `origin` with
 * several files). Replays each session once. `text` gets the window as
 * options and what it is around ("--steps 41:43 around the allocated peak
 * of GPU 0 (...)"). Returns 0 or an exit code (the problem reported). */
struct mh__session;
int mh__cli_around_window(struct mh__session *const *ses, const char *const *paths, size_t n,
                          int oom, int device, uint64_t origin, struct mh__window *w, char *text,
                          size_t len);
/* Whether an event at `time_ns` during `step` lies in the window; `t0_ns` is
 * the time of the first event. An empty window contains everything. */
int mh__window_contains(const struct mh__window *w, uint64_t t0_ns, uint64_t time_ns, int64_t step);

/* Runs `cmd` (NULL-terminated argv) recorded exactly as `memhist record`
 * does (cmd_record.c): the Python bootstrap and the torch bridge write
 * `output` (per rank under torchrun), then one line per process says what
 * was written. `who` names the command in messages. Returns the child's
 * exit status, or 1 if it could not be started. */
struct mh__cli_record_opts {
    const char *output, *stacks; /* stacks: python, all or none */
    int op_ranges;
    const char *who;
    uint64_t frames; /* frames kept per stack; 0: the default */
    /* end the program after this many complete training steps
     * (MEMHIST_STOP_AFTER_STEPS, read by the Python package); 0: run it to
     * its end (unless the environment already sets it) */
    uint64_t stop_after_steps;
};
int mh__cli_record_command(const struct mh__cli_record_opts *o, char **cmd);
/* cmd_record.c: whether `path` may be a recording's output, which the run
 * replaces: absent, or a regular file (or a link to one). A directory,
 * device or pipe is refused, saying so, before anything is removed (the
 * run deletes FILE and what an earlier run left beside it). */
int mh__record_output_ok(const char *who, const char *path);
/* record_summary.c: removes an earlier run's FILE.rank<R>..., FILE.pid<P>;
 * prints the closing block (files, events, peaks, next command); returns
 * the number of files written. */
void mh__record_clear_previous(const char *out_abs);
int mh__record_summary(const char *status_path, const char *out_abs);

/* Formats a stack as "file:line func" lines joined by `sep`, innermost first:
 * at most `max_frames` frames of user code (framework and interpreter frames
 * are skipped when the stack has user frames) and, when installed libraries
 * filled those, the program's own innermost frame past them; then
 * "(+N more frames)" for what was left out. Above the program's direct call
 * into torch (`opt.step()`), or with `what_allocated` above any user frame,
 * the framework frame that allocated: its Python frame, else its ATen
 * operation ("aten op silu"). Returns `buf`. */
const char *mh__cli_stack_text(const struct mh_reader *r, uint32_t stack, const char *sep,
                               size_t max_frames, int what_allocated, char *buf, size_t len);

/* Every --json output is one object that starts with "schema" (this number,
 * raised when a shape changes incompatibly; docs/json.md) and "command". */
#define MH__JSON_SCHEMA 1
struct mh__json;
struct mh__sink;
/* Starts that object on stdout: sink and j are set up, the caller ends the
 * object and finishes the sink. */
void mh__cli_json_begin(struct mh__json *j, struct mh__sink *sink, const char *command);

/* Name columns of text tables, in characters (UTF-8 code points): a width
 * fits the names it is given, up to MH__CLI_NAME_MAX; a longer name keeps its
 * head and tail around "...". */
#define MH__CLI_NAME_MAX 60
/* `width` widened to fit `name` (at most MH__CLI_NAME_MAX). */
int mh__cli_fit_width(int width, const char *name);
/* `name` in `width` characters: padded, or cut in the middle between
 * characters. */
void mh__cli_print_fitted(const char *name, int width);

/* A string from a recording made safe for text output: control characters
 * and bytes that are not UTF-8 become \xNN. Returns buf (len bytes), or s
 * itself when nothing needs escaping; NULL stays NULL. */
const char *mh__cli_text(const char *s, char *buf, size_t len);

#endif
