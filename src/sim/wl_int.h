/* wl_int.h - helpers shared by the built-in workloads: allocation
 * sites (interned stack + module path), tensor allocation that stops the
 * workload on OOM, a deterministic RNG, step and phase markers. */
#ifndef MH_SIM_WL_INT_H
#define MH_SIM_WL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "progress.h"
#include "workload.h"

struct wl_frame {
    const char *file;
    const char *func;
    uint32_t line;
};

struct wl {
    struct mh__sim *sim;
    uint64_t steps; /* the steps asked for, for progress reports */
    struct mh__progress progress;
    uint64_t rng;
    uint64_t stream;
    int64_t step;
    int stopped;  /* OOM met (or an error): every helper becomes a no-op */
    int err;      /* negative error other than OOM */
    struct mh__workload_result *res;
};

/* `steps`: the steps the run is asked for, reported as progress (the
 * default, progress.h) after each one. */
void mh__wl_init(struct wl *w, struct mh__sim *s, uint64_t steps, uint64_t seed,
                 struct mh__workload_result *res);
/* Interns frames (innermost first) as a stack; `meta` (module path) may be
 * NULL. The result packs the stack and string ids. */
struct wl_site {
    uint32_t stack, str;
};
struct wl_site mh__wl_site(struct wl *w, const struct wl_frame *frames, size_t n, const char *meta);
/* Allocates a tensor; returns its address or 0 once stopped. */
uint64_t mh__wl_alloc(struct wl *w, uint64_t bytes, struct wl_site site);
/* Frees the tensor at *addr (if any) and clears it. */
void mh__wl_free(struct wl *w, uint64_t *addr);
void mh__wl_step(struct wl *w, int begin);
void mh__wl_phase(struct wl *w, int phase);
/* Uniform in [0, 1). */
double mh__wl_uniform(struct wl *w);
/* Result of a run: 0, or the error. */
int mh__wl_finish(struct wl *w);

#endif
