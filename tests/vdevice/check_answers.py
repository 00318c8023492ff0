#!/usr/bin/env python3
"""check_answers.py - the answers on an unchanged program: records
tests/vdevice/gpt_train.py (a GPT-style training script with no memhist
calls) on the virtual CUDA device, where PyTorch's real caching allocator
runs, and checks memhist's answers against what torch says of the same run:

  categories  parameter, optimizer-state and (kept) gradient bytes at the
              peak equal torch's blocks holding those tensors; parameters
              also the sum of the tensors' sizes rounded up to 512 bytes;
              the categories sum to the live bytes; activations are there
  setup       the model's set-up before the first forward is its own period
              in the report, not step 0
  layers      `memhist layers` names the transformer blocks (module paths
              from module scopes) and proposes a checkpointing plan; with
              every block checkpointed already, it proposes none (what is
              left saves under 1 % of the peak)
  plan        checkpointing the first 1, 3 and all blocks of the plan's
              ranking (non-reentrant) gives a measured peak within 10 % of
              the estimate for that many
  plan_function  the same when forward and backward are a function's (the
              logits, freed by the program after backward, are not
              counted as saved, so no layer but the blocks is ranked)
  plan_named  the same with the blocks kept as numbered attributes
              (transformer.block1, ...; no ModuleList): each block is a
              layer, not each of its modules
  plan_method the same when a method of the model, never its forward, runs
              the blocks (as a LightningModule's training_step)
  plan_shared one block applied 6 times (shared weights): the estimate for
              checkpointing it (each call recomputed at its own backward)
              within 3 % of the measured peak; also with post-norm blocks
              (the block's output is its last LayerNorm's)
  plan_cnn    a ResNet-style network (resnet_train.py, bottleneck blocks
              ending in an in-place ReLU): the first 1, 3 and all layers of
              the plan give measured peaks within 3 % of the estimates
  names       allocations with no Python frame (autograd's thread in
              backward, its cuBLAS workspace) are named "torch internal:
              <op>" in report, layers and the snapshot, never "<no stack>"
  compiled    with torch.compile (aot_eager) on half the blocks, wrapped
              and in place (one graph module runs them all), those blocks
              are still named (module paths without the wrapper's
              _orig_mod), marked
              compiled (the others not), and their backward found: they
              save activations and the plan ranks every block; on the
              whole model, no plan is proposed, the compiled activations
              are marked and `layers` says why
  teacher     distillation from a teacher of the same class run first each
              step without gradients: the model's blocks and the teacher's
              get distinct names (the model's under its class name, as
              the second model with those paths), the plan ranks the
              model's blocks only, and the teacher's blocks save nothing
  closure     the forward and backward run in a closure given to
              opt.step(closure) (Lightning, LBFGS): the same categories at
              the peak as without one (activations within 2 %, gradients
              and optimizer state alike), the same steps and the same plan
  roles       with the model moved to the GPU and the optimizer stepped by
              a training library's wrapper (train_wrapper.py, as
              accelerate's), `layers` names the parameters and the
              optimizer state by their role, as without the wrapper, and
              never by the wrapper's source line: the same layers, the
              rows holding exactly the category's bytes, the same plan
  accumulate  with two micro-batches per optimizer step, the activations at
              the peak and the plan's saving match the run without
              accumulation (within 5 %), and checkpointing the plan's
              blocks gives a measured peak within 10 % of the estimate

    python tests/vdevice/check_answers.py CASE [WORKDIR]
    python tests/vdevice/check_answers.py --list

Environment: MEMHIST (the CLI; default build/memhist), MH_SOURCE_DIR.
Exits 0 when every check holds, 1 otherwise, 77 (skipped, with the reason)
without torch or the virtual device.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(HERE, "..", ".."))
MEMHIST = os.environ.get("MEMHIST", os.path.join(SRC, "build", "memhist"))
SCRIPT = os.path.join(SRC, "tests", "vdevice", "gpt_train.py")
LAYERS = 6
SKIP = 77
failures = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def rounded(n):
    return (n + 511) // 512 * 512


def record(work, name, args, env=None, script=SCRIPT):
    """Runs the script (gpt_train.py of LAYERS blocks, or another taking
    --truth) under `memhist simulate`; returns (file, torch's truth)."""
    path = os.path.join(work, name + ".memhist")
    truth = os.path.join(work, name + ".truth.json")
    cmd = [MEMHIST, "simulate", "--no-report", "-o", path, "--", sys.executable, script,
           "--truth", truth] + (["--layers", str(LAYERS)] if script == SCRIPT else []) + args
    p = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, **env) if env else None)
    if p.returncode != 0:
        print(p.stdout + p.stderr)
        if "virtual" in p.stderr and "not" in p.stderr:
            print("skipped: the virtual device is not available")
            sys.exit(SKIP)
        sys.exit("memhist simulate failed (%d)" % p.returncode)
    with open(truth) as f:
        return path, json.load(f)


