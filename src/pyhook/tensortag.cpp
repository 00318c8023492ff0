/* tensortag.cpp - tensor roles for the optimizer and root-module hooks in C
 * (part of libmemhist_pyhook, see tensortag.h).
 *
 * Data flow: the package's hooks hand over the tensors of a role (a model's
 * parameters, the optimizer's parameters, their gradients, its state); each
 * CUDA tensor not tagged with that role at its present address is tagged
 * (mh_recorder_tag), one event each. A table keyed by the tensor's
 * TensorImpl remembers what was tagged; it holds weak references, so it
 * never keeps a tensor's memory alive, and a dead entry is dropped when the
 * table grows. Every call holds the GIL, which guards the table. */
#include "tensortag.h"

#include <torch/csrc/autograd/python_variable.h>

#include <unordered_map>

#include "memhist/event.h"
#include "memhist/recorder.h"

namespace
{

struct Tagged {
    c10::weak_intrusive_ptr<c10::TensorImpl> ref; /* keeps the address from being reused */
    const void *data;                             /* where it was when tagged */
    unsigned role;
};

std::unordered_map<const c10::TensorImpl *, Tagged> table;
size_t prune_at = 4096;
PyTypeObject *tensor_type; /* torch._C.TensorBase */

/* Drops the entries of tensors that are gone (old gradients). */
void prune()
{
    for (auto it = table.begin(); it != table.end();)
        it = it->second.ref.expired() ? table.erase(it) : std::next(it);
    prune_at = std::max<size_t>(4096, 2 * table.size());
}

struct Call {
    struct mh_recorder *rec;
    unsigned role;
    bool grads;
    uint64_t devices = 0; /* bit d: a CUDA tensor on device d was seen */
};

/* Tags one tensor (its .grad with `grads`) unless it has this role already;
 * a tensor torch cannot give an address for is left out. */
void tag_one(Call &c, const at::Tensor &given, uint32_t sid)
try {
    const at::Tensor &t = c.grads ? given.grad() : given;
    if (!t.defined() || !t.is_cuda() || !t.has_storage())
        return;
    int device = t.get_device();
    if (device >= 0 && device < 64)
        c.devices |= 1ull << device;
    const void *data = t.const_data_ptr();
    if (!data)
        return;
    const c10::TensorImpl *impl = t.unsafeGetTensorImpl();
    auto it = table.find(impl);
    if (it != table.end() && !it->second.ref.expired() && it->second.role == c.role &&
        it->second.data == data)
        return;
    Tagged now{c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr()), data, c.role};
    if (it != table.end())
        it->second = std::move(now);
    else
        table.emplace(impl, std::move(now));
    mh_recorder_tag(c.rec, device, (uint64_t)(uintptr_t)data, c.role, sid);
} catch (const std::exception &) {
}

/* One item: a tensor, or a list, tuple or dict (its values) of items;
 * anything else is left out. */
void walk(Call &c, PyObject *o, uint32_t sid, int depth)
{
    if (PyObject_TypeCheck(o, tensor_type)) {
        tag_one(c, THPVariable_Unpack(o), sid);
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
        if (table.size() > prune_at)
            prune();
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
    table.clear();
    prune_at = 4096;
    Py_XINCREF(type);
    Py_XDECREF(reinterpret_cast<PyObject *>(tensor_type));
    tensor_type = reinterpret_cast<PyTypeObject *>(type);
}

} // extern "C"
