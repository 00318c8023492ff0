/* scopehook.c - torch's module forward hooks and the backward pre-hooks on
 * autograd nodes, in C: the per-call path of module scopes
 * (src/python/memhist/_scopes.py installs them, scopehook.h).
 *
 * Data flow: torch calls the forward pre hook for every module call; it maps
 * the module object to its scope (path, string id) with one probe of an
 * address table (Python names a module on first sight only), pushes it on
 * the calling thread's stack and emits the scope event itself
 * (mh_recorder_scope, annotate.c). The post hook pops it, emits the exit
 * and puts the module's backward pre-hook (one C callable per module, made
 * once) on the grad_fn of the output; when autograd reaches that node, the
 * module's backward scope opens on the autograd thread and the scopes that
 * are not its ancestors close. Every hook runs with the GIL held, which
 * guards the tables; nothing here blocks or allocates on the common path. */
#include "scopehook.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/event.h"
#include "memhist/recorder.h"

#define DEPTH 256      /* module nesting kept per thread; deeper calls are counted only */
#define BWD_THREADS 64 /* autograd threads with backward scopes open */

struct mod {         /* a module seen by the hooks */
    PyObject *ref;   /* weak reference to it: the table never keeps a model alive */
    PyObject *bwd;   /* its backward pre-hook, made on first use */
    char *path;      /* "transformer.h.3.mlp" (a root: its class name), UTF-8 */
    size_t len;
    uint32_t sid;    /* the path's string id in the recording */
    int root;
};

struct bwd_open {    /* backward scopes open on one autograd thread */
    uint32_t tid;
    uint32_t n;
    uint32_t mod[DEPTH];
};

static struct {
    struct mh_recorder *rec;
    PyObject *name, *root_forward, *compiling, *failed, *register_prehook;
    struct mod *mods;
    size_t nmods, capmods;
    uintptr_t *keys;   /* module address -> mods index + 1 (open addressing) */
    uint32_t *vals;
    size_t cap;
    int on;
    uint32_t gen;      /* which set of hooks: stale thread stacks and hooks are told apart */
    struct bwd_open bwd[BWD_THREADS];
    size_t nbwd;
} H;

static _Thread_local struct {
    uint32_t gen, n, over;
    uint32_t mod[DEPTH];
} fw;

/* ---- the module table ------------------------------------------------------ */

static size_t slot_of(uintptr_t key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 32) & (H.cap - 1);
    while (H.keys[i] && H.keys[i] != key)
        i = (i + 1) & (H.cap - 1);
    return i;
}

/* mods index of a live module seen before, or -1. */
static long lookup(PyObject *m)
{
    if (!H.cap)
        return -1;
    size_t i = slot_of((uintptr_t)m);
    if (!H.keys[i])
        return -1;
    long idx = (long)H.vals[i] - 1;
    return PyWeakref_GetObject(H.mods[idx].ref) == m ? idx : -1;
}

static int grow(void)
{
    size_t cap = H.cap ? 2 * H.cap : 1024;
    uintptr_t *keys = calloc(cap, sizeof *keys);
    uint32_t *vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        PyErr_NoMemory();
        return -1;
    }
    uintptr_t *ok = H.keys;
    uint32_t *ov = H.vals;
    size_t ocap = H.cap;
    H.keys = keys;
    H.vals = vals;
    H.cap = cap;
    for (size_t i = 0; i < ocap; i++)
        if (ok[i]) {
            size_t s = slot_of(ok[i]);
            H.keys[s] = ok[i];
            H.vals[s] = ov[i];
        }
    free(ok);
    free(ov);
    return 0;
}

static void mod_release(struct mod *md)
{
    Py_CLEAR(md->ref);
    Py_CLEAR(md->bwd);
    free(md->path);
    md->path = NULL;
}

