/* scopehook.c - module scopes in C: the per-call path, driven by torch's
 * module forward pre/post hooks or, on CPython 3.12 and later, by
 * sys.monitoring's start and return of each module's forward (scopemon.c)
 * (src/python/memhist/_scopes.py installs them, scopehook.h).
 *
 * Data flow: a module call's start (the forward pre hook, or the monitored
 * forward frame's start with the module read from its first argument) maps
 * the module object to its scope (path, string id) with one probe of an
 * address table (Python names a module on first sight only), pushes it on
 * the calling thread's stack and emits the scope event itself
 * (mh_recorder_scope, annotate.c). Its end (the post hook, or the frame's
 * return, which also closes what frames that raised left open) pops it, emits the exit
 * and has scopegrad.cpp put the module's backward scope on the output's
 * autograd node, if the forward made that node, where it opens when autograd
 * reaches it, and tag the output tensors the forward made as its outputs. Every
 * forward hook runs with the GIL held, which guards the tables here. */
#include "scopehook.h"
#include "addrmap.h"
#include "scopegrad.h"
#include "tensortag.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/event.h"
#include "memhist/recorder.h"

#define DEPTH 256 /* module nesting kept per thread; deeper calls are counted only */

struct mod {                /* a module seen by the hooks */
    PyObject *ref;          /* weak reference to it: the table never keeps a model alive */
    PyObject *path;         /* "transformer.h.3.mlp" (a root: its class name) */
    struct mh__gscope *bwd; /* its backward scope */
    uint32_t sid;           /* the string id of its path in the recording */
    int root;
    long parent; /* outside every root's tree: mods index of the scope that named it, else -1 */
};

static struct {
    struct mh_recorder *rec;
    PyObject *name, *root_forward, *failed, *tensor_type;
    struct mod *mods;
    size_t nmods, capmods;
    struct mh__hmap table; /* module address -> mods index + 1, as a pointer */
    int on;
    uint32_t gen; /* which set of hooks: stale thread stacks are told apart */
} H;

/* The calling thread's open forward scopes. */
static _Thread_local struct {
    uint32_t gen, n, over;
    uint32_t mod[DEPTH];    /* mods index, | AGAIN where that module's scope was open already */
    uintptr_t frame[DEPTH]; /* the frame that opened it (sys.monitoring); 0 from the hooks */
    uint64_t seq[DEPTH];    /* the thread's autograd sequence number when it opened */
} fw;

#define AGAIN 0x80000000u /* a forward inside the open scope's own (is_open_again) */

/* ---- the module table ------------------------------------------------------ */

/* Whether the weak reference `ref` still leads to `m`. */
static int refers_to(PyObject *ref, PyObject *m)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *obj = NULL;
    if (PyWeakref_GetRef(ref, &obj) < 0) {
        PyErr_Clear();
        return 0;
    }
    Py_XDECREF(obj); /* only its address is compared */
    return obj == m;
#else
    return PyWeakref_GetObject(ref) == m;
#endif
}

/* mods index of a live module seen before, or -1. */
static long lookup(PyObject *m)
{
    long idx = (long)(uintptr_t)mh__addrmap_get(&H.table, (uintptr_t)m) - 1;
    return idx >= 0 && refers_to(H.mods[idx].ref, m) ? idx : -1;
}

static void mod_release(struct mod *md)
{
    Py_CLEAR(md->ref);
    Py_CLEAR(md->path);
    mh__gscope_free(md->bwd);
    md->bwd = NULL;
}

/* Adds (or renews: a new module at a dead one's address) one module. */
static int add(PyObject *m, PyObject *path, uint32_t sid, int root)
{
    Py_ssize_t len = 0;
    const char *s = PyUnicode_AsUTF8AndSize(path, &len);
    if (!s)
        return -1;
    struct mod md = {.sid = sid, .root = root, .parent = -1};
    md.ref = PyWeakref_NewRef(m, NULL);
    md.bwd = mh__gscope_new(s, (size_t)len, sid, root);
    md.path = Py_NewRef(path);
    if (!md.ref || !md.bwd) {
        mod_release(&md);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    size_t known = (uintptr_t)mh__addrmap_get(&H.table, (uintptr_t)m);
    if (known) { /* the same address: the module there before is gone */
        mod_release(&H.mods[known - 1]);
        H.mods[known - 1] = md;
        return 0;
    }
    if (H.nmods == H.capmods) {
        size_t cap = H.capmods ? 2 * H.capmods : 256;
        struct mod *mods = realloc(H.mods, cap * sizeof *mods);
        if (!mods) {
            mod_release(&md);
            PyErr_NoMemory();
            return -1;
        }
        H.mods = mods;
        H.capmods = cap;
    }
    if (mh__addrmap_put(&H.table, (uintptr_t)m, (void *)(uintptr_t)(H.nmods + 1)) != 0) {
        mod_release(&md);
        PyErr_NoMemory();
        return -1;
    }
    H.mods[H.nmods++] = md;
    return 0;
}

/* Names a module seen for the first time, or named again (Python's name
 * callable): under the open scope when it is outside every root's tree. */
static long name_module(PyObject *m)
{
    long top = fw.n ? (long)(fw.mod[fw.n - 1] & ~AGAIN) : -1;
    PyObject *parent = Py_NewRef(top >= 0 ? H.mods[top].path : Py_None);
    PyObject *list = PyObject_CallFunctionObjArgs(H.name, m, parent, NULL);
    Py_DECREF(parent);
    if (!list)
        return -1;
    Py_ssize_t n = PyList_Check(list) ? PyList_Size(list) : -1;
    int rc = n < 0 ? -1 : 0;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        PyObject *mod, *path;
        unsigned long sid;
        int root;
        if (!PyArg_ParseTuple(PyList_GetItem(list, i), "OUkp", &mod, &path, &sid, &root))
            rc = -1;
        else
            rc = add(mod, path, (uint32_t)sid, root);
    }
    Py_DECREF(list);
    if (rc < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "module names: a list of (module, path, id, is_root)");
        return -1;
    }
    long idx = lookup(m);
    if (idx < 0)
        PyErr_SetString(PyExc_RuntimeError, "a module was not named");
    else if (top >= 0)
        H.mods[idx].parent = top;
    return idx;
}

