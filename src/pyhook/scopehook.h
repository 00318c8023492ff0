/* scopehook.h - module scope hooks in C for the Python package
 * (libmemhist_pyhook.so: src/pyhook/scopehook.c, scopemon.c, scopegrad.cpp).
 * The package's memhist/_scopes.py loads the library with ctypes.PyDLL (the
 * GIL is held in every call) and registers the two callables that
 * mh_scopehook_open returns as torch's global module forward pre/post
 * hooks, or, on CPython 3.12 and later, those of mh_scopehook_monitor as
 * sys.monitoring callbacks (memhist/_scopemon.py), or, before 3.12, sets
 * mh_scopehook_call's descriptor as Module.__call__ (memhist/_scopecall.py). */
#ifndef MH_PYHOOK_SCOPEHOOK_H
#define MH_PYHOOK_SCOPEHOOK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

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

/* ---- sys.monitoring (scopemon.c; CPython 3.12 and later) -------------------- */

/* A new tuple (start, return, unwind) of C callables for sys.monitoring's
 * PY_START and PY_RETURN events, to be set on the code of module forwards
 * only, and PY_UNWIND, set globally: a start whose first argument is an
 * instance of `module_type` (torch.nn.Module) opens that module's scope as
 * the forward pre hook would, the frame's return or unwinding closes it. Use after mh_scopehook_open. None where the library was
 * built for a Python without sys.monitoring; NULL with an exception set. */
PyObject *mh_scopehook_monitor(PyObject *module_type);

/* Makes the start callable know `code` (a function's code with at least
 * one positional parameter, the module; not a generator's): 1 added, 0
 * known already or not such a code, -1 with an exception set. The code objects are kept until
 * mh_scopehook_release. */
int mh_scopehook_watch(PyObject *code);

/* ---- Module.__call__ (scopecall.c; where sys.monitoring is missing) ---------- */

/* A new method descriptor to set as torch.nn.Module.__call__ in place of
 * `wrapped` (torch's own): it opens the module's scope as the forward pre
 * hook would, calls `wrapped` and closes the scope as the post hook would,
 * also when the call raises; while the hooks are off it only calls
 * `wrapped`. Use after mh_scopehook_open; NULL with an exception set. */
PyObject *mh_scopehook_call(PyObject *wrapped);

/* The latest such descriptor only calls the function it wraps from now on
 * (wherever a method bound to it is kept; an earlier one stopped when the
 * next was made); mh_scopehook_release too. */
void mh_scopehook_call_stop(void);

/* ---- internal to the library ------------------------------------------------- */

/* Opens module `m`'s forward scope on this thread; `frame`: the monitored
 * frame (0 from the pre hook). A new reference to None, never an error
 * (a failure turns the hooks off and goes to Python's failed callable). */
PyObject *mh__scope_enter(PyObject *m, uintptr_t frame);
/* Closes the scope `frame` opened (0: the innermost, from the post hook)
 * and puts its backward scope on `output`'s autograd node. */
PyObject *mh__scope_exit(PyObject *output, uintptr_t frame);
/* Closes the scope `frame` opened and those above it (it ends by an
 * exception: no backward scope). */
PyObject *mh__scope_unwind(uintptr_t frame);
/* Whether the hooks are on. */
int mh__scope_active(void);
/* Whether this thread has a forward scope open (a return can close one). */
int mh__scope_any_open(void);
/* Releases what scopemon.c holds (mh_scopehook_release calls it). */
void mh__scopemon_release(void);

#endif
