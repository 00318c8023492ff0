"""Stacks through an installed model library, as a transformers or diffusers
program makes them, and how report and oom name them.

Every allocation of such a program passes through the same line of the
script (`out = model(x)`), so naming a group by the script's frame would
give every row the same name. The groups must be named by the library's
innermost frame instead (the attention against the MLP), never by torch's
own modules or the standard library, and the report's frame lists must
still reach the script's own line past the library frames.

When the script calls torch directly (`opt.step()`), the script's line is
the same for every buffer the call allocates (Adam's two moments); the
report then shows torch's allocating frame above it, so the groups read
differently. Two groups that would print the same frames all the same (a
library line `down(act(gate(x)) * up(x))`: SiLU against the product) show
what allocated above them: torch's Python frame, else the ATen operation of
the C++ frames.
"""
import json
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402

MiB = 1 << 20
SITE = "/venv/lib/python3.12/site-packages/"
TORCH_LINEAR = sc.frame("forward", SITE + "torch/nn/modules/linear.py", 125)
CALL_IMPL = sc.frame("_call_impl", SITE + "torch/nn/modules/module.py", 1775)
WRAPPER = sc.frame("inner", "/usr/lib/python3.12/contextlib.py", 81)


def library_stack(leaf, line):
    """A stack through seven library frames down to the script's line 9."""
    frames = [TORCH_LINEAR, CALL_IMPL, sc.frame("forward", SITE + "mylib/models/" + leaf, line)]
    for depth in range(6):
        frames += [CALL_IMPL, sc.frame("forward", SITE + "mylib/models/block%d.py" % depth,
                                       100 + depth)]
    return frames + [WRAPPER, sc.frame("<module>", "/home/me/train.py", 9)]


def snapshot():
    g = sc.Gen(metadata=False)
    g.stacks = [library_stack("attention.py", 42), library_stack("mlp.py", 77)]
    for _ in range(3):
        g.alloc(0, 24 * MiB, stack=0)
    g.alloc(0, 12 * MiB, stack=1)
    return g.snapshot()


def adam_stack(line):
    """Adam's state allocated under the script's `opt.step()` on line 15."""
    return [sc.frame("_init_group", SITE + "torch/optim/adam.py", line),
            sc.frame("step", SITE + "torch/optim/adam.py", 239),
            sc.frame("wrapper", SITE + "torch/optim/optimizer.py", 567),
            sc.frame("<module>", "/home/me/train.py", 15)]


def imported(d, name, stacks):
    """A snapshot of two blocks (8 and 6 MiB) made by the two stacks, imported:
    the .memhist path."""
    g = sc.Gen(metadata=False)
    g.stacks = stacks
    g.alloc(0, 8 * MiB, stack=0)
    g.alloc(0, 6 * MiB, stack=1)
    src = os.path.join(d, name + ".pickle")
    with open(src, "wb") as f:
        pickle.dump(g.snapshot(), f, protocol=4)
    mh = os.path.join(d, name + ".memhist")
    sc.run("import", src, "-o", mh)
    return mh


def report_shows(mh, wanted):
    """The report of `mh`, failing unless it shows every text of `wanted`."""
    report = sc.run("report", mh).stdout
    for want in wanted:
        if want not in report:
            sc.fail("report does not show %r:\n%s" % (want, report))
    return report


def check_direct_torch_calls(d):
    mh = imported(d, "adam", [adam_stack(179), adam_stack(183)])
    report = report_shows(mh, ("optim/adam.py:179 _init_group", "optim/adam.py:183 _init_group",
                               "/home/me/train.py:15 <module>"))
    if "optimizer.py" in report:
        sc.fail("report shows torch's frames between the allocation and the script:\n%s" % report)


def mlp_stack(inner):
    """A stack through a library's MLP line, `inner` the framework frames below it."""
    return inner + [sc.frame("forward", SITE + "mylib/models/mlp.py", 216), CALL_IMPL,
                    sc.frame("<module>", "/home/me/train.py", 9)]


def check_same_looking_groups(d):
    mul = [sc.frame("at::_ops::mul_Tensor::call(at::Tensor const&, at::Tensor const&)", "??", 0),
           sc.frame("torch::autograd::THPVariable_mul(_object*, _object*, _object*)",
                    "python_variable_methods.cpp", 0)]
    silu = [sc.frame("at::_ops::silu::call(at::Tensor const&)", "??", 0),
            sc.frame("silu", SITE + "torch/nn/functional.py", 2072)]
    mh = imported(d, "mlp", [mlp_stack(mul), mlp_stack(silu)])
    report_shows(mh, ("aten op mul_Tensor", "nn/functional.py:2072 silu",
                      "mylib/models/mlp.py:216 forward"))


def check_oom_rows_by_label(d):
    """`oom`'s rows by stack: stacks that differ only in the callers of one
    line share its label, and are one row with their bytes summed."""
    mh = imported(d, "callers", [[sc.frame("step", "/home/me/train.py", 30),
                                  sc.frame("main", "/home/me/train.py", line)] for line in (50, 60)])
    oom = sc.run("oom", "--at", "peak", mh).stdout
    rows = [line for line in oom.split("by stack:")[-1].splitlines() if "train.py:30 step" in line]
    if len(rows) != 1 or "14.00 MiB" not in rows[0]:
        sc.fail("oom's rows for one line are not one row of 14.00 MiB: %s\n%s" % (rows, oom))


def main():
    d = sc.workdir("library_frames")
    src = os.path.join(d, "lib.pickle")
    with open(src, "wb") as f:
        pickle.dump(snapshot(), f, protocol=4)
    mh = os.path.join(d, "lib.memhist")
    sc.run("import", src, "-o", mh)

    report = sc.run("report", mh).stdout
    for want in ("attention.py:42 forward", "mlp.py:77 forward", "/home/me/train.py:9 <module>"):
        if want not in report:
            sc.fail("report does not show %r:\n%s" % (want, report))
    if "linear.py" in report or "contextlib.py" in report:
        sc.fail("report shows torch's or the standard library's frames:\n%s" % report)

    oom = sc.run("oom", "--at", "peak", mh).stdout
    rows = [line.strip() for line in oom.splitlines() if line.strip().endswith(" forward")]
    if not any("models/attention.py:42" in r for r in rows) or \
            not any("models/mlp.py:77" in r for r in rows):
        sc.fail("oom's groups by stack are not named by the library's frames:\n%s" % oom)

    # no steps and no module scopes: nothing is told to be activations, and
    # layers says so instead of "no saved activations"
    plan = json.loads(sc.run("layers", "--json", mh).stdout)["files"][0]["devices"][0]["plan"]
    if plan["none_because"] != "unknown_categories":
        sc.fail("layers on a snapshot with no steps gives %r" % plan["none_because"])

    js = json.loads(sc.run("report", "--json", mh).stdout)
    sites = json.dumps(js)
    if "attention.py" not in sites:
        sc.fail("report --json names no library frame: %s" % sites[:2000])
    check_direct_torch_calls(d)
    check_same_looking_groups(d)
    check_oom_rows_by_label(d)
    print("groups named by the library's frames, the script's line still listed, "
          "torch's allocating frame above the script's direct call: ok")


if __name__ == "__main__":
    main()
