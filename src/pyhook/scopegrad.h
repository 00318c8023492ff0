/* scopegrad.h - backward module scopes as C++ pre-hooks on autograd nodes
 * (src/pyhook/scopegrad.cpp), called by the forward hooks of scopehook.c.
 * Internal to libmemhist_pyhook. */
#ifndef MH_PYHOOK_SCOPEGRAD_H
#define MH_PYHOOK_SCOPEGRAD_H

#include <Python.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mh_recorder;
struct mh__gscope; /* one module's backward scope: path, string id, root or not */

/* A module's backward scope (NULL: out of memory). Hooks keep what they use
 * alive, so it may be freed while hooks that carry it remain. */
struct mh__gscope *mh__gscope_new(const char *path, size_t len, uint32_t sid, int root);
void mh__gscope_free(struct mh__gscope *s);

/* Whether this thread is running a backward pass (an autograd graph task). */
int mh__gscope_in_backward(void);
/* This thread's next autograd sequence number: nodes made from now on
 * have this number or a higher one. */
uint64_t mh__gscope_seq_now(void);
/* Puts the scope's pre-hook on the autograd node of `out` (a tensor, or
 * the first tensor with one in a tuple or list; `tensor_type` is
 * torch._C.TensorBase) made at or after sequence number `since` (the
 * module's forward began there), and tags the CUDA tensors of `out` with
 * such a node (the output's, or each item's) as the module's outputs
 * (MH_ROLE_OUTPUT, unless the module is a root). 1: done, 0: no such node,
 * -1: failed (Python error set). */
int mh__gscope_attach(PyObject *out, PyObject *tensor_type, struct mh__gscope *s, uint64_t since);

/* A session starts emitting into `rec`; hooks of earlier sessions do nothing. */
void mh__gscope_start(struct mh_recorder *rec);
/* No hook emits from now on. */
void mh__gscope_stop(void);
/* Closes the backward scopes open on every thread. */
void mh__gscope_close_all(void);

#ifdef __cplusplus
}
#endif
#endif
