/* memhist/optsteps.h - which optimizer steps end a training step.
 *
 * A training loop may step several optimizers per iteration (one per kind
 * of parameter, a GAN's two). The torch bridge and the snapshot importer
 * end a training step at an optimizer step only where that optimizer is the
 * key of the device: the first optimizer to step there, or one that stepped
 * twice with no step of the key between (the key stopped stepping). */
#ifndef MEMHIST_OPTSTEPS_H
#define MEMHIST_OPTSTEPS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MH_OPT_SEEN 8             /* optimizers kept per slot between step ends */
#define MH_OPT_DEVICES_UNKNOWN 64 /* the slot of steps over unknown devices */

struct mh_opt_slot {
    uint64_t key;               /* the optimizer whose steps end this slot's steps; 0: none yet */
    uint64_t seen[MH_OPT_SEEN]; /* other optimizers stepped since the slot's last step end */
    unsigned nseen;
};

struct mh_opt_steps {
    struct mh_opt_slot slot[MH_OPT_DEVICES_UNKNOWN + 1]; /* devices 0-63, then unknown */
};

/* The step of `optimizer` (any identity that stays the same for one
 * optimizer; 0: unknown, which ends a training step every time) over
 * `*devices` (bit d: device d; 0: unknown) has ended. Returns 1 when it ends
 * a training step, and leaves in *devices the devices whose step it ends
 * (0 when the devices are unknown). Not thread-safe. */
int mh_opt_steps_end(struct mh_opt_steps *st, uint64_t optimizer, uint64_t *devices);
/* `optimizer` is gone (its identity may be reused): forgotten; where it was
 * the key, the next optimizer to step becomes the key and ends the step (a
 * loop that makes a new optimizer each iteration). */
void mh_opt_steps_forget(struct mh_opt_steps *st, uint64_t optimizer);
void mh_opt_steps_reset(struct mh_opt_steps *st);

#ifdef __cplusplus
}
#endif
#endif
