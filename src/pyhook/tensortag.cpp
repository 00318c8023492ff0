/* tensortag.cpp - tensor roles for the optimizer and root-module hooks in C
 * (part of libmemhist_pyhook, see tensortag.h).
 *
 * Data flow: the package's hooks hand over the tensors of a role (a model's
 * parameters, the optimizer's parameters, their gradients, its state); each
 * CUDA tensor not tagged with that role at its present address is tagged
 * (mh_recorder_tag), one event each. An open-addressing table remembers
 * what was tagged, one slot per tensor, and one per parameter for its
 * gradient: a parameter's new gradient (every step, where the program sets
 * them to None) takes the slot of the one before, so the table does not
 * grow step by step. A slot holds a weak reference to the tagged tensor, so
 * it never keeps a tensor's memory alive and a tensor seen again is known
 * by address while the reference lives. A tensor subclass with no storage
 * (DTensor) passes the role to its inner tensors. Every call holds the GIL,
 * which guards the table. */
#include "tensortag.h"

#include <torch/csrc/autograd/python_variable.h>

#include <vector>

#include "memhist/event.h"
#include "memhist/recorder.h"

namespace
{

struct Slot {
    uintptr_t key = 0; /* TensorImpl address | 1 for its gradient; 0: empty */
    /* what was tagged (null: nothing); keeps its address from being reused */
    c10::weak_intrusive_ptr<c10::TensorImpl> ref{c10::intrusive_ptr<c10::TensorImpl>()};
    const void *data = nullptr; /* where it was when tagged */
    unsigned role = 0;
};

constexpr size_t MIN_SLOTS = 1024;
std::vector<Slot> table(MIN_SLOTS); /* a power of two, at most half full */
size_t used = 0;
PyTypeObject *tensor_type; /* torch._C.TensorBase */

size_t home(uintptr_t key, size_t mask)
{
    return (size_t)((key * 0x9E3779B97F4A7C15u) >> 32) & mask;
}

/* The slot of `key`, or the empty slot where it goes. */
Slot &probe(uintptr_t key)
{
    size_t mask = table.size() - 1;
    for (size_t i = home(key, mask);; i = (i + 1) & mask)
        if (table[i].key == key || table[i].key == 0)
            return table[i];
}

/* Rebuilds the table without the slots of tensors that are gone (a
 * replaced optimizer state, a model let go), at most a quarter full. */
void rebuild()
{
    std::vector<Slot> old(std::move(table));
    size_t live = 0;
    for (const Slot &s : old)
        live += s.key && !s.ref.expired();
    size_t n = MIN_SLOTS;
    while (n < 4 * live)
        n *= 2;
    table = std::vector<Slot>(n);
    used = 0;
    for (Slot &s : old)
        if (s.key && !s.ref.expired()) {
            probe(s.key) = std::move(s);
            used++;
        }
}

struct Call {
    struct mh_recorder *rec;
    unsigned role;
    bool grads;
    uint64_t devices = 0; /* bit d: a CUDA tensor on device d was seen */
};

/* Whether the slot of `key` already tags `impl` at `data` with this role. */
bool tagged_already(const Slot &s, uintptr_t key, const c10::TensorImpl *impl, const void *data,
                    unsigned role)
{
    return s.key == key && s.ref._unsafe_get_target() == impl && !s.ref.expired() &&
           s.role == role && s.data == data;
}

/* Remembers `t` (at `data`, with the call's role) in the slot of `key`. */
void remember(Call &c, uintptr_t key, const at::Tensor &t, const void *data)
{
    Slot *s = &probe(key);
    if (!s->key && 2 * (used + 1) > table.size()) {
        rebuild();
        s = &probe(key);
    }
    used += !s->key;
    s->key = key;
    s->ref = c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr());
    s->data = data;
    s->role = c.role;
}

void tag_tensor(Call &c, PyObject *obj, const at::Tensor &t, uintptr_t key, uint32_t sid,
                int depth);

/* A tensor subclass with no storage of its own (a wrapper whose storage
 * has no memory: DTensor, which FSDP2 and tensor parallelism make of
 * parameters, gradients and optimizer state) holds its memory in inner
 * tensors, named by `__tensor_flatten__`: those get the role. The wrapper
 * (`obj`, `t`) is remembered by its own address, so it is unwrapped once
 * while it lives. */
void tag_wrapper(Call &c, PyObject *obj, const at::Tensor &t, uintptr_t key, uint32_t sid,
                 int depth)
{
    const c10::TensorImpl *impl = t.unsafeGetTensorImpl();
    if (depth == 0 || tagged_already(probe(key), key, impl, impl, c.role))
        return;
    PyObject *flat = PyObject_CallMethod(obj, "__tensor_flatten__", nullptr);
    PyObject *names = flat && PyTuple_Check(flat) && PyTuple_GET_SIZE(flat) > 0
                          ? PyTuple_GET_ITEM(flat, 0)
                          : nullptr;
    for (Py_ssize_t i = 0; names && PyList_Check(names) && i < PyList_GET_SIZE(names); i++) {
        PyObject *inner = PyObject_GetAttr(obj, PyList_GET_ITEM(names, i));
        if (!inner) {
            PyErr_Clear();
            continue;
        }
        if (PyObject_TypeCheck(inner, tensor_type)) {
            const at::Tensor &it = THPVariable_Unpack(inner);
            tag_tensor(c, inner, it, (uintptr_t)it.unsafeGetTensorImpl(), sid, depth - 1);
        }
        Py_DECREF(inner);
    }
    PyErr_Clear(); /* no __tensor_flatten__, or not a tuple of names */
    Py_XDECREF(flat);
    remember(c, key, t, impl);
}

