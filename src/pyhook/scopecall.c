/* scopecall.c - module scopes from torch.nn.Module.__call__ itself (CPython
 * before 3.12), part of libmemhist_pyhook (scopehook.h).
 *
 * torch's global forward hooks put every module call on the slow path of
 * Module._call_impl, which costs more Python than the hooks' own work. Where
 * sys.monitoring is missing, memhist/_scopecall.py sets Module.__call__ to the
 * object made here instead: a method descriptor around torch's own __call__
 * that opens the module's scope (scopehook.c), calls torch's __call__ (which,
 * with no global hook, keeps its fast path) and closes the scope with the
 * output, or without one where the call raised (that exception goes on
 * unchanged). Methods bound to it outlive its place as Module.__call__ (a
 * compiled module keeps its module's bound __call__): once it stops serving
 * (torch.compile began, or the recording ended) it only calls torch's. The
 * GIL is held in every call. */
#include "scopehook.h"

#include <stddef.h>

#include "pystack.h"

struct module_call {
    PyObject_HEAD PyObject *wrapped; /* torch's Module.__call__ */
    vectorcallfunc vectorcall;
    int serving; /* its scopes are on (methods bound to it outlive its place) */
};

static struct module_call *current; /* the latest one made, while it lives */

/* Closes the scope the call opened with the exception it raised kept. */
static void close_after_error(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *r = mh__scope_exit(NULL, 0);
    if (r) {
        Py_DECREF(r);
        PyErr_Restore(type, value, tb);
        return;
    }
    Py_XDECREF(type); /* a KeyboardInterrupt while the scope closed wins */
    Py_XDECREF(value);
    Py_XDECREF(tb);
}

static PyObject *module_call_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                        PyObject *kwnames)
{
    PyObject *wrapped = ((struct module_call *)self)->wrapped;
    if (PyVectorcall_NARGS(nargsf) < 1 || !((struct module_call *)self)->serving ||
        !mh__scope_active())
        return PyObject_Vectorcall(wrapped, args, nargsf, kwnames);
    PyObject *r = mh__scope_enter(args[0], 0);
    if (!r)
        return NULL;
    Py_DECREF(r);
    PyObject *out = PyObject_Vectorcall(wrapped, args, nargsf, kwnames);
    if (!out) {
        close_after_error();
        return NULL;
    }
    r = mh__scope_exit(out, 0);
    if (!r) {
        Py_DECREF(out);
        return NULL;
    }
    Py_DECREF(r);
    return out;
}

/* module.__call__: a bound method, as for a function. */
static PyObject *module_call_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (!obj || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static void module_call_dealloc(PyObject *self)
{
    if (current == (struct module_call *)self)
        current = NULL;
    Py_XDECREF(((struct module_call *)self)->wrapped);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *module_call_wrapped(PyObject *self, void *unused)
{
    return Py_NewRef(((struct module_call *)self)->wrapped);
}

static PyObject *module_call_name(PyObject *self, void *unused)
{
    return PyUnicode_FromString("__call__");
}

static PyGetSetDef module_call_attrs[] = {
    {"__wrapped__", module_call_wrapped, NULL, "torch's Module.__call__", NULL},
    {"__name__", module_call_name, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject module_call_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "memhist.ModuleCall",
    .tp_basicsize = sizeof(struct module_call),
    .tp_dealloc = module_call_dealloc,
    .tp_vectorcall_offset = offsetof(struct module_call, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "memhist: a module's forward scope around torch's Module.__call__",
    .tp_descr_get = module_call_get,
    .tp_getset = module_call_attrs,
};

PyObject *mh_scopehook_call(PyObject *wrapped)
{
    if (!PyCallable_Check(wrapped)) {
        PyErr_SetString(PyExc_TypeError, "mh_scopehook_call: torch's Module.__call__");
        return NULL;
    }
    if (PyType_Ready(&module_call_type) < 0)
        return NULL;
    struct module_call *mc = PyObject_New(struct module_call, &module_call_type);
    if (!mc)
        return NULL;
    mc->wrapped = Py_NewRef(wrapped);
    mc->vectorcall = module_call_vectorcall;
    mh_scopehook_call_stop();                                    /* one serves at a time */
    mh__stack_hide_module((const void *)module_call_vectorcall); /* not the program's frames */
    mc->serving = 1;
    current = mc;
    return (PyObject *)mc;
}

void mh_scopehook_call_stop(void)
{
    if (current)
        current->serving = 0;
}
