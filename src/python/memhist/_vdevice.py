"""memhist._vdevice - the Python side of `memhist simulate -- COMMAND`.

Runs inside the simulated program (the bootstrap calls it when torch.cuda is
imported and MEMHIST_VDEVICE=1). On the virtual device tensor values are not
computed, so this module:
- turns cuDNN off when CUDA initializes (convolutions take torch's native
  path; scaled-dot-product attention skips its cuDNN backend), because the
  virtual device has no cuDNN;
- warns once, on stderr, where results would mislead: torch.compile with the
  Inductor backend (needs the real driver; use backend="aot_eager"), CUDA
  graph capture (refused by the device), torch.linalg calls that need
  cuSOLVER, and operations whose output size depends on tensor values
  (nonzero, masked_select, unique, boolean-mask indexing...).
It never imports torch itself: it is handed the torch.cuda module.
"""
import functools
import sys

_warned = set()


def warn(key, text):
    if key not in _warned:
        _warned.add(key)
        sys.stderr.write("memhist: simulate: warning: %s\n" % text)


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
    import torch
    torch.backends.cudnn.enabled = False
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
    solver_text = ("torch.linalg.%s needs cuSOLVER, which the virtual device does not provide")
    for name in ("inv", "solve", "eigh", "eig", "svd", "qr", "cholesky", "lstsq", "det", "slogdet"):
        _wrap(torch.linalg, name, "linalg:" + name, solver_text % name, _on_cuda)


def install(cuda_module):
    """Called with torch.cuda as soon as it is imported."""
    cuda_module._lazy_call(_disable_cudnn)
    cuda_module._lazy_call(_install_warnings)
