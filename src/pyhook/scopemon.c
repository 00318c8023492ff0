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
 * to the name of that argument (held strongly until release). Every call
 * holds the GIL, which guards the table. */
#include "scopehook.h"

#include <stdlib.h>

#if PY_VERSION_HEX >= 0x030C0000

static struct {
    uintptr_t *keys;   /* code object address (0: empty slot) */
    PyObject **names;  /* its first parameter's name */
    PyObject **codes;  /* the code objects themselves (strong references) */
    size_t cap, n;
    PyObject *module_type;
} C;

static size_t code_slot(uintptr_t key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 32) & (C.cap - 1);
    while (C.keys[i] && C.keys[i] != key)
        i = (i + 1) & (C.cap - 1);
    return i;
}

static PyObject *self_name(PyObject *code)
{
    if (!C.cap)
        return NULL;
    size_t i = code_slot((uintptr_t)code);
    return C.keys[i] ? C.names[i] : NULL;
}

static int code_grow(void)
{
    size_t cap = C.cap ? 2 * C.cap : 1024;
    uintptr_t *keys = calloc(cap, sizeof *keys);
    PyObject **names = calloc(cap, sizeof *names), **codes = calloc(cap, sizeof *codes);
    if (!keys || !names || !codes) {
        free(keys);
        free(names);
        free(codes);
        PyErr_NoMemory();
        return -1;
    }
    uintptr_t *ok = C.keys;
    PyObject **on = C.names, **oc = C.codes;
    size_t ocap = C.cap;
    C.keys = keys;
    C.names = names;
    C.codes = codes;
    C.cap = cap;
    for (size_t i = 0; i < ocap; i++)
        if (ok[i]) {
            size_t s = code_slot(ok[i]);
            C.keys[s] = ok[i];
            C.names[s] = on[i];
            C.codes[s] = oc[i];
        }
    free(ok);
    free(on);
    free(oc);
    return 0;
}

int mh_scopehook_watch(PyObject *code)
{
    if (!code || !PyCode_Check(code))
        return 0;
    PyCodeObject *co = (PyCodeObject *)code;
    if (co->co_argcount < 1 || self_name(code))
        return 0;
    if ((C.n + 1) * 2 > C.cap && code_grow() < 0)
        return -1;
    PyObject *vars = PyCode_GetVarnames(co);
    if (!vars)
        return -1;
    PyObject *name = PyTuple_Check(vars) && PyTuple_GET_SIZE(vars) ? PyTuple_GET_ITEM(vars, 0) : NULL;
    int added = name && PyUnicode_Check(name);
    if (added) {
        size_t i = code_slot((uintptr_t)code);
        C.keys[i] = (uintptr_t)code;
        C.names[i] = Py_NewRef(name);
        C.codes[i] = Py_NewRef(code);
        C.n++;
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
    for (size_t i = 0; i < C.cap; i++)
        if (C.keys[i]) {
            Py_DECREF(C.names[i]);
            Py_DECREF(C.codes[i]);
        }
    free(C.keys);
    free(C.names);
    free(C.codes);
    C.keys = NULL;
    C.names = C.codes = NULL;
    C.cap = C.n = 0;
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
