/* scopegrad.cpp - backward module scopes from autograd, with no Python in
 * backward (part of libmemhist_pyhook, see scopegrad.h).
 *
 * Data flow: the forward post hook (scopehook.c) hands the module's output
 * here; the output's autograd node (grad_fn) gets a C++ pre-hook carrying
 * the module's scope, and the output tensors the call made are tagged as
 * the module's outputs (MH_ROLE_OUTPUT; not a root model's). When the
 * engine reaches that node, on its own thread and without the GIL, the
 * hook opens the module's backward scope on that thread and closes the open
 * scopes that are not its ancestors (nested modules returning one output
 * share one hook, which opens them outermost first), emitting the scope
 * events directly (mh_recorder_scope). The open scopes of every autograd
 * thread sit behind one mutex; the optimizer step or the next root
 * forward closes them (mh__gscope_close_all). */
#include "scopegrad.h"

#include <ATen/SequenceNumber.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/csrc/autograd/python_variable.h>

#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "memhist/event.h"
#include "memhist/recorder.h"

namespace
{

struct Scope {
    std::string path; /* "transformer.h.3.mlp"; a root: its class name */
    uint32_t sid;
    bool root;
};
using ScopeRef = std::shared_ptr<const Scope>;

struct Open {
    uint32_t tid;
    std::vector<ScopeRef> scopes; /* outermost first */
};

std::mutex mu;               /* guards everything below */
struct mh_recorder *rec_now; /* NULL: the hooks do nothing */
uint64_t gen_now;            /* which session a hook belongs to */
std::vector<Open> open_now;

/* `in` is a submodule of `outer` (every module is within its root). */
bool within(const Scope &in, const Scope &outer)
{
    if (in.path == outer.path)
        return false;
    return outer.root || (in.path.size() > outer.path.size() && in.path[outer.path.size()] == '.' &&
                          in.path.compare(0, outer.path.size(), outer.path) == 0);
}

void emit(int enter, const Scope &s, uint32_t tid)
{
    mh_recorder_scope(rec_now, enter, s.sid, MH_PHASE_BACKWARD, tid);
}

/* Opens scope `s` on this thread, closing the open scopes that are not its
 * ancestors. The lock is held. */
void enter_locked(const ScopeRef &s, uint32_t tid)
{
    Open *o = nullptr;
    for (auto &t : open_now)
        if (t.tid == tid)
            o = &t;
    if (!o) {
        open_now.push_back(Open{tid, {}});
        o = &open_now.back();
    }
    auto &v = o->scopes;
    while (!v.empty() && !within(*s, *v.back())) {
        emit(0, *v.back(), tid);
        v.pop_back();
    }
    v.push_back(s);
    emit(1, *s, tid);
}

/* The pre-hook on the autograd node of one call's output: the scopes of the
 * modules that returned it, innermost first (a block whose last layer's
 * output is its own shares that layer's node). Autograd reaching the node
 * opens them, outermost first, on the engine's thread. */
struct Hook final : torch::autograd::FunctionPreHook {
    std::vector<ScopeRef> scopes;
    uint64_t gen;
    Hook(ScopeRef s, uint64_t g) : scopes{std::move(s)}, gen(g)
    {
    }
    torch::autograd::variable_list operator()(const torch::autograd::variable_list &grads) override
    {
        std::lock_guard<std::mutex> lock(mu);
        if (rec_now && gen == gen_now) {
            uint32_t tid = mh_thread_id();
            for (auto it = scopes.rbegin(); it != scopes.rend(); ++it)
                enter_locked(*it, tid);
        }
        return grads;
    }
    /* under compiled autograd the hook is left out (the graph has no scopes) */
    void compiled_args(torch::dynamo::autograd::CompiledNodeArgs &) const override
    {
    }
};

/* Adds scope `s` to this session's hook on `node`, made on its first scope. */
void hook_node(torch::autograd::Node &node, const ScopeRef &s, uint64_t gen)
{
    for (auto &h : node.pre_hooks()) {
        auto *ours = dynamic_cast<Hook *>(h.get());
        if (ours && ours->gen == gen) {
            if (ours->scopes.back() != s)
                ours->scopes.push_back(s);
            return;
        }
    }
    node.add_pre_hook(std::make_unique<Hook>(s, gen));
}

/* What grad_fn() hands out: a shared_ptr in torch 2.11, an intrusive_ptr in
 * 2.15. */
using NodePtr = std::decay_t<decltype(std::declval<const at::Tensor &>().grad_fn())>;

/* The autograd node of a tensor if this thread made it at or after
 * sequence number `since`, or null: a module that returns a tensor it was
 * given (or one made under no_grad, as a graph module torch.compile runs
 * returns its inputs) hands out another module's node. */
const NodePtr *node_of(PyObject *o, PyTypeObject *tensor, uint64_t since)
{
    if (!PyObject_TypeCheck(o, tensor))
        return nullptr;
    const auto &fn = THPVariable_Unpack(o).grad_fn();
    return fn && fn->sequence_nr() >= since ? &fn : nullptr;
}

/* Tags the block of a module's output tensor `o` (a CUDA tensor made by
 * the module's call) with the module's path, so the analysis can tell what
 * leaves a layer from what its backward keeps inside it. A tensor torch
 * cannot give a storage address for (a wrapper subclass) is left out. */
void tag_output(struct mh_recorder *rec, PyObject *o, uint32_t sid)
try {
    if (!rec)
        return;
    const at::Tensor &t = THPVariable_Unpack(o);
    if (!t.is_cuda() || !t.has_storage())
        return;
    const void *data = t.storage().data();
    if (data)
        mh_recorder_tag(rec, t.get_device(), (uint64_t)(uintptr_t)data, MH_ROLE_OUTPUT, sid);
} catch (const std::exception &) {
}

} // namespace

