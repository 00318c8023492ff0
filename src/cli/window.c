/* window.c - the --steps A:B / --time A:B options shared by the subcommands
 * that look at part of a run (see cli.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int parse_bound_int(const char *s, const char *end, int64_t dflt, int64_t *out)
{
    if (s == end) {
        *out = dflt;
        return 0;
    }
    char *stop;
    errno = 0;
    long long v = strtoll(s, &stop, 10);
    if (errno || stop != end)
        return MH_EINVAL;
    *out = v;
    return 0;
}

static int parse_bound_seconds(const char *s, const char *end, uint64_t dflt, uint64_t *out)
{
    if (s == end) {
        *out = dflt;
        return 0;
    }
    char *stop;
    errno = 0;
    double v = strtod(s, &stop);
    if (stop < end && *stop == 's')
        stop++;
    if (errno || stop != end || !isfinite(v) || v < 0 || v > 1e9)
        return MH_EINVAL;
    *out = (uint64_t)llround(v * 1e9);
    return 0;
}

int mh__cli_parse_at(const char *text, int *at, uint64_t *at_ns)
{
    *at_ns = 0;
    if (strcmp(text, "peak") == 0 || strcmp(text, "oom") == 0) {
        *at = text[0] == 'p' ? MH__MOMENT_PEAK : MH__MOMENT_OOM;
        return 0;
    }
    *at = MH__MOMENT_TIME;
    return parse_bound_seconds(text, text + strlen(text), 0, at_ns) == 0 && *text ? 0 : MH_EINVAL;
}

int mh__cli_parse_window(const char *steps, const char *time, struct mh__window *w, char *err,
                         size_t errlen)
{
    memset(w, 0, sizeof *w);
    if (steps && time) {
        snprintf(err, errlen, "--steps and --time cannot be combined");
        return MH_EINVAL;
    }
    const char *text = steps ? steps : time;
    if (!text)
        return 0;
    const char *colon = strchr(text, ':');
    const char *end = text + strlen(text);
    const char *mid = colon ? colon : end;
    int rc;
    if (steps) {
        w->has_steps = 1;
        rc = parse_bound_int(text, mid, INT64_MIN, &w->step_lo);
        if (!rc)
            rc = colon ? parse_bound_int(colon + 1, end, INT64_MAX, &w->step_hi)
                       : parse_bound_int(text, mid, 0, &w->step_hi);
        if (!rc && w->step_lo > w->step_hi)
            rc = MH_EINVAL;
    } else {
        w->has_time = 1;
        rc = parse_bound_seconds(text, mid, 0, &w->t_lo_ns);
        if (!rc)
            rc = colon ? parse_bound_seconds(colon + 1, end, UINT64_MAX, &w->t_hi_ns)
                       : MH_EINVAL;
        if (!rc && w->t_lo_ns >= w->t_hi_ns)
            rc = MH_EINVAL;
    }
    if (rc)
        snprintf(err, errlen, "invalid %s '%s' (expected %s)", steps ? "--steps" : "--time", text,
                 steps ? "A:B, A:, :B or N, with A <= B" : "seconds A:B from the start, A < B");
    return rc;
}

int mh__window_contains(const struct mh__window *w, uint64_t t0_ns, uint64_t time_ns, int64_t step)
{
    if (w->has_steps)
        return step >= w->step_lo && step <= w->step_hi;
    if (w->has_time) {
        uint64_t rel = time_ns >= t0_ns ? time_ns - t0_ns : 0;
        return rel >= w->t_lo_ns && rel <= w->t_hi_ns;
    }
    return 1;
}
