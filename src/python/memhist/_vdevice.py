"""memhist._vdevice - the Python side of `memhist simulate -- COMMAND`.

Runs inside the simulated program (the bootstrap calls it when torch.cuda is
imported and MEMHIST_VDEVICE=1). On the virtual device tensor values are not
computed, so this module:
- turns cuDNN off when CUDA initializes (convolutions take torch's native
  path; scaled-dot-product attention skips its cuDNN backend), because the
  virtual device has no cuDNN;
- runs torch.distributed on gloo when the program asks for NCCL (or for the
  default backend), since NCCL needs real GPUs; DDP and FSDP accept CUDA
  tensors on gloo; DataParallel's broadcasts and reductions, which call
  NCCL directly, become copies between the virtual devices;
- warns once, on stderr, where results would mislead: torch.compile with the
  Inductor backend (needs the real driver; use backend="aot_eager"), CUDA
  graph capture (refused by the device), torch.linalg calls that need
  cuSOLVER, operations whose output size depends on tensor values
  (nonzero, masked_select, unique, boolean-mask indexing...), and the first
  CUDA tensor value the program reads to decide something (bool() of a
  tensor, Tensor.item()): a loop that waits for a value, such as
  generate() waiting for its end of sequence, may never stop here.
It never imports torch itself: it is handed the torch.cuda module.
"""
import functools
import importlib.abc
import importlib.util
import sys

from ._rank import who

_warned = set()


def warn(key, text):
    if key not in _warned:
        _warned.add(key)
        sys.stderr.write("memhist: warning: %s: %s\n" % (who(), text))


def _wrap(owner, name, key, text, when=None):
    fn = getattr(owner, name, None)
    if fn is None or getattr(fn, "_memhist_wrapped", False):
        return

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if when is None or when(args, kwargs):
            warn(key, text)
        return fn(*args, **kwargs)

    wrapper._memhist_wrapped = True
    try:
        setattr(owner, name, wrapper)
    except (AttributeError, TypeError):
        pass


def _on_cuda(args, kwargs):
    return any(getattr(a, "is_cuda", False) for a in args[:2])


def _inductor(args, kwargs):
    backend = kwargs.get("backend", "inductor")
    return backend == "inductor"


def _disable_cudnn():
    """cuDNN off, and kept off: the program (or torch.backends.cudnn.flags)
    turning it back on gets a warning instead of a cuDNN error later."""
    import torch
    set_enabled = torch._C._set_cudnn_enabled

    def keep_off(value):
        if value:
            warn("cudnn", "cuDNN stays off on the virtual device (it has no cuDNN); convolutions "
                 "use torch's native kernels, whose workspace differs from cuDNN's")
        set_enabled(False)

    keep_off(False)
    torch._C._set_cudnn_enabled = keep_off
    prop = type(torch.backends.cudnn).__dict__.get("enabled")  # a ContextProp
    if hasattr(prop, "setter"):
        prop.setter = keep_off
    try:
        torch.backends.cuda.enable_cudnn_sdp(False)
    except AttributeError:
        pass


def _install_warnings():
    import torch
    _wrap(torch, "compile", "compile",
          "torch.compile with Inductor needs a real GPU driver and will fail here; "
          "use backend=\"aot_eager\" to simulate the compiled program's eager memory", _inductor)
    graph_text = "CUDA graph capture is not supported on the virtual device (captured work is not replayed)"
    _wrap(torch.cuda, "graph", "graph", graph_text)
    _wrap(torch.cuda, "make_graphed_callables", "graph", graph_text)
    data_text = ("%s: its output size depends on tensor values, which the virtual device does not "
                 "compute; sizes (and so memory) after it may differ from a GPU run")
    for name in ("nonzero", "masked_select", "unique", "unique_consecutive", "multinomial", "argwhere"):
        _wrap(torch, name, "data:" + name, data_text % ("torch." + name), _on_cuda)
        _wrap(torch.Tensor, name, "data:" + name, data_text % ("Tensor." + name),
              lambda a, k: getattr(a[0], "is_cuda", False))
    value_text = ("%s reads a CUDA tensor's value, which the virtual device does not compute: a "
                  "decision on it can take another path than on a GPU, and a loop that waits for a "
                  "value (generate() waiting for its end of sequence, training until the loss is "
                  "low) may never stop; interrupt it (Ctrl-C): the recording keeps what ran")
    for name, what in (("__bool__", "testing a tensor (if/while on it)"), ("item", "Tensor.item()")):
        _wrap(torch.Tensor, name, "values", value_text % what, lambda a, k: getattr(a[0], "is_cuda", False))
    solver_text = ("torch.linalg.%s needs cuSOLVER, which the virtual device does not provide")
    for name in ("inv", "solve", "eigh", "eig", "svd", "qr", "cholesky", "lstsq", "det", "slogdet"):
        _wrap(torch.linalg, name, "linalg:" + name, solver_text % name, _on_cuda)


