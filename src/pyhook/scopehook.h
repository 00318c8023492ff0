/* scopehook.h - module scope hooks in C for the Python package
 * (libmemhist_pyhook.so: src/pyhook/scopehook.c, scopegrad.cpp). The package's
 * memhist/_scopes.py loads the library with ctypes.PyDLL (the GIL is held
 * in every call) and registers the two callables that mh_scopehook_open
 * returns as torch's global module forward pre/post hooks. */
#ifndef MEMHIST_SCOPEHOOK_H
#define MEMHIST_SCOPEHOOK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

struct mh_recorder;

/* Starts a set of hooks that emit scope events into `rec` and returns a new
 * tuple (pre, post) of C callables, taking the arguments of torch's module
 * forward pre and post hooks, or NULL with a Python exception set. (The
 * package calls them from two-line Python hooks that torch.compile traces
 * away: Dynamo cannot trace a C function and would break the graph.) Any
 * earlier set stops (one recording session at a time). The callables from
 * Python, each called on rare occasions only:
 *   name(module, parent_path or None) -> [(module, path, string id, is_root), ...]
 *       names a module on first sight (None: it is a root, name its tree);
 *   root_forward(module)  a root's forward begins with no scope open;
 *   failed(message)       a hook failed: the hooks are off from then on;
 * and torch._C.TensorBase, the type of every tensor. */
PyObject *mh_scopehook_open(struct mh_recorder *rec, PyObject *name, PyObject *root_forward,
                            PyObject *failed, PyObject *tensor_type);

/* Closes the backward scopes open on every thread (the optimizer step or
 * the next root forward begins). */
void mh_scopehook_close_backward(void);

/* The hooks do nothing from now on (callable from within a hook). */
void mh_scopehook_off(void);

/* Off, and the module table and the Python callables are released; not
 * from within a hook. */
void mh_scopehook_release(void);

#endif