def run_json(*args):
    p = subprocess.run([MEMHIST] + list(args), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("memhist %s failed: %s" % (args[0], p.stderr.strip()))
    return json.loads(p.stdout)


def case_categories(work):
    path, truth = record(work, "cat", ["--keep-grads"])
    dev = run_json("report", "--json", path)["files"][0]["devices"][0]
    cat = dev["category_at_peak"]
    params = sum(rounded(n) for n in truth["parameter_tensors"])
    state = sum(rounded(n) for n in truth["optimizer_state_tensors"])
    check(cat["parameter"] == params, "parameter bytes %d == torch's tensor sizes %d" % (cat["parameter"], params))
    check(cat["parameter"] == truth["parameter_blocks"],
          "parameter bytes %d == torch's blocks %d" % (cat["parameter"], truth["parameter_blocks"]))
    # a tensor placed in a cached block larger than it (not split) is charged the block
    check(cat["optimizer_state"] == truth["optimizer_state_blocks"],
          "optimizer_state bytes %d == torch's blocks of AdamW's state %d"
          % (cat["optimizer_state"], truth["optimizer_state_blocks"]))
    check(state <= cat["optimizer_state"] <= state * 1.02,
          "optimizer_state bytes %d within 2%% of the state tensors' sizes %d" % (cat["optimizer_state"], state))
    check(cat["gradient"] == truth["gradient_blocks"], "gradient bytes %d == torch's blocks of .grad %d (kept)"
          % (cat["gradient"], truth["gradient_blocks"]))
    check(cat["activation"] > 0, "activation bytes %d > 0" % cat["activation"])
    check(sum(cat.values()) == dev["live_at_peak_bytes"],
          "categories sum %d == live bytes %d" % (sum(cat.values()), dev["live_at_peak_bytes"]))
    check(dev["peak_allocated"] == truth["peak_allocated"],
          "peak allocated %d == torch's max_memory_allocated %d" % (dev["peak_allocated"], truth["peak_allocated"]))


def case_setup(work):
    path, truth = record(work, "setup", [])
    dev = run_json("report", "--json", path)["files"][0]["devices"][0]
    steps = dev["steps"]
    setup = dev.get("setup")
    check(setup is not None, "the report has a set-up period")
    if setup:
        check(setup["end_allocated"] >= truth["parameter_blocks"],
              "the set-up ends with the parameters allocated (%d >= %d)"
              % (setup["end_allocated"], truth["parameter_blocks"]))
        check(setup["end_ns"] <= steps[0]["begin_ns"], "the set-up ends where step 0 begins")
    numbered = [s for s in steps if s["step"] >= 0]
    first = numbered[0]
    check(first["step"] == 0, "the first step is step 0")
    check(first["segment_allocs"] < first["segments"],
          "segments made by the set-up (%d) are not step 0's (%d new)"
          % (first["segments"] - first["segment_allocs"], first["segment_allocs"]))
    check(len(numbered) >= truth["steps"], "%d steps listed for %d training steps" % (len(numbered), truth["steps"]))


def plan_of(path, *args):
    dev = run_json("layers", "--json", *args, path)["files"][0]["devices"][0]
    return dev, dev.get("plan") or {}


def case_layers(work):
    path, _ = record(work, "layers", [])
    dev, plan = plan_of(path)
    names = {l["layer"] for l in dev["layers"]}
    blocks = ["transformer.h.%d" % i for i in range(LAYERS)]
    check(all(b in names for b in blocks), "layers names every block (%s)" % ", ".join(sorted(names)[:10]))
    check(sorted(plan.get("layers", [])) == sorted(blocks),
          "the plan checkpoints the %d blocks: %s" % (LAYERS, plan.get("layers")))
    # every block checkpointed already: what is left to rank saves under 1 % of the peak
    path, truth = record(work, "layers_ckpt", ["--ckpt", ",".join(map(str, range(LAYERS)))])
    dev, plan = plan_of(path)
    best = min([r["estimated_peak_with_first_k"] for r in plan.get("ranking", [])] + [dev["peak_allocated"]])
    check(dev["peak_allocated"] - best < 0.01 * dev["peak_allocated"],
          "with every block checkpointed, no layer saves 1%% of the peak (%d bytes at most)"
          % (dev["peak_allocated"] - best))
    check(plan.get("layers") == [] and plan.get("none_because") == "saving_under_1_percent",
          "and no plan is proposed, saying why: %s, %s" % (plan.get("layers"), plan.get("none_because")))
    text = subprocess.run([MEMHIST, "layers", path], capture_output=True, text=True).stdout
    check("plan: none worth its recompute" in text or "plan: no layer" in text,
          "the text says there is no plan: %s" % text[text.find("plan:"):][:120])


def case_plan(work, args=(), block=r"transformer\.h\.(\d+)", first=0):
    """The plan ranks the blocks (layers matching `block`, whose group is
    the block's number, `first` for the first block), and checkpointing the
    first 1, 3 and all of them gives the estimated peaks within 10 %."""
    path, truth = record(work, "base", list(args))
    _, plan = plan_of(path)
    ranking = [r for r in plan.get("ranking", []) if re.fullmatch(block, r["layer"])]
    check(len(ranking) == LAYERS, "the ranking holds the %d blocks: %s"
          % (LAYERS, [r["layer"] for r in plan.get("ranking", [])]))
    if len(ranking) != LAYERS:
        return
    print("blocks  estimate MiB  measured MiB  error")
    for k in (1, 3, LAYERS):
        chosen = [int(re.fullmatch(block, r["layer"]).group(1)) - first for r in ranking[:k]]
        est = ranking[k - 1]["estimated_peak_with_first_k"]
        _, t = record(work, "ckpt%d" % k, list(args) + ["--ckpt", ",".join(map(str, chosen))])
        err = (est - t["peak_allocated"]) / t["peak_allocated"]
        print("%6d  %12.1f  %12.1f  %+.1f%%" % (k, est / 2**20, t["peak_allocated"] / 2**20, 100 * err))
        check(abs(err) <= 0.10, "checkpointing %s: estimate within 10%% of the measured peak" % chosen)
        check(t["peak_allocated"] < truth["peak_allocated"], "checkpointing lowers the measured peak")


NAMELESS = re.compile(r"<no stack|\.so[.\d]*:\d+ \?\?|\?\?$")


def case_names(work):
    """Allocations with no Python frame (autograd's device thread in
    backward, the cuBLAS workspace it keeps) are named by their op."""
    # torch keeps each thread's cuBLAS workspace with this set (as in the
    # recorded run of the issue); without it the workspaces are per-op temporaries
    path, _ = record(work, "names", [], env={"TORCH_CUBLAS_WORKSPACE_CACHE": "1"})
    dev = run_json("report", "--json", "--top", "100000", path)["files"][0]["devices"][0]
    groups = dev["top_at_peak"]
    check(sum(g["bytes"] for g in groups) == dev["live_at_peak_bytes"],
          "the groups at the peak cover every live byte")
    unnamed = [g["bytes"] for g in groups if not g["frames"]]
    check(not unnamed, "no bytes at the peak without a stack (%d B)" % sum(unnamed))
    for cmd in (["report", "--top", "100000"], ["layers", "--top", "100000"]):
        p = subprocess.run([MEMHIST] + cmd + [path], capture_output=True, text=True)
        bad = [l.strip() for l in p.stdout.splitlines() if NAMELESS.search(l)]
        check(p.returncode == 0 and not bad, "memhist %s names every group (%s)" % (cmd[0], bad[:3]))
    snap = os.path.join(work, "names.pickle")
    subprocess.run([MEMHIST, "snapshot", path, "-o", snap], capture_output=True, check=True)
    import pickle
    with open(snap, "rb") as f:
        trace = pickle.load(f)["device_traces"][0]
    allocs = [e for e in trace if e["action"] == "alloc"]
    check(allocs and all(e.get("frames") for e in allocs),
          "every allocation of the snapshot has frames (%d without)"
          % sum(1 for e in allocs if not e.get("frames")))
    live = {}
    for e in trace:
        if e["action"] == "alloc":
            live[e["addr"]] = e
        elif e["action"] == "free_completed":
            live.pop(e["addr"], None)
    # what stays allocated to the end with no Python frame: the autograd
    # thread's cached cuBLAS workspace
    kept = [e for e in live.values() if e.get("frames") and not any(
        f["filename"].endswith(".py") for f in e["frames"])]
    names = ["%s: %s" % (e["frames"][0]["filename"], e["frames"][0]["name"]) for e in kept]
    check(kept and all(re.fullmatch(r"torch internal: \w+Backward\d*", n) for n in names),
          "the cuBLAS workspace autograd's thread keeps is named by its op (%s)" % names)


def compiled_blocks(how, half, dev, plan):
    marked = {l["layer"]: l["compiled"] for l in dev["layers"]}
    blocks = {"transformer.h.%d" % i: i in half for i in range(LAYERS)}
    check(all(marked.get(b) == c for b, c in blocks.items()),
          "%s: compiled blocks marked, the others not: %s" % (how, {b: marked.get(b) for b in blocks}))
    saved = {l["layer"]: l["saved_activations_at_peak"] for l in dev["layers"]}
    check(all(saved.get(b, 0) > 0 for b in blocks),
          "%s: every block's backward found: saved activations %s" % (how, {b: saved.get(b) for b in blocks}))
    ranked = {r["layer"] for r in plan.get("ranking", [])}
    check(set(blocks) <= ranked, "%s: the plan ranks every block (%s)" % (how, sorted(ranked)))


def case_compiled(work):
    half = list(range(LAYERS // 2, LAYERS))
    for how in ("wrapped", "in place"):
        path, _ = record(work, "blocks_" + how.replace(" ", "_"), ["--compile", ",".join(map(str, half))]
                         + (["--in-place"] if how == "in place" else []))
        compiled_blocks(how, half, *plan_of(path))
        p = subprocess.run([MEMHIST, "flame", path, "-o", "-", "--folded"], capture_output=True, text=True)
        check(p.returncode == 0 and "transformer;h;3;" in p.stdout and "_orig_mod" not in p.stdout,
              "%s: module paths are the model's own (no torch.compile wrapper in them)" % how)

    path, _ = record(work, "all", ["--compile", "all"])
    dev, plan = plan_of(path)
    compiled = sum(l["by_category"]["activation"] for l in dev["layers"] if l["compiled"])
    check(compiled > 0.5 * dev["by_category"]["activation"],
          "most activations at the peak are marked compiled (%d of %d B)"
          % (compiled, dev["by_category"]["activation"]))
    check(not plan.get("layers"), "no plan from layers memhist cannot see: %s" % plan.get("layers"))
    p = subprocess.run([MEMHIST, "layers", path], capture_output=True, text=True)
    check(p.returncode == 0 and "torch.compile" in p.stdout,
          "memhist layers says the activations were made in compiled code")


def case_teacher(work):
    path, _ = record(work, "teacher", ["--teacher", "2"])
    dev, plan = plan_of(path, "--top", "100")
    layers = {ly["layer"]: ly for ly in dev["layers"]}
    student = ["GPT_2.transformer.h.%d" % i for i in range(LAYERS)]
    teacher = ["transformer.h.%d" % i for i in range(2)]
    check(all(n in layers for n in student + teacher),
          "the model's and the teacher's blocks are named apart: %s" % sorted(layers)[:12])
    ranked = [r["layer"] for r in plan.get("ranking", []) if ".h." in r["layer"]]
    check(sorted(ranked) == sorted(student), "the plan ranks the model's %d blocks: %s" % (LAYERS, ranked))
    saved = {n: layers[n]["saved_activations_at_peak"] for n in teacher if n in layers}
    check(saved and not any(saved.values()), "the teacher's blocks save nothing: %s" % saved)


def case_plan_function(work):
    """The plan when the training step is a function whose locals (the
    logits) the program's own thread frees after backward: they are not
    saved activations, checkpointing would not free them."""
    case_plan(work, ["--step-function"])


def case_plan_named(work):
    """The plan when the blocks are attributes named with their number
    (transformer.block1, ...) instead of a ModuleList's entries: each block
    is a layer, not each of its modules."""
    case_plan(work, ["--named-blocks"], r"transformer\.block(\d+)", 1)


def case_plan_method(work):
    """The plan when a method of the model other than forward runs its
    blocks (a LightningModule's training_step): each block is called with
    no forward open, yet keeps its path in the model (transformer.h.N, not
    its class name numbered as a model of its own)."""
    case_plan(work, ["--method-step"])


def case_plan_shared(work):
    """One block applied LAYERS times (weights shared, as in ALBERT): it is
    one layer, each of its calls is recomputed at its own backward, so the
    estimate for checkpointing it is within 3 % of the measured peak (all
    calls at once would put it near the recorded peak). Also with the block
    ending in a LayerNorm (post-norm, as ALBERT's), whose output is the
    block's too: both modules' backward scopes open at one autograd node."""
    for name, extra in (("shared", []), ("shared_post_norm", ["--post-norm"])):
        path, truth = record(work, name, ["--shared"] + extra)
        _, plan = plan_of(path)
        ranking = plan.get("ranking", [])
        check(ranking and ranking[0]["layer"] == "transformer.h.0",
              "%s: the plan ranks the shared block first: %s" % (name, [r["layer"] for r in ranking]))
        if not ranking or ranking[0]["layer"] != "transformer.h.0":
            continue
        est = ranking[0]["estimated_peak_with_first_k"]
        _, t = record(work, name + "_ckpt", ["--shared", "--ckpt", "all"] + extra)
        err = (est - t["peak_allocated"]) / t["peak_allocated"]
        print("%s: recorded %.1f MiB, estimate %.1f MiB, measured %.1f MiB, error %+.1f%%"
              % (name, truth["peak_allocated"] / 2**20, est / 2**20, t["peak_allocated"] / 2**20, 100 * err))
        check(abs(err) <= 0.03, "%s: checkpointing the shared block: estimate within 3 %% of the measured "
              "peak" % name)


def case_plan_cnn(work):
    """A ResNet-style network (resnet_train.py): each block ends with an
    in-place ReLU that keeps the block's output for its own backward while
    the next block keeps it too, so checkpointing the block does not free it
    (the recording tags module outputs); the estimates for the first 1, 3
    and all layers of the plan are within 3 % of the measured peaks."""
    script = os.path.join(HERE, "resnet_train.py")
    path, truth = record(work, "cnn", [], script=script)
    _, plan = plan_of(path)
    ranking = plan.get("ranking", [])
    blocks = [r["layer"] for r in ranking if re.fullmatch(r"layer\d\.\d", r["layer"])]
    check(len(blocks) >= 4, "the ranking holds the blocks: %s" % [r["layer"] for r in ranking])
    k_all = len(plan.get("layers", []))
    print("layers  estimate MiB  measured MiB  error")
    for k in sorted({1, 3, k_all}):
        if k < 1 or k > len(ranking):
            continue
        chosen = [r["layer"] for r in ranking[:k]]
        est = ranking[k - 1]["estimated_peak_with_first_k"]
        _, t = record(work, "cnn_ckpt%d" % k, ["--ckpt", ",".join(chosen)], script=script)
        err = (est - t["peak_allocated"]) / t["peak_allocated"]
        print("%6d  %12.1f  %12.1f  %+.1f%%" % (k, est / 2**20, t["peak_allocated"] / 2**20, 100 * err))
        check(abs(err) <= 0.03, "checkpointing %s: estimate within 3%% of the measured peak" % chosen)
        check(t["peak_allocated"] < truth["peak_allocated"], "checkpointing lowers the measured peak")


def case_closure(work):
    runs = {}
    for name, args in (("plain", []), ("closure", ["--closure"])):
        path, _ = record(work, name, args)
        rep = run_json("report", "--json", path)["files"][0]["devices"][0]
        runs[name] = (rep, plan_of(path)[1])
    (plain, plain_plan), (closed, closed_plan) = runs["plain"], runs["closure"]
    a, b = plain["category_at_peak"], closed["category_at_peak"]
    check(b["activation"] > 0 and abs(b["activation"] - a["activation"]) <= 0.02 * a["activation"],
          "activations at the peak %d, %d without a closure" % (b["activation"], a["activation"]))
    for cat in ("parameter", "optimizer_state"):
        check(a[cat] == b[cat], "%s bytes %d, %d without a closure" % (cat, b[cat], a[cat]))
    check([s["step"] for s in closed["steps"]] == [s["step"] for s in plain["steps"]],
          "the same steps: %s" % [s["step"] for s in closed["steps"]])
    check(sorted(closed_plan.get("layers", [])) == sorted(plain_plan.get("layers", [])) != [],
          "the same plan: %s" % closed_plan.get("layers"))


def case_accumulate(work):
    base, _ = record(work, "single", [])
    path, truth = record(work, "accum", ["--accumulate", "2"])
    one, one_plan = plan_of(base)
    two, two_plan = plan_of(path)
    act1, act2 = one["by_category"]["activation"], two["by_category"]["activation"]
    check(act2 > 0 and abs(act2 - act1) <= 0.05 * act1,
          "activations at the peak with 2 micro-batches %d B, without %d B" % (act2, act1))
    save1 = one_plan.get("estimated_saving", 0)
    save2 = two_plan.get("estimated_saving", 0)
    check(save2 > 0 and abs(save2 - save1) <= 0.05 * save1,
          "the plan saves %d B with 2 micro-batches, %d B without" % (save2, save1))
    blocks = [l for l in two_plan.get("layers", []) if re.fullmatch(r"transformer\.h\.\d+", l)]
    check(len(blocks) == LAYERS, "the plan checkpoints the %d blocks: %s" % (LAYERS, two_plan.get("layers")))
    if len(blocks) != LAYERS:
        return
    _, t = record(work, "accum_ckpt", ["--accumulate", "2", "--ckpt", "all"])
    est = two_plan["ranking"][LAYERS - 1]["estimated_peak_with_first_k"]
    err = (est - t["peak_allocated"]) / t["peak_allocated"]
    check(abs(err) <= 0.10, "checkpointing every block with 2 micro-batches: estimate %.1f MiB, measured %.1f MiB"
          % (est / 2**20, t["peak_allocated"] / 2**20))
    check(t["peak_allocated"] < truth["peak_allocated"], "checkpointing lowers the measured peak")


def case_roles(work):
    runs = {}
    for name, args in (("plain", []), ("wrapped", ["--wrapped"])):
        path, _ = record(work, name, args)
        runs[name] = plan_of(path)
    for name, (dev, _) in runs.items():
        rows = {l["layer"]: l for l in dev["layers"]}
        for layer, cat in (("parameters", "parameter"), ("optimizer state", "optimizer_state")):
            got = rows.get(layer, {}).get("live_at_peak")
            check(got == dev["by_category"][cat] > 0,
                  "%s: the %r row holds the %s bytes at the peak (%s, %d)"
                  % (name, layer, cat, got, dev["by_category"][cat]))
        wrapper = [l for l in rows if "train_wrapper" in l]
        check(not wrapper, "%s: no layer is named by the wrapper's source: %s" % (name, wrapper))
    (plain, plain_plan), (wrapped, wrapped_plan) = runs["plain"], runs["wrapped"]
    held = {l["layer"] for l in plain["layers"] if l["live_at_peak"]}
    check(held == {l["layer"] for l in wrapped["layers"] if l["live_at_peak"]},
          "the same layers hold memory at the peak with and without the wrapper: %s" % sorted(held))
    check(sorted(plain_plan.get("layers", [])) == sorted(wrapped_plan.get("layers", [])) != [],
          "the same plan: %s" % wrapped_plan.get("layers"))


CASES = {"categories": case_categories, "setup": case_setup, "layers": case_layers,
         "plan": case_plan, "plan_function": case_plan_function,
         "plan_named": case_plan_named, "plan_method": case_plan_method, "plan_cnn": case_plan_cnn,
         "plan_shared": case_plan_shared, "names": case_names, "compiled": case_compiled,
         "teacher": case_teacher, "closure": case_closure, "accumulate": case_accumulate,
         "roles": case_roles}


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return 0
    if len(sys.argv) < 2 or sys.argv[1] not in CASES:
        print("usage: check_answers.py CASE [WORKDIR] | --list", file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: torch is not installed")
        return SKIP
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="mh_answers_")
    os.makedirs(work, exist_ok=True)
    CASES[sys.argv[1]](work)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
