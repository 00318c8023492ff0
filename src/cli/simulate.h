/* simulate.h - what cmd_simulate.c (options) hands simulate_program.c (runs
 * a program on the virtual CUDA device and records it) and
 * simulate_verdict.c (whether it fit). */
#ifndef MH_CLI_SIMULATE_H
#define MH_CLI_SIMULATE_H

#include <stdint.h>

#include "cli.h"
#include "vdev_presets.h"

struct mh__cli_vdev_opts {
    const struct mh__vdev_gpu *gpu;
    uint64_t capacity, context; /* bytes per device */
    int devices;                /* 0: one, or one per local rank under torchrun */
    const char *events;         /* immediate or sync */
    const char *alloc_conf;     /* PYTORCH_CUDA_ALLOC_CONF for the program, or NULL */
    const char *output, *stacks;
    int op_ranges; /* record record_function ranges too */
    int report;    /* print `memhist report` of the file afterwards */
    uint64_t stop_after_steps; /* end the program after this many steps; 0: never */
};

extern const struct mh__cli_command mh__cmd_report;

/* Prints whether the recording at `path` (named in each line if `name_file`)
 * fit each device it used, given the memory the CUDA context took; returns 0,
 * or 1 if the file cannot be read. */
int mh__cli_simulate_verdict(const char *path, int name_file, uint64_t context);

/* Whether `name` can be executed (as execvp would find it on PATH). */
int mh__cli_command_exists(const char *name);

/* Returns the program's exit status, or 1 when it could not be started. */
int mh__cli_simulate_program(const struct mh__cli_vdev_opts *o, char **cmd);

#endif
