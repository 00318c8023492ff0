/* tensortag.h - tensor roles tagged in C for the package's optimizer and
 * root-module hooks (libmemhist_pyhook.so: src/pyhook/tensortag.cpp).
 * memhist/_scopes.py calls them through ctypes.PyDLL: the GIL is held. */
#ifndef MH_PYHOOK_TENSORTAG_H
#define MH_PYHOOK_TENSORTAG_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mh_recorder;

/* Tags the CUDA tensors in `tensors` with `role` (MH__ROLE_*): a tensor, or
 * a list, tuple or dict (its values) of them, nested up to three deep;
 * with `grads` each tensor's .grad instead. `sids` is None, or a list of
 * string ids as long as the list `tensors`, each naming its tensor. A
 * tensor tagged with this role at its present address before is left out,
 * so a call per optimizer step costs a table probe per tensor. Returns a
 * new int, the CUDA devices (bit d: device d, 0-63) of the tensors seen, or
 * NULL with a Python exception set. */
PyObject *mh_tensortag(struct mh_recorder *rec, PyObject *tensors, unsigned role, int grads,
                       PyObject *sids);

/* A set of hooks opens (scopehook.c) with torch._C.TensorBase, the type of
 * every tensor, or closes (NULL): what was tagged is forgotten. */
void mh__tensortag_start(PyObject *tensor_type);

/* Slots of the table in use: tensors (and parameters' gradients) known
 * (tests/vdevice/check_tags.py). */
size_t mh__tensortag_used(void);

#ifdef __cplusplus
}
#endif
#endif