/* Whether module i, outside every root's tree, is called in another scope
 * than the one that named it (a graph module torch.compile shares between
 * blocks): its name follows the scope it is called in. */
static int named_elsewhere(long i)
{
    if (H.mods[i].parent < 0 || !fw.n)
        return 0;
    long top = (long)(fw.mod[fw.n - 1] & ~AGAIN);
    return top != i && top != H.mods[i].parent;
}

static void release_all(void)
{
    for (size_t i = 0; i < H.nmods; i++)
        mod_release(&H.mods[i]);
    free(H.mods);
    H.mods = NULL;
    H.nmods = H.capmods = 0;
    mh__addrmap_destroy(&H.table);
    Py_CLEAR(H.name);
    Py_CLEAR(H.root_forward);
    Py_CLEAR(H.failed);
    Py_CLEAR(H.tensor_type);
}

/* ---- failures: the hooks turn off, Python keeps the message ------------------ */

/* An error of the hooks' own Python (naming, tagging) turns them off and is
 * never raised into the program; KeyboardInterrupt and SystemExit (a Ctrl-C
 * or an exit that arrived while that Python ran) are the program's and go on
 * to it, the hooks staying on. */
static PyObject *fail(void)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return NULL;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *msg = value ? PyObject_Str(value) : NULL;
    if (!msg) {
        PyErr_Clear();
        msg = PyUnicode_FromString(type ? "error" : "unknown error");
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    H.on = 0;
    PyObject *failed = H.failed ? Py_NewRef(H.failed) : NULL; /* it may release the hooks */
    if (msg && failed) {
        PyObject *r = PyObject_CallFunctionObjArgs(failed, msg, NULL);
        Py_XDECREF(r);
    }
    Py_XDECREF(failed);
    Py_XDECREF(msg);
    PyErr_Clear(); /* never raised into the program */
    Py_RETURN_NONE;
}

/* ---- forward ----------------------------------------------------------------- */

static void emit(int enter, uint32_t mod, unsigned phase, uint32_t tid)
{
    mh_recorder_scope(H.rec, enter, H.mods[mod].sid, phase, tid);
}

static void thread_stack(void)
{
    if (fw.gen != H.gen) { /* first call of this set on this thread */
        fw.gen = H.gen;
        fw.n = fw.over = 0;
    }
}

/* The root's forward begins: what a forward that raised left open closes,
 * and Python tags the root's parameters (and opens step 0). */