/* Adds (or renews: a new module at a dead one's address) one module. */
static int add(PyObject *m, PyObject *path, uint32_t sid, int root)
{
    if ((H.nmods + 1) * 2 > H.cap && grow() < 0)
        return -1;
    Py_ssize_t len = 0;
    const char *s = PyUnicode_AsUTF8AndSize(path, &len);
    if (!s)
        return -1;
    struct mod md = {.sid = sid, .root = root, .len = (size_t)len};
    md.ref = PyWeakref_NewRef(m, NULL);
    md.path = malloc((size_t)len + 1);
    if (!md.ref || !md.path) {
        Py_XDECREF(md.ref);
        free(md.path);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    memcpy(md.path, s, (size_t)len + 1);
    size_t i = slot_of((uintptr_t)m);
    if (H.keys[i]) { /* the same address: the module there before is gone */
        mod_release(&H.mods[H.vals[i] - 1]);
        H.mods[H.vals[i] - 1] = md;
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
    H.mods[H.nmods++] = md;
    H.keys[i] = (uintptr_t)m;
    H.vals[i] = (uint32_t)H.nmods;
    return 0;
}

/* Names a module seen for the first time (Python's name callable). */
static long name_module(PyObject *m)
{
    PyObject *parent = fw.n ? PyUnicode_FromString(H.mods[fw.mod[fw.n - 1]].path) : Py_None;
    if (!parent)
        return -1;
    if (parent == Py_None)
        Py_INCREF(parent);
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
    return idx;
}

static void release_all(void)
{
    for (size_t i = 0; i < H.nmods; i++)
        mod_release(&H.mods[i]);
    free(H.mods);
    free(H.keys);
    free(H.vals);
    H.mods = NULL;
    H.keys = NULL;
    H.vals = NULL;
    H.nmods = H.capmods = H.cap = 0;
    H.nbwd = 0;
    Py_CLEAR(H.name);
    Py_CLEAR(H.root_forward);
    Py_CLEAR(H.compiling);
    Py_CLEAR(H.failed);
    Py_CLEAR(H.register_prehook);
}

/* ---- failures: the hooks turn off, Python keeps the message ------------------ */

static PyObject *fail(void)
{
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

/* 1 while torch.compile traces (the hooks stay out of the graph), 0 if not, -1 failed. */
static int compiling(void)
{
    PyObject *r = PyObject_CallNoArgs(H.compiling);
    if (!r)
        return -1;
    int yes = PyObject_IsTrue(r);
    Py_DECREF(r);
    return yes;
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

static PyObject *pre(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    if (!H.on || n < 1)
        Py_RETURN_NONE;
    int c = compiling();
    if (c != 0)
        return c < 0 ? fail() : Py_NewRef(Py_None);
    thread_stack();
    long i = lookup(a[0]);
    if (i < 0 && (i = name_module(a[0])) < 0)
        return fail();
    if (H.mods[i].root) {
        while (fw.n) /* a forward that raised left scopes open */
            emit(0, fw.mod[--fw.n], MH_PHASE_FORWARD, 0);
        fw.over = 0;
        PyObject *r = PyObject_CallFunctionObjArgs(H.root_forward, a[0], NULL);
        if (!r)
            return fail();
        Py_DECREF(r);
        if (!H.on)
            Py_RETURN_NONE;
    }
    if (fw.n == DEPTH) {
        fw.over++;
        Py_RETURN_NONE;
    }
    fw.mod[fw.n++] = (uint32_t)i;
    emit(1, (uint32_t)i, MH_PHASE_FORWARD, 0);
    Py_RETURN_NONE;
}

/* grad_fn of the output, or of the first tensor in a tuple or list that has
 * one; a new reference or NULL (no exception). */
static PyObject *grad_fn(PyObject *out)
{
    PyObject *fn = PyObject_GetAttrString(out, "grad_fn");
    if (!fn) {
        PyErr_Clear();
    } else if (fn == Py_None) {
        Py_CLEAR(fn);
    }
    if (fn || !(PyTuple_Check(out) || PyList_Check(out)))
        return fn;
    Py_ssize_t n = PySequence_Size(out);
    for (Py_ssize_t i = 0; i < n && !fn; i++) {
        PyObject *o = PySequence_GetItem(out, i);
        fn = o ? PyObject_GetAttrString(o, "grad_fn") : NULL;
        Py_XDECREF(o);
        if (!fn)
            PyErr_Clear();
        else if (fn == Py_None)
            Py_CLEAR(fn);
    }
    return fn;
}

static PyObject *bwd_hook(uint32_t mod);

static PyObject *post(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    if (!H.on || n < 3)
        Py_RETURN_NONE;
    int c = compiling();
    if (c != 0)
        return c < 0 ? fail() : Py_NewRef(Py_None);
    thread_stack();
    if (fw.over) {
        fw.over--;
        Py_RETURN_NONE;
    }
    if (!fw.n)
        Py_RETURN_NONE;
    uint32_t i = fw.mod[--fw.n];
    emit(0, i, MH_PHASE_FORWARD, 0);
    PyObject *fn = grad_fn(a[2]);
    if (!fn)
        Py_RETURN_NONE;
    PyObject *hook = bwd_hook(i);
    PyObject *r = hook ? PyObject_CallMethodObjArgs(fn, H.register_prehook, hook, NULL) : NULL;
    Py_DECREF(fn);
    if (!r)
        return fail();
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* ---- backward ---------------------------------------------------------------- */

/* `in` is a submodule of `outer` (every module is within its root). */
static int within(uint32_t in, uint32_t outer)
{
    const struct mod *p = &H.mods[in], *o = &H.mods[outer];
    if (p->len == o->len && memcmp(p->path, o->path, p->len) == 0)
        return 0;
    return o->root || (p->len > o->len && p->path[o->len] == '.' && memcmp(p->path, o->path, o->len) == 0);
}

static struct bwd_open *bwd_thread(uint32_t tid)
{
    for (size_t i = 0; i < H.nbwd; i++)
        if (H.bwd[i].tid == tid)
            return &H.bwd[i];
    if (H.nbwd == BWD_THREADS)
        return NULL;
    struct bwd_open *b = &H.bwd[H.nbwd++];
    b->tid = tid;
    b->n = 0;
    return b;
}

/* Autograd reached the node of module `mod`'s output on this thread. */
static void bwd_enter(uint32_t mod)
{
    uint32_t tid = mh_thread_id();
    struct bwd_open *b = bwd_thread(tid);
    if (!b)
        return;
    uint32_t inner[DEPTH], ninner = 0; /* a submodule sharing this output's grad_fn opened first */
    while (b->n && within(b->mod[b->n - 1], mod))
        inner[ninner++] = b->mod[--b->n];
    while (b->n && !within(mod, b->mod[b->n - 1]))
        emit(0, b->mod[--b->n], MH_PHASE_BACKWARD, tid);
    if (b->n == DEPTH)
        return;
    b->mod[b->n++] = mod;
    for (uint32_t k = ninner; k > 0 && b->n < DEPTH; k--)
        b->mod[b->n++] = inner[k - 1];
    if (!ninner)
        emit(1, mod, MH_PHASE_BACKWARD, tid);
}

static PyObject *bwd(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    unsigned long long key = PyLong_AsUnsignedLongLong(self);
    if (key == (unsigned long long)-1 && PyErr_Occurred())
        return fail();
    if (H.on && (uint32_t)(key >> 32) == H.gen && (key & 0xffffffffu) < H.nmods)
        bwd_enter((uint32_t)key);
    Py_RETURN_NONE;
}

static PyMethodDef pre_def = {"memhist_scope_pre", (PyCFunction)(void (*)(void))pre, METH_FASTCALL,
                              "memhist: opens a module's forward scope"};
static PyMethodDef post_def = {"memhist_scope_post", (PyCFunction)(void (*)(void))post, METH_FASTCALL,
                               "memhist: closes a module's forward scope"};
static PyMethodDef bwd_def = {"memhist_scope_backward", (PyCFunction)(void (*)(void))bwd, METH_FASTCALL,
                              "memhist: opens a module's backward scope"};

/* The backward pre-hook of module `mod` (a borrowed reference), or NULL. */
static PyObject *bwd_hook(uint32_t mod)
{
    struct mod *md = &H.mods[mod];
    if (md->bwd)
        return md->bwd;
    PyObject *key = PyLong_FromUnsignedLongLong(((unsigned long long)H.gen << 32) | mod);
    md->bwd = key ? PyCFunction_New(&bwd_def, key) : NULL;
    Py_XDECREF(key);
    return md->bwd;
}

void mh_scopehook_close_backward(void)
{
    for (size_t i = 0; i < H.nbwd; i++) {
        struct bwd_open *b = &H.bwd[i];
        while (b->n)
            emit(0, b->mod[--b->n], MH_PHASE_BACKWARD, b->tid);
    }
}

/* ---- the set of hooks ------------------------------------------------------------ */

void mh_scopehook_off(void)
{
    H.on = 0;
}

void mh_scopehook_release(void)
{
    H.on = 0;
    release_all();
    H.rec = NULL;
}

PyObject *mh_scopehook_open(struct mh_recorder *rec, PyObject *name, PyObject *root_forward,
                            PyObject *compiling_fn, PyObject *failed)
{
    mh_scopehook_release();
    if (!rec || !PyCallable_Check(name) || !PyCallable_Check(root_forward) ||
        !PyCallable_Check(compiling_fn) || !PyCallable_Check(failed)) {
        PyErr_SetString(PyExc_TypeError, "mh_scopehook_open: a recorder and four callables");
        return NULL;
    }
    H.register_prehook = PyUnicode_InternFromString("register_prehook");
    if (!H.register_prehook || grow() < 0)
        return NULL;
    H.rec = rec;
    H.name = Py_NewRef(name);
    H.root_forward = Py_NewRef(root_forward);
    H.compiling = Py_NewRef(compiling_fn);
    H.failed = Py_NewRef(failed);
    H.gen++;
    PyObject *p = PyCFunction_New(&pre_def, NULL), *q = PyCFunction_New(&post_def, NULL);
    PyObject *t = p && q ? PyTuple_Pack(2, p, q) : NULL;
    Py_XDECREF(p);
    Py_XDECREF(q);
    if (t)
        H.on = 1;
    return t;
}
