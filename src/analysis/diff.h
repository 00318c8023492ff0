/* diff.h - the answer of `memhist diff A B`: two runs of one program
 * (recorded, simulated or what-if) side by side on one device each: their
 * peaks, the steps both have with their peaks, and the layers and stacks
 * whose bytes live at the allocated peak changed most (B minus A). Layers
 * are matched by name (layers.h), stacks by their label (stacks.h: the most
 * informative frame), since stack ids differ between files. */
#ifndef MH_ANALYSIS_DIFF_H
#define MH_ANALYSIS_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/model.h"

/* Bytes at the peak of one name in A and in B. */
struct mh__named_delta {
    char name[256];
    uint64_t a, b;
};

/* A step both runs have, by number. */
struct mh__diff_step {
    int64_t step;
    uint64_t allocated_a, allocated_b, reserved_a, reserved_b; /* the step's peaks */
};

struct mh__diff {
    int device[2];
    struct mh_peak allocated[2], reserved[2];
    struct mh__diff_step *steps; /* in A's order */
    size_t nsteps, steps_a;     /* the common steps, A's steps */
    struct mh__named_delta *layers, *stacks; /* largest change first, then by name */
    size_t nlayers, nstacks;
};

struct mh__analysis;

/* Compares device `dev[i]` (-1: the first device of its file) of the runs
 * `run[0]` (A) and `run[1]` (B), each opened as an analysis with the live
 * groups at the peak (mh__analysis_want.peak_groups); one more pass over
 * each file for its layers. Returns 0 or a negative MH_E* code. */
int mh__diff_runs(const struct mh__analysis *run[2], const int dev[2], struct mh__diff *out);
void mh__diff_free(struct mh__diff *d);

#endif