def _copies_instead_of_nccl():
    """DataParallel (torch.nn.parallel.comm) calls NCCL directly to broadcast
    parameters and to reduce gradients. Here its broadcast copies each bucket
    of flattened tensors to every device and hands back views of the copies,
    the buffers torch's own path without NCCL allocates, and reductions take
    torch's copy-and-add path."""
    import torch
    import torch.nn.parallel.comm as comm
    from torch import _utils
    if getattr(comm.broadcast_coalesced, "_memhist_wrapped", False):
        return

    def broadcast_coalesced(tensors, devices, buffer_size=10485760):
        warn("nccl-dp", "DataParallel's NCCL broadcast runs as copies between virtual devices (the "
             "same buffers; the memory of NCCL's own buffers is not simulated)")
        devices = [_utils._get_device_index(d) for d in devices]
        tensors = list(tensors)
        copies = [[] for _ in devices[1:]]
        for bucket in _utils._take_tensors(tensors, buffer_size):
            flat = None if bucket[0].is_sparse else _utils._flatten_dense_tensors(bucket)
            for out, device in zip(copies, devices[1:]):
                target = torch.device("cuda", device)
                if flat is None:
                    out.extend(t.to(target, non_blocking=True) for t in bucket)
                else:
                    out.extend(_utils._unflatten_dense_tensors(flat.to(target, non_blocking=True), bucket))
        return [tensors] + [_utils._reorder_tensors_as(out, tensors) for out in copies]

    broadcast_coalesced._memhist_wrapped = True
    comm.broadcast_coalesced = broadcast_coalesced
    torch.cuda.nccl.is_available = lambda tensors: False


def _gloo_instead_of_nccl(c10d):
    init = c10d.init_process_group
    if getattr(init, "_memhist_wrapped", False):
        return

    @functools.wraps(init)
    def init_process_group(*args, **kwargs):
        backend = args[0] if args else kwargs.get("backend")
        if backend is None or "nccl" in str(backend).lower():
            warn("nccl", "NCCL needs real GPUs: torch.distributed runs on gloo instead (the "
                 "memory of NCCL's own buffers is not simulated)")
            args, kwargs = args[1:], dict(kwargs, backend="gloo")
        return init(*args, **kwargs)

    init_process_group._memhist_wrapped = True
    c10d.init_process_group = init_process_group


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs `then(module)` once the module `name` has been executed."""

    def __init__(self, name, then):
        self.name, self.then, self.loader = name, then, None

    def find_spec(self, name, path, target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            self.loader, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        try:
            self.then(module)
        except Exception as e:  # never break the program
            warn("hook:" + self.name, "could not adapt %s: %s" % (self.name, e))


def install(cuda_module):
    """Called with torch.cuda as soon as it is imported."""
    cuda_module._lazy_call(_disable_cudnn)
    cuda_module._lazy_call(_install_warnings)
    cuda_module._lazy_call(_copies_instead_of_nccl)
    c10d = "torch.distributed.distributed_c10d"
    if c10d in sys.modules:
        _gloo_instead_of_nccl(sys.modules[c10d])
    else:
        sys.meta_path.insert(0, _AfterImport(c10d, _gloo_instead_of_nccl))
