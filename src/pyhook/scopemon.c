/* scopemon.c - module scopes from sys.monitoring (CPython 3.12 and later),
 * part of libmemhist_pyhook (scopehook.h).
 *
 * torch runs a module's global forward hooks on the slow path of
 * Module._call_impl, which costs every module call more Python than the
 * hooks themselves. Here the hooks are absent: memhist/_scopes.py asks
 * sys.monitoring for PY_START and PY_RETURN on the code of module forwards
 * alone (local events: other code runs uninstrumented), and the callables
 * below take the module from the started frame's first argument and hand
 * it to scopehook.c, keyed by the frame, so that the frame's return closes
 * exactly what its start opened, and its end by an exception (PY_UNWIND,
 * global: a recomputation under activation checkpointing stops by raising)
 * closes it too. The code table maps a watched code object
 * to the name of that argument (both held until release). Every call
 * holds the GIL, which guards the table. */
#include "scopehook.h"

#include <stdlib.h>

#include "addrmap.h"

#if PY_VERSION_HEX >= 0x030C0000

static struct {
    struct mh__hmap table; /* code object address -> index + 1 below, as a pointer */
    PyObject **codes;      /* the watched code objects (strong references) */
    PyObject **names;      /* the name of each one's first parameter */
    size_t n, cap;
    PyObject *module_type;
} C;

static PyObject *self_name(PyObject *code)
{
    size_t v = (uintptr_t)mh__addrmap_get(&C.table, (uintptr_t)code);
    return v ? C.names[v - 1] : NULL;
}

static int room_for_one(void)
{
    if (C.n < C.cap)
        return 0;
    size_t cap = C.cap ? 2 * C.cap : 256;
    PyObject **codes = realloc(C.codes, cap * sizeof *codes);
    if (codes)
        C.codes = codes;
    PyObject **names = codes ? realloc(C.names, cap * sizeof *names) : NULL;
    if (!names) {
        PyErr_NoMemory();
        return -1;
    }
    C.names = names;
    C.cap = cap;
    return 0;
}

int mh_scopehook_watch(PyObject *code)
{
    if (!code || !PyCode_Check(code))
        return 0;
    PyCodeObject *co = (PyCodeObject *)code;
    if (co->co_argcount < 1 ||
        (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) || self_name(code))
        return 0; /* a generator's frame suspends: its start and return would not pair */
    if (room_for_one() < 0)
        return -1;
    PyObject *vars = PyCode_GetVarnames(co);
    if (!vars)
        return -1;
    PyObject *name =
        PyTuple_Check(vars) && PyTuple_GET_SIZE(vars) ? PyTuple_GET_ITEM(vars, 0) : NULL;
    int added = name && PyUnicode_Check(name);
    if (added && mh__addrmap_put(&C.table, (uintptr_t)code, (void *)(uintptr_t)(C.n + 1)) != 0) {
        Py_DECREF(vars);
        PyErr_NoMemory();
        return -1;
    }
    if (added) {
        C.codes[C.n] = Py_NewRef(code);
        C.names[C.n++] = Py_NewRef(name);
    }
    Py_DECREF(vars);
    return added;
}

/* PY_START(code, offset): a watched forward begins. */
static PyObject *on_start(PyObject *unused, PyObject *const *a, Py_ssize_t n)
{
    PyObject *name = n >= 1 && mh__scope_active() ? self_name(a[0]) : NULL;
    PyFrameObject *frame = name ? PyEval_GetFrame() : NULL;
    if (!frame)
        Py_RETURN_NONE;
    PyObject *m = PyFrame_GetVar(frame, name);
    if (!m) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *r = PyObject_TypeCheck(m, (PyTypeObject *)C.module_type)
                      ? mh__scope_enter(m, (uintptr_t)frame)
                      : Py_NewRef(Py_None);
    Py_DECREF(m);
    return r;
}

/* PY_RETURN(code, offset, value): a watched forward returns `value`. */
static PyObject *on_return(PyObject *unused, PyObject *const *a, Py_ssize_t n)
{
    if (n < 3 || !mh__scope_any_open())
        Py_RETURN_NONE;
    PyFrameObject *frame = PyEval_GetFrame();
    return frame ? mh__scope_exit(a[2], (uintptr_t)frame) : Py_NewRef(Py_None);
}

/* PY_UNWIND(code, offset, exception): a frame ends by an exception (a
 * global event: any frame); what a watched frame opened closes. */
static PyObject *on_unwind(PyObject *unused, PyObject *const *a, Py_ssize_t n)
{
    if (!mh__scope_any_open())
        Py_RETURN_NONE;
    PyFrameObject *frame = PyEval_GetFrame();
    return frame ? mh__scope_unwind((uintptr_t)frame) : Py_NewRef(Py_None);
}

static PyMethodDef start_def = {"memhist_forward_start", (PyCFunction)(void (*)(void))on_start,
                                METH_FASTCALL, "memhist: a module's forward starts"};
static PyMethodDef return_def = {"memhist_forward_return", (PyCFunction)(void (*)(void))on_return,
                                 METH_FASTCALL, "memhist: a module's forward returns"};
static PyMethodDef unwind_def = {"memhist_frame_unwind", (PyCFunction)(void (*)(void))on_unwind,
                                 METH_FASTCALL, "memhist: a frame ends by an exception"};

PyObject *mh_scopehook_monitor(PyObject *module_type)
{
    if (!module_type || !PyType_Check(module_type)) {
        PyErr_SetString(PyExc_TypeError, "mh_scopehook_monitor: torch.nn.Module");
        return NULL;
    }
    Py_XSETREF(C.module_type, Py_NewRef(module_type));
    PyObject *s = PyCFunction_New(&start_def, NULL), *r = PyCFunction_New(&return_def, NULL);
    PyObject *u = PyCFunction_New(&unwind_def, NULL);
    PyObject *t = s && r && u ? PyTuple_Pack(3, s, r, u) : NULL;
    Py_XDECREF(s);
    Py_XDECREF(r);
    Py_XDECREF(u);
    return t;
}

void mh__scopemon_release(void)
{
    for (size_t i = 0; i < C.n; i++) {
        Py_DECREF(C.codes[i]);
        Py_DECREF(C.names[i]);
    }
    free(C.codes);
    free(C.names);
    C.codes = C.names = NULL;
    C.n = C.cap = 0;
    mh__addrmap_destroy(&C.table);
    Py_CLEAR(C.module_type);
}

#else /* a Python without sys.monitoring: the forward hooks serve */

PyObject *mh_scopehook_monitor(PyObject *module_type)
{
    (void)module_type;
    Py_RETURN_NONE;
}

int mh_scopehook_watch(PyObject *code)
{
    (void)code;
    return 0;
}

void mh__scopemon_release(void)
{
}

#endif
