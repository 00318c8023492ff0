/* wl_common.c - the workload registry, parameter parsing and the helpers of
 * wl_int.h. Workloads live in wl_gpt.c and wl_resnet.c. Owns nothing
 * beyond the static registry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "wl_int.h"

extern const struct mh__workload mh__wl_gpt;
extern const struct mh__workload mh__wl_resnet;

static const struct mh__workload *const registry[] = {&mh__wl_gpt, &mh__wl_resnet};
#define NWORKLOADS (sizeof registry / sizeof registry[0])

size_t mh__workload_count(void)
{
    return NWORKLOADS;
}

const struct mh__workload *mh__workload_at(size_t i)
{
    return i < NWORKLOADS ? registry[i] : NULL;
}

const struct mh__workload *mh__workload_find(const char *name)
{
    for (size_t i = 0; i < NWORKLOADS; i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

size_t mh__workload_param_count(const struct mh__workload *w)
{
    size_t n = 0;
    while (w->params[n].name)
        n++;
    return n;
}

static int set_param(const struct mh__workload *w, const char *item, size_t len, int64_t *values,
                     char *err, size_t errlen)
{
    const char *eq = memchr(item, '=', len);
    if (!eq) {
        snprintf(err, errlen, "parameter '%.*s': expected NAME=VALUE", (int)len, item);
        return MH_EINVAL;
    }
    size_t klen = (size_t)(eq - item);
    for (size_t i = 0; w->params[i].name; i++) {
        const struct mh__workload_param *p = &w->params[i];
        if (strlen(p->name) != klen || strncmp(p->name, item, klen) != 0)
            continue;
        char buf[32], *end;
        size_t vlen = len - klen - 1;
        if (vlen == 0 || vlen >= sizeof buf) {
            snprintf(err, errlen, "parameter '%s': missing or too long value", p->name);
            return MH_EINVAL;
        }
        memcpy(buf, eq + 1, vlen);
        buf[vlen] = 0;
        long long v = strtoll(buf, &end, 10);
        if (*end || v < p->min || v > p->max) {
            snprintf(err, errlen, "parameter '%s': bad value '%s' (an integer in [%lld, %lld])",
                     p->name, buf, (long long)p->min, (long long)p->max);
            return MH_EINVAL;
        }
        values[i] = v;
        return 0;
    }
    snprintf(err, errlen, "workload '%s' has no parameter '%.*s' (see --workload list)", w->name,
             (int)klen, item);
    return MH_EINVAL;
}

int mh__workload_parse_params(const struct mh__workload *w, const char *text, int64_t *values,
                              char *err, size_t errlen)
{
    for (size_t i = 0; w->params[i].name; i++)
        values[i] = w->params[i].dflt;
    const char *p = text ? text : "";
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len) {
            int rc = set_param(w, p, len, values, err, errlen);
            if (rc)
                return rc;
        }
        p += len + (comma ? 1 : 0);
    }
    return 0;
}

int mh__workload_format_params(const struct mh__workload *w, const int64_t *values, char *buf,
                               size_t len)
{
    size_t used = 0;
    if (len)
        buf[0] = 0;
    for (size_t i = 0; w->params[i].name; i++) {
        int n = snprintf(buf + used, used < len ? len - used : 0, "%s%s=%lld", i ? "," : "",
                         w->params[i].name, (long long)values[i]);
        if (n > 0)
            used += (size_t)n;
    }
    return (int)used;
}

int mh__workload_run(const struct mh__workload *w, struct mh__sim *s, const int64_t *values,
                     uint64_t steps, uint64_t seed, struct mh__workload_result *res)
{
    struct mh__workload_result local;
    if (!res)
        res = &local;
    memset(res, 0, sizeof *res);
    res->oom_step = -1;
    return w->run(s, values, steps, seed, res);
}

/* The name of the work progress reports are about. */
static const char WL_PROGRESS[] = "simulating the training steps";

void mh__wl_init(struct wl *w, struct mh__sim *s, uint64_t steps, uint64_t seed,
                 struct mh__workload_result *res)
{
    memset(w, 0, sizeof *w);
    w->sim = s;
    w->steps = steps;
    w->progress = mh__progress_default();
    w->rng = seed * 0x9e3779b97f4a7c15ull + 0x243f6a8885a308d3ull;
    w->step = -1;
    w->res = res;
}

struct wl_site mh__wl_site(struct wl *w, const struct wl_frame *frames, size_t n, const char *meta)
{
    struct wl_site site = {0, 0};
    uint32_t ids[32];
    if (n > 32)
        n = 32;
    for (size_t i = 0; i < n; i++)
        ids[i] = mh__sim_intern_frame(w->sim, frames[i].file, frames[i].func, frames[i].line);
    site.stack = mh__sim_intern_stack(w->sim, ids, n);
    if (meta)
        site.str = mh__sim_intern_string(w->sim, meta);
    return site;
}

uint64_t mh__wl_alloc(struct wl *w, uint64_t bytes, struct wl_site site)
{
    uint64_t addr = 0;
    if (w->stopped || bytes == 0)
        return 0;
    /* launch latency plus a memory-bound kernel writing the tensor */
    mh__sim_advance(w->sim, 2000 + bytes / 400);
    int rc = mh__sim_malloc(w->sim, bytes, w->stream, site.stack, site.str, &addr);
    if (rc == MH_EOOM_SIM) {
        w->stopped = 1;
        w->res->oom = 1;
        w->res->oom_step = w->step;
        w->res->oom_size = bytes;
        return 0;
    }
    if (rc < 0) {
        w->stopped = 1;
        w->err = rc;
        return 0;
    }
    return addr;
}

void mh__wl_free(struct wl *w, uint64_t *addr)
{
    if (w->stopped || !*addr)
        return;
    mh__sim_advance(w->sim, 500);
    int rc = mh__sim_free_block(w->sim, *addr, 0, 0, 0);
    if (rc < 0) {
        w->stopped = 1;
        w->err = rc;
    }
    *addr = 0;
}

static void marker(struct wl *w, int kind, uint32_t aux)
{
    struct mh_event ev;
    if (w->stopped)
        return;
    memset(&ev, 0, sizeof ev);
    ev.kind = (uint8_t)kind;
    ev.aux = aux;
    int rc = mh__sim_emit(w->sim, &ev);
    if (rc < 0) {
        w->stopped = 1;
        w->err = rc;
    }
}

void mh__wl_step(struct wl *w, int begin)
{
    if (begin) {
        w->step++;
        mh__sim_advance(w->sim, 20000);
        marker(w, MH_EV_STEP_BEGIN, (uint32_t)w->step);
        return;
    }
    mh__sim_advance(w->sim, 20000);
    marker(w, MH_EV_STEP_END, (uint32_t)w->step);
    if (!w->stopped)
        w->res->steps_done++;
    if (w->res->steps_done < w->steps)
        mh__progress_report(&w->progress, WL_PROGRESS, w->res->steps_done, w->steps);
}

void mh__wl_phase(struct wl *w, int phase)
{
    marker(w, MH_EV_PHASE, (uint32_t)phase);
}

double mh__wl_uniform(struct wl *w)
{
    /* splitmix64 */
    uint64_t z = (w->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

int mh__wl_finish(struct wl *w)
{
    mh__progress_report(&w->progress, WL_PROGRESS, w->steps, w->steps);
    return w->err;
}