static int root_begins(PyObject *m)
{
    while (fw.n) {
        uint32_t e = fw.mod[--fw.n];
        if (!(e & AGAIN))
            emit(0, e, MH_PHASE_FORWARD, 0);
    }
    fw.over = 0;
    PyObject *r = PyObject_CallFunctionObjArgs(H.root_forward, m, NULL);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* Module i's forward, starting inside the innermost open scope, belongs to
 * it: the same module again (a wrapper's or super().forward, seen where
 * frames are monitored), or another module with the same path (the module a
 * wrapper holds, whose path leaves the wrapper's attribute out: FSDP's
 * _fsdp_wrapped_module, torch.compile's _orig_mod). */
static int is_open_again(long i, uintptr_t frame)
{
    uint32_t top = fw.mod[fw.n - 1] & ~AGAIN;
    return (top == (uint32_t)i && frame) ||
           (top != (uint32_t)i && H.mods[top].sid == H.mods[i].sid);
}

PyObject *mh__scope_enter(PyObject *m, uintptr_t frame)
{
    if (!H.on)
        Py_RETURN_NONE;
    thread_stack();
    long i = lookup(m);
    if (i < 0 && !fw.n && mh__gscope_in_backward()) {
        /* a module backward runs that no forward called (the graph module
         * of a compiled backward): not a root, and no scope of its own */
        fw.over += !frame;
        Py_RETURN_NONE;
    }
    if ((i < 0 || named_elsewhere(i)) && (i = name_module(m)) < 0)
        return fail();
    uint32_t again = fw.n && is_open_again(i, frame) ? AGAIN : 0;
    if (H.mods[i].root && !again) {
        if (root_begins(m) < 0)
            return fail();
        if (!H.on)
            Py_RETURN_NONE;
    }
    if (fw.n == DEPTH) {
        fw.over += !frame; /* the monitored frames are told apart by their frame */
        Py_RETURN_NONE;
    }
    fw.frame[fw.n] = frame;
    fw.seq[fw.n] = mh__gscope_seq_now();
    fw.mod[fw.n++] = (uint32_t)i | again;
    if (!again)
        emit(1, (uint32_t)i, MH_PHASE_FORWARD, 0);
    Py_RETURN_NONE;
}

/* The stack entry `frame` opened + 1, or 0: none (its start was not a
 * module's, or came before these hooks). */
static uint32_t opened_by(uintptr_t frame)
{
    uint32_t k = fw.n;
    while (k && fw.frame[k - 1] != frame)
        k--;
    return k;
}

/* Closes the open scopes above stack entry k - 1 (frames that ended by an
 * exception unseen); true where entry k - 1 is a module's outermost. */
static int close_down_to(uint32_t k)
{
    while (fw.n > k) {
        uint32_t e = fw.mod[--fw.n];
        if (!(e & AGAIN))
            emit(0, e, MH_PHASE_FORWARD, 0);
    }
    uint32_t e = fw.mod[--fw.n];
    if (!(e & AGAIN))
        emit(0, e, MH_PHASE_FORWARD, 0);
    return !(e & AGAIN);
}

PyObject *mh__scope_exit(PyObject *output, uintptr_t frame)
{
    if (!H.on)
        Py_RETURN_NONE;
    thread_stack();
    if (!frame && fw.over) {
        fw.over--;
        Py_RETURN_NONE;
    }
    uint32_t k = frame ? opened_by(frame) : fw.n;
    if (!k)
        Py_RETURN_NONE;
    uint32_t mod = fw.mod[k - 1] & ~AGAIN;
    uint64_t since = fw.seq[k - 1];
    if (close_down_to(k) && output &&
        mh__gscope_attach(output, H.tensor_type, H.mods[mod].bwd, since) < 0)
        return fail();
    Py_RETURN_NONE;
}

PyObject *mh__scope_unwind(uintptr_t frame)
{
    if (!H.on)
        Py_RETURN_NONE;
    thread_stack();
    uint32_t k = opened_by(frame);
    if (k)
        close_down_to(k);
    Py_RETURN_NONE;
}

int mh__scope_active(void)
{
    return H.on;
}

int mh__scope_any_open(void)
{
    return H.on && fw.gen == H.gen && fw.n > 0;
}

static PyObject *pre(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    return n < 1 ? Py_NewRef(Py_None) : mh__scope_enter(a[0], 0);
}

static PyObject *post(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    return n < 3 ? Py_NewRef(Py_None) : mh__scope_exit(a[2], 0);
}

static PyMethodDef pre_def = {"memhist_scope_pre", (PyCFunction)(void (*)(void))pre, METH_FASTCALL,
                              "memhist: opens a module's forward scope"};
static PyMethodDef post_def = {"memhist_scope_post", (PyCFunction)(void (*)(void))post,
                               METH_FASTCALL, "memhist: closes a module's forward scope"};

/* ---- the set of hooks ------------------------------------------------------------ */

void mh_scopehook_close_backward(void)
{
    mh__gscope_close_all();
}

void mh_scopehook_off(void)
{
    H.on = 0;
    mh__gscope_stop();
}

void mh_scopehook_release(void)
{
    mh_scopehook_off();
    mh_scopehook_call_stop();
    release_all();
    mh__scopemon_release();
    mh__tensortag_start(NULL);
    H.rec = NULL;
}

PyObject *mh_scopehook_open(struct mh_recorder *rec, PyObject *name, PyObject *root_forward,
                            PyObject *failed, PyObject *tensor_type)
{
    mh_scopehook_release();
    if (!rec || !PyCallable_Check(name) || !PyCallable_Check(root_forward) ||
        !PyCallable_Check(failed) || !PyType_Check(tensor_type)) {
        PyErr_SetString(PyExc_TypeError,
                        "mh_scopehook_open: a recorder, three callables and a type");
        return NULL;
    }
    H.tensor_type = Py_NewRef(tensor_type);
    mh__tensortag_start(tensor_type);
    H.rec = rec;
    H.name = Py_NewRef(name);
    H.root_forward = Py_NewRef(root_forward);
    H.failed = Py_NewRef(failed);
    H.gen++;
    PyObject *p = PyCFunction_New(&pre_def, NULL), *q = PyCFunction_New(&post_def, NULL);
    PyObject *t = p && q ? PyTuple_Pack(2, p, q) : NULL;
    Py_XDECREF(p);
    Py_XDECREF(q);
    if (t) {
        H.on = 1;
        mh__gscope_start(rec);
    }
    return t;
}
