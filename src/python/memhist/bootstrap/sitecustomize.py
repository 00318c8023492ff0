"""memhist bootstrap: loaded at interpreter start-up under `memhist record`.

`memhist record` puts this directory first on PYTHONPATH, so Python imports
this file as `sitecustomize`. It runs any sitecustomize the environment had
before, then hands over to memhist._record, which waits for the program to
import torch and initialize CUDA. It never imports torch itself.
"""
import importlib
import os
import sys


def _warn(text):
    """A warning line in the tool's style, naming this process (and its rank)."""
    rank = os.environ.get("RANK", "").strip()
    who = ("rank %s (process %d)" % (rank, os.getpid()) if rank.isdigit()
           else "process %d" % os.getpid())
    sys.stderr.write("memhist: warning: %s: %s\n" % (who, text))


def _chain_previous_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    saved_path = list(sys.path)
    saved_module = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
        importlib.import_module("sitecustomize")
    except ImportError:
        pass
    except Exception as e:  # someone else's start-up code failed: report, go on
        _warn("the previous sitecustomize failed: %s" % e)
    finally:
        sys.path[:] = saved_path
        if saved_module is not None:
            sys.modules["sitecustomize"] = saved_module


_chain_previous_sitecustomize()
if os.environ.get("MEMHIST_RECORD_PATH"):
    try:
        from memhist import _record
        _record.install()
    except Exception as e:
        _warn("recording disabled: %s" % e)
