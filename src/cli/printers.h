/* printers.h - the text and JSON printers of `memhist report` and
 * `memhist oom` (report_text.c, report_json.c, report_oom_print.c) and the
 * oom driver (oom_run.c); the data they print is gathered in src/analysis. */
#ifndef MH_CLI_PRINTERS_H
#define MH_CLI_PRINTERS_H

#include "cli.h"
#include "device_report.h"
#include "job_ranks.h"
#include "json.h"
#include "oom_explain.h"

/* What `memhist report` shows: frames per stack group, and which rows of the
 * per-step table (--steps A:B; --all-steps for every row of a long run). */
struct mh__report_view {
    size_t max_frames;
    struct mh__window steps;
    int all_steps;
};

/* Runs longer than this many steps get a summarised per-step table. */
#define MH__REPORT_STEP_ROWS 30

/* The per-step rows to show (report_steps.c): indices into the model's steps
 * of `device`, ascending, at most `cap`. Every step in the --steps window;
 * without one, all steps of short runs (or with --all-steps), else the first
 * and last three, the peak allocated and peak reserved steps, and up to ten
 * outliers (OOMs, allocation retries, or a peak above the median by more
 * than 5 % and three median absolute deviations). */
size_t mh__report_step_rows(const struct mh_model *m, int device, const struct mh__report_view *v,
                            size_t *rows, size_t cap);

void mh__report_print_text(const struct mh__replay *rp, const struct mh__device_report *devs,
                           size_t ndev, const struct mh__report_view *v);
/* One file's object in the "files" list of `report --json`; `steps` limits
 * its per-step list (every step when it has no window). */
void mh__report_print_json(struct mh__json *j, const struct mh__replay *rp,
                           const struct mh__device_report *devs, size_t ndev,
                           const struct mh__window *steps);

/* cmd_growth.c: "module (file:line func)" naming a growing group. */
const char *mh__growth_label(const struct mh_reader *r, const struct mh__growth_entry *e, char *buf,
                             size_t len);
/* cmd_growth.c: a device's growth as JSON: {"window_steps": K, "entries":
 * [...]} with at most `top` entries (all if 0). */
void mh__growth_json(struct mh__json *j, const struct mh_reader *r, const struct mh__device_report *d,
                     size_t top);

/* report_ranks.c: one file's row of the rank table, kept after its
 * analysis is closed (path borrowed from the command line). */
/* The rank table, spread and worst rank (ties stated) of several files,
 * times from `origin` (the job's start); JSON keys "ranks", "spread",
 * "worst_rank" when j, else text when n > 1. */
int mh__print_ranks(const struct mh__rank_row *rows, size_t n, uint64_t origin, struct mh__json *j);
/* Reports that `path` has no events for `device`, naming the devices it
 * has (with `ranks`, that the index is the one its process saw). */
void mh__cli_missing_device(const char *path, const struct mh_model *m, int device, int ranks);
/* One file's devices for a command's `each`: calls `one` for every device
 * of the file that `device` selects (all when < 0), inside the file's JSON
 * object {"file": ..., "devices": [...]} when j. A selected device the file
 * lacks is an error (mh__cli_missing_device); a file with no device prints
 * "no allocations" in text. Returns 0 or MH__EXIT_FAIL (reported). */
int mh__cli_each_device(const struct mh__analysis *a, int device, struct mh__json *j,
                        int (*one)(void *user, const struct mh__analysis *a, int dev,
                                   struct mh__json *j),
                        void *user);
/* `memhist oom` over one file per rank; returns an exit code. */
int mh__oom_explain_all(char **paths, size_t n, const struct mh__oom_opts *o);

/* replay_check.c: the label saying whether what-if figures are checked by
 * replay (mh__whatif_checked of the baseline replay `base`, NULL if it
 * failed), and the line saying which starting state a mid-run trace was
 * replayed from. */
const char *mh__replay_check_text(const struct mh__whatif_outcome *base, char *buf, size_t len);
const char *mh__replay_seed_text(const struct mh__whatif_outcome *base, char *buf, size_t len);

void mh__oom_print_text(const struct mh__analysis *a, const struct mh__oom_case *c,
                        const struct mh__oom_opts *o, size_t number, size_t count);
void mh__oom_print_json(struct mh__json *j, const struct mh__analysis *a, const struct mh__oom_case *c,
                        const struct mh__oom_opts *o);

#endif
