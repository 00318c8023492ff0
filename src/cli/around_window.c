/* around_window.c - the window of `memhist trace --around peak|oom` (see
 * cli.h): the step before, the step of and the step after a device's
 * allocated peak or its last OOM, found by one replay of each file
 * (viz/trace/trace_around.c); the second before and after the moment when
 * the device has no steps. Of several files, the highest peak or the latest
 * OOM of any. */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "trace_writer.h"

#define AROUND_STEPS 1           /* steps on each side */
#define AROUND_NS 1000000000ull  /* without steps: a second on each side */

static int better(int oom, const struct mh__trace_moment *m, const struct mh__trace_moment *best)
{
    if (!m->found)
        return 0;
    if (!best->found)
        return 1;
    return oom ? m->time_ns > best->time_ns : m->value > best->value;
}

/* "the allocated peak of GPU 0 (9.39 GiB, 12.3 s, step 42)". */
static void describe(int oom, const struct mh__trace_moment *m, uint64_t t0, char *text,
                     size_t len)
{
    char b[32], d[32], s[24];
    mh__bytes_text(m->value, b);
    mh__cli_duration(m->time_ns > t0 ? m->time_ns - t0 : 0, d);
    mh__step_text(m->step, s);
    snprintf(text, len, "%s GPU %d (%s%s, %s, %s)",
             oom ? "the last OOM on" : "the allocated peak of", m->device, oom ? "request " : "",
             b, d, s);
}

int mh__cli_around_window(struct mh__session *const *ses, const char *const *paths, size_t n,
                          int oom, int device, uint64_t origin, struct mh__window *w, char *text,
                          size_t len)
{
    struct mh__trace_moment best = {0}, m;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (mh__trace_moment(ses[i], oom ? MH__TRACE_AROUND_OOM : MH__TRACE_AROUND_PEAK, device,
                             &m) < 0)
            return MH__EXIT_FAIL; /* the session reported it */
        if (better(oom, &m, &best)) {
            best = m;
            at = i;
        }
    }
    if (!best.found) {
        char on[64] = "", where[64] = "";
        if (device >= 0)
            snprintf(on, sizeof on, " on GPU %d", device);
        if (n > 1)
            snprintf(where, sizeof where, " in the %zu files", n);
        mh__cli_error("%s%sno %s%s%s to centre --around %s on", n > 1 ? "" : paths[0],
                      n > 1 ? "" : ": ", oom ? "OOM" : "allocation", on, n > 1 ? where : "",
                      oom ? "oom" : "peak");
        return MH__EXIT_FAIL;
    }
    uint64_t t0 = n > 1 && origin ? origin : best.first_ns;
    char what[160], where[64] = "";
    if (n > 1)
        snprintf(where, sizeof where, "%s, ", paths[at]);
    describe(oom, &best, t0, what, sizeof what);
    memset(w, 0, sizeof *w);
    if (best.has_steps) {
        w->has_steps = 1;
        w->step_lo = best.step - AROUND_STEPS < -1 ? -1 : best.step - AROUND_STEPS;
        w->step_hi = best.step + AROUND_STEPS;
        snprintf(text, len, "--steps %lld:%lld around %s%s", (long long)w->step_lo,
                 (long long)w->step_hi, where, what);
    } else {
        uint64_t rel = best.time_ns > t0 ? best.time_ns - t0 : 0;
        w->has_time = 1;
        w->t_lo_ns = rel > AROUND_NS ? rel - AROUND_NS : 0;
        w->t_hi_ns = rel + AROUND_NS;
        snprintf(text, len, "--time %.3f:%.3f (no steps) around %s%s", (double)w->t_lo_ns / 1e9,
                 (double)w->t_hi_ns / 1e9, where, what);
    }
    return 0;
}
