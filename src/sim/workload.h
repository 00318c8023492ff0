/* workload.h - built-in training workloads that drive the simulator.
 *
 * Each workload is a tensor-lifetime model of a training loop (which tensors
 * a real run allocates, how big, in which order, and when they die),
 * parameterised by the model's shapes. It emits steps and phases and gives
 * every allocation a Python-like stack and a module path (user metadata), so
 * a simulated recording reads like a recorded one. On a simulated OOM the
 * workload stops where a real run would raise OutOfMemoryError: the OOM event
 * is the last allocator event, nothing is freed afterwards and the open step
 * is not closed. */
#ifndef MH_SIM_WORKLOAD_H
#define MH_SIM_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "sim.h"

#define MH__WORKLOAD_MAX_PARAMS 16

struct mh__workload_param {
    const char *name;
    int64_t dflt;
    int64_t min, max;
    const char *help;
};

struct mh__workload_result {
    uint64_t steps_done; /* completed steps */
    int oom;             /* 1 if the run stopped on a simulated OOM */
    int64_t oom_step;
    uint64_t oom_size;   /* requested bytes of the failed allocation */
};

struct mh__workload {
    const char *name;
    const char *summary;
    const struct mh__workload_param *params; /* terminated by a NULL name */
    /* values: one per parameter, in order */
    int (*run)(struct mh__sim *s, const int64_t *values, uint64_t steps, uint64_t seed,
               struct mh__workload_result *res);
};

size_t mh__workload_count(void);
const struct mh__workload *mh__workload_at(size_t i);
const struct mh__workload *mh__workload_find(const char *name);
size_t mh__workload_param_count(const struct mh__workload *w);
/* Fills values with the defaults, then applies "k=v,k=v". MH_EINVAL with a
 * message naming the bad key or value. */
int mh__workload_parse_params(const struct mh__workload *w, const char *text, int64_t *values,
                              char *err, size_t errlen);
/* "k=v,k=v" of all values. */
int mh__workload_format_params(const struct mh__workload *w, const int64_t *values, char *buf,
                               size_t len);
/* Runs the workload. Returns 0 also when it stopped on a simulated OOM
 * (res->oom says so); negative on other failures. */
int mh__workload_run(const struct mh__workload *w, struct mh__sim *s, const int64_t *values,
                     uint64_t steps, uint64_t seed, struct mh__workload_result *res);

#endif
