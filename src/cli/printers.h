/* printers.h - the text and JSON printers of `memhist report` and
 * `memhist oom` (report_text.c, report_json.c, report_oom_print.c) and the
 * oom driver (oom_run.c); the data they print is gathered in src/analysis. */
#ifndef MH_CLI_PRINTERS_H
#define MH_CLI_PRINTERS_H

#include "cli.h"
#include "device_report.h"
#include "json.h"
#include "oom_explain.h"

void mh__report_print_text(const struct mh_replay *rp, const struct mh_device_report *devs,
                           size_t ndev, size_t max_frames);
void mh__report_print_json(const struct mh_replay *rp, const struct mh_device_report *devs,
                           size_t ndev);

/* `memhist oom` over one file per rank; returns an exit code. */
int mh__oom_explain_all(char **paths, size_t n, const struct mh_oom_opts *o);

void mh__oom_print_text(const struct mh_analysis *a, const struct mh_oom_case *c,
                        const struct mh_oom_opts *o, size_t number, size_t count);
void mh__oom_print_json(struct mh_json *j, const struct mh_analysis *a, const struct mh_oom_case *c,
                        const struct mh_oom_opts *o);

#endif