/* Whether `t` keeps its memory in inner tensors (see tag_wrapper). */
bool is_wrapper(const at::Tensor &t)
{
    const c10::TensorImpl *impl = t.unsafeGetTensorImpl();
    return !t.has_storage() ||
           (impl->is_python_dispatch() && !impl->unsafe_storage().unsafeGetStorageImpl()->data());
}

/* Tags `t` (Python object `obj`; null where none is at hand, which leaves a
 * wrapper out) under `key` unless it has this role already at its present
 * address; a tensor torch cannot give an address for is left out. */
void tag_tensor(Call &c, PyObject *obj, const at::Tensor &t, uintptr_t key, uint32_t sid, int depth)
{
    if (!t.defined() || !t.is_cuda())
        return;
    int device = t.get_device();
    if (device >= 0 && device < 64)
        c.devices |= 1ull << device;
    if (is_wrapper(t)) {
        if (obj)
            tag_wrapper(c, obj, t, key, sid, depth);
        return;
    }
    const void *data = t.const_data_ptr();
    if (!data || tagged_already(probe(key), key, t.unsafeGetTensorImpl(), data, c.role))
        return;
    remember(c, key, t, data);
    mh_recorder_tag(c.rec, device, (uint64_t)(uintptr_t)data, c.role, sid);
}

/* Tags tensor `o` (its .grad with `grads`); a parameter's gradient is
 * remembered under the parameter's address | 1. */
void tag_one(Call &c, PyObject *o, uint32_t sid)
try {
    const at::Tensor &given = THPVariable_Unpack(o);
    uintptr_t key = (uintptr_t)given.unsafeGetTensorImpl() | (c.grads ? 1 : 0);
    if (!c.grads) {
        tag_tensor(c, o, given, key, sid, 2);
        return;
    }
    const at::Tensor &grad = given.grad();
    if (!grad.defined() || !grad.is_cuda() || !is_wrapper(grad)) {
        tag_tensor(c, nullptr, grad, key, sid, 2);
        return;
    }
    PyObject *g = PyObject_GetAttrString(o, "grad");
    if (g && PyObject_TypeCheck(g, tensor_type))
        tag_tensor(c, g, grad, key, sid, 2);
    PyErr_Clear();
    Py_XDECREF(g);
} catch (const std::exception &) {
}

/* One item: a tensor, or a list, tuple or dict (its values) of items;
 * anything else is left out. */
void walk(Call &c, PyObject *o, uint32_t sid, int depth)
{
    if (PyObject_TypeCheck(o, tensor_type)) {
        tag_one(c, o, sid);
        return;
    }
    if (depth == 0)
        return;
    if (PyDict_Check(o)) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(o, &pos, &key, &value))
            walk(c, value, 0, depth - 1);
    } else if (PyList_Check(o) || PyTuple_Check(o)) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++)
            walk(c, PySequence_Fast_GET_ITEM(o, i), 0, depth - 1);
    }
}

/* The list's items, the i-th named by sids[i] where `sids` is a list. */
int walk_named(Call &c, PyObject *tensors, PyObject *sids)
{
    if (!PyList_Check(sids)) {
        walk(c, tensors, 0, 3);
        return 0;
    }
    if (!PyList_Check(tensors) || PyList_GET_SIZE(sids) != PyList_GET_SIZE(tensors)) {
        PyErr_SetString(PyExc_TypeError,
                        "mh_tensortag: names need a list of tensors of the same length");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tensors); i++) {
        unsigned long sid = PyLong_AsUnsignedLong(PyList_GET_ITEM(sids, i));
        if (sid == (unsigned long)-1 && PyErr_Occurred())
            return -1;
        walk(c, PyList_GET_ITEM(tensors, i), (uint32_t)sid, 0);
    }
    return 0;
}

} // namespace

extern "C" {

PyObject *mh_tensortag(struct mh_recorder *rec, PyObject *tensors, unsigned role, int grads,
                       PyObject *sids)
{
    if (!rec || role == MH_ROLE_NONE || role >= MH_ROLE_COUNT || !tensor_type) {
        PyErr_SetString(PyExc_ValueError, "mh_tensortag: a recorder, a tensor role and open hooks");
        return nullptr;
    }
    Call c{rec, role, grads != 0};
    try {
        if (walk_named(c, tensors, sids) < 0)
            return nullptr;
    } catch (const std::exception &e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
        return nullptr;
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "tagging tensors failed");
        return nullptr;
    }
    return PyLong_FromUnsignedLongLong(c.devices);
}

void mh__tensortag_start(PyObject *type)
{
    table = std::vector<Slot>(MIN_SLOTS);
    used = 0;
    Py_XINCREF(type);
    Py_XDECREF(reinterpret_cast<PyObject *>(tensor_type));
    tensor_type = reinterpret_cast<PyTypeObject *>(type);
}

size_t mh__tensortag_used(void)
{
    return used;
}

} // extern "C"