struct mh__gscope {
    ScopeRef ref;
};

extern "C" {

struct mh__gscope *mh__gscope_new(const char *path, size_t len, uint32_t sid, int root)
{
    try {
        return new mh__gscope{
            std::make_shared<const Scope>(Scope{std::string(path, len), sid, root != 0})};
    } catch (...) {
        return nullptr;
    }
}

void mh__gscope_free(struct mh__gscope *s)
{
    delete s;
}

uint64_t mh__gscope_seq_now(void)
{
    return at::sequence_number::peek();
}

int mh__gscope_in_backward(void)
{
    return torch::autograd::get_current_graph_task_id() != -1;
}

int mh__gscope_attach(PyObject *out, PyObject *tensor_type, struct mh__gscope *s, uint64_t since)
{
    try {
        auto *type = reinterpret_cast<PyTypeObject *>(tensor_type);
        struct mh_recorder *rec;
        uint64_t gen;
        {
            std::lock_guard<std::mutex> lock(mu);
            gen = gen_now;
            rec = s->ref->root ? nullptr : rec_now; /* a model's own outputs are not tagged */
        }
        const NodePtr *fn = node_of(out, type, since);
        if (fn)
            tag_output(rec, out, s->ref->sid);
        else if (PyTuple_Check(out) || PyList_Check(out)) {
            Py_ssize_t n = PySequence_Fast_GET_SIZE(out);
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *item = PySequence_Fast_GET_ITEM(out, i);
                const NodePtr *f = node_of(item, type, since);
                if (!f)
                    continue;
                if (!fn)
                    fn = f;
                tag_output(rec, item, s->ref->sid);
            }
        }
        if (!fn)
            return 0;
        hook_node(**fn, s->ref, gen);
        return 1;
    } catch (const std::exception &e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "backward scope hook failed");
    }
    return -1;
}

void mh__gscope_start(struct mh_recorder *rec)
{
    std::lock_guard<std::mutex> lock(mu);
    rec_now = rec;
    gen_now++;
    open_now.clear();
}

void mh__gscope_stop(void)
{
    std::lock_guard<std::mutex> lock(mu);
    rec_now = nullptr;
    open_now.clear();
}

void mh__gscope_close_all(void)
{
    std::lock_guard<std::mutex> lock(mu);
    if (!rec_now)
        return;
    for (auto &o : open_now)
        while (!o.scopes.empty()) {
            emit(0, *o.scopes.back(), o.tid);
            o.scopes.pop_back();
        }
}

} // extern "C"
