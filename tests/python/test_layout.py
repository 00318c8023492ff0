"""The module boundaries of the source tree (docs/DESIGN.md, "Layout").

Checks, over src/ and viz/:
  - a file includes only public headers (include/memhist/), headers of its
    own module, or the headers another module offers, and only from modules
    below its own in the dependency order;
  - file names are unique across src/, viz/ and include/;
  - the built libraries and the CLI define no global mh_ symbol that the
    public headers do not declare (internal cross-file names use mh__);
  - docs/DESIGN.md's boundary table is the one LIBRARIES and MODULES give
    (`python3 tests/python/test_layout.py --table` prints it);
  - every case of tests/vdevice/check_workload.py is a test registered by
    its full name in tests/vdevice/ground_truth.cmake.
Prints one line per problem and exits 1 if there is any.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

ROOT = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("MH_BINARY_DIR", "")

# module -> (folders, modules it may include from, headers it offers to others)
MODULES = {
    "format": (["src/format"], [], []),
    "record": (["src/record"], ["format"], []),
    "model": (["src/model"], [], ["addrmap.h", "diag.h", "grow.h", "progress.h", "units.h", "utf8.h"]),
    "sim": (["src/sim"], ["model"], ["sim.h", "workload.h", "sim_replay.h"]),
    "analysis": (["src/analysis"], ["sim", "model"],
                 ["analysis.h", "categories.h", "device_report.h", "diff.h", "flame.h", "job_origin.h", "job_ranks.h", "moment.h",
                  "layer_names.h", "layers.h", "layers_answer.h", "oom_explain.h", "replay_file.h", "session.h", "stacks.h", "whatif_check.h"]),
    "import": (["src/import"], ["model"], ["snapshot_import.h", "pickle_read.h", "pickle_value.h"]),
    "export": (["src/export"], ["analysis", "sim", "model"], []),
    "viz_common": (["viz/common"], ["model"], ["json.h", "json_read.h", "outfile.h", "pickle_write.h",
                                               "sink.h", "gzip.h", "palette.h"]),
    "viz_plot": (["viz/plot"], ["viz_common", "analysis"], ["plot.h", "plot_fit.h"]),
    "viz_snapshot": (["viz/snapshot"], ["viz_common", "analysis"], ["snapshot_export.h"]),
    "viz_trace": (["viz/trace"], ["viz_common", "analysis"], ["trace_writer.h"]),
    "viz_flame": (["viz/flame"], ["viz_common", "analysis"], ["flame_svg.h"]),
    "viz_view": (["viz/view"], ["viz_common", "analysis"], ["view_html.h"]),
    "vdevice": (["src/vdevice"], [], ["vdev_presets.h"]),
    "cli": (["src/cli"], ["viz_plot", "viz_snapshot", "viz_trace", "viz_flame", "viz_view", "viz_common", "import",
                          "analysis", "sim", "model", "vdevice"], []),
}
# The libraries of DESIGN.md's boundary table: (library, folders, what it may use, modules
# whose offered headers it lists, what it offers when no module lists headers).
LIBRARIES = [
    ("`libmemhist`", "src/record, src/format", "msgpack-c, pthreads, libdl", [],
     "include/memhist/ only (the shared library also holds the model for memhist/model.h)"),
    ("`mh_model`", "src/model", "libmemhist", ["model"], None),
    ("`mh_sim`", "src/sim", "model", ["sim"], None),
    ("`mh_analysis`", "src/analysis", "sim, model", ["analysis"], None),
    ("`mh_import`", "src/import", "model", ["import"], None),
    ("`mh_export`, `libmemhist_arrow`", "src/export", "analysis, sim, model, pthreads", [],
     "include/memhist/arrow.h only: the tables through the Arrow C data interface, to the "
     "Python package through ctypes (the shared library also holds the analyses, the simulator, "
     "the model and the reader, exporting mh_arrow_* alone)"),
    ("`mh_viz`", "viz/common, plot, snapshot, trace, flame, view",
     "analysis (viz/common: model only), libpng, zlib",
     ["viz_common", "viz_plot", "viz_snapshot", "viz_trace", "viz_flame", "viz_view"], None),
    ("`libmemhist_pyhook`", "src/pyhook",
     "libmemhist, the Python C API, libtorch (autograd nodes, tensors)", [],
     "the module scope hooks and tensor tags, to the Python package through ctypes"),
    ("`mh_vdev_presets`", "src/vdevice (vdev_presets.c)", "—", ["vdevice"], None),
    ("virtual device (`build/vdevice/lib*.so*`)", "src/vdevice", "mh_vdev_presets, libc", [],
     "the CUDA, cuBLAS(Lt) and NVML APIs, to programs it is preloaded into"),
    ("`memhist`", "src/cli", "everything", [], "—"),
]
TABLE_HEAD = "| library | folders | may use | offers to the modules above it |\n|---|---|---|---|\n"


def design_table():
    rows = []
    for lib, dirs, uses, modules, offers in LIBRARIES:
        if offers is None:
            offers = "; ".join(", ".join(sorted(MODULES[m][2])) for m in modules
                               if MODULES[m][2])
            if lib == "`mh_model`":
                offers = "include/memhist/model.h, " + offers
        rows.append("| %s | %s | %s | %s |" % (lib, dirs, uses, offers))
    return TABLE_HEAD + "\n".join(rows) + "\n"


def check_design_table(problems):
    text = open(os.path.join(ROOT, "docs", "DESIGN.md"), encoding="utf-8").read()
    at = text.find(TABLE_HEAD)
    if at < 0:
        problems.append("docs/DESIGN.md: no boundary table (its header row is missing)")
        return
    end = text.find("\n\n", at)
    if text[at:end + 1] != design_table():
        problems.append("docs/DESIGN.md: the boundary table differs from test_layout.py's lists "
                        "(python3 tests/python/test_layout.py --table prints the right one)")


INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def reachable(module):
    """Modules `module` may include from: its dependencies, transitively."""
    seen, todo = set(), list(MODULES[module][1])
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(MODULES[m][1])
    return seen


def sources():
    for module, (dirs, _, _) in MODULES.items():
        for d in dirs:
            for path in sorted(glob.glob(os.path.join(ROOT, d, "*"))):
                if path.endswith((".c", ".h", ".cpp")):
                    yield module, path


def check_includes(problems):
    owner = {}
    for module, path in sources():
        if path.endswith(".h"):
            owner[os.path.basename(path)] = module
    for module, path in sources():
        text = open(path, encoding="utf-8").read()
        allowed = reachable(module)
        rel = os.path.relpath(path, ROOT)
        for name in INCLUDE_RE.findall(text):
            if name.startswith("memhist/"):
                continue
            other = owner.get(name)
            if other is None:
                problems.append(f"{rel}: includes \"{name}\", which is no header of src/ or viz/")
            elif other == module:
                continue
            elif other not in allowed:
                problems.append(f"{rel}: includes \"{name}\" of {other}, which {module} does not depend on")
            elif name not in MODULES[other][2]:
                problems.append(f"{rel}: includes \"{name}\", an internal header of {other}")


def check_unique_names(problems):
    seen = {}
    for top in ("src", "viz", "include"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".c", ".h", ".cpp")):
                    rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
                    if f in seen:
                        problems.append(f"{rel}: same file name as {seen[f]}")
                    seen.setdefault(f, rel)


def public_names():
    names = set()
    for h in glob.glob(os.path.join(ROOT, "include", "memhist", "*.h")):
        names.update(re.findall(r"\b(mh_[a-z0-9_]+)\b", open(h, encoding="utf-8").read()))
    return names


def check_symbols(problems):
    nm = shutil.which("nm")
    if not BUILD or not nm:
        print("skipping the symbol check: no build directory or no nm")
        return
    objs = [os.path.join(BUILD, f) for f in ("libmemhist.a", "memhist")]
    objs = [f for f in objs if os.path.exists(f)] + glob.glob(os.path.join(BUILD, "libmh_*.a"))
    if len(objs) < 3:
        problems.append(f"{BUILD}: no libraries or objects to check")
        return
    out = subprocess.run([nm, "-g", "--defined-only", *objs], capture_output=True, text=True,
                         check=True).stdout
    public = public_names()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and re.match(r"mh_[a-z0-9]", parts[2]) and parts[2] not in public:
            problems.append(f"symbol {parts[2]}: global, not in include/memhist/, so it needs mh__")


def check_vdevice_cases(problems):
    """Every ground-truth case of check_workload.py is a test named in full."""
    cmake = open(os.path.join(ROOT, "tests", "vdevice", "ground_truth.cmake"), encoding="utf-8").read()
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "vdevice", "check_workload.py"),
                        "--list"], capture_output=True, text=True)
    if r.returncode != 0:
        problems.append("tests/vdevice/check_workload.py --list failed: " + r.stderr[-300:])
        return
    for case in r.stdout.split():
        if "mh_vdevice_case(vdevice_truth_%s " % case not in cmake:
            problems.append("tests/vdevice/ground_truth.cmake: no test vdevice_truth_%s" % case)


def main():
    if sys.argv[1:] == ["--table"]:
        sys.stdout.write(design_table())
        return 0
    problems = []
    check_includes(problems)
    check_unique_names(problems)
    check_symbols(problems)
    check_design_table(problems)
    check_vdevice_cases(problems)
    for p in sorted(set(problems)):
        print(p)
    print(f"{len(set(problems))} layout problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
