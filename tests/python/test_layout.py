"""The module boundaries of the source tree (docs/DESIGN.md, "Layout").

Checks, over src/ and viz/:
  - a file includes only public headers (include/memhist/), headers of its
    own module, or the headers another module offers, and only from modules
    below its own in the dependency order;
  - file names are unique across src/, viz/ and include/;
  - one naming rule: a name spelt mh_/MH_ is public (include/memhist/), or
    one of libmemhist_pyhook's exports to the Python package (declared in
    src/pyhook's headers); every other function, type, macro and enum
    constant of src/ and viz/ is spelt mh__/MH__ (string literals aside);
    the built libraries and the CLI define no other global mh_ symbol, and
    libmemhist_pyhook exports exactly its declared mh_ functions;
  - include guards: MEMHIST_<FILE>_H in include/memhist/, MH_<FOLDER>_<FILE>_H
    in src/<folder>/, MH_VIZ_<FILE>_H in viz/;
  - a header that only its own module includes may end in _int.h, the one
    suffix that says so (no _internal.h, _iint.h, _priv.h); a module offers
    no _int.h header;
  - docs/DESIGN.md's boundary table is the one LIBRARIES and MODULES give
    (`python3 tests/python/test_layout.py --table` prints it);
  - every case of tests/vdevice/check_workload.py is a test registered by
    its full name in tests/vdevice/ground_truth.cmake;
  - the Python package's modules (src/python/memhist) import one another in
    no cycle, counting imports inside functions too.
Prints one line per problem and exits 1 if there is any.
"""
import ast
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
    "viz_answers": (["viz/answers"], ["viz_common", "analysis"], ["oom_json.h"]),
    "viz_view": (["viz/view"], ["viz_answers", "viz_common", "analysis"], ["view_html.h"]),
    "vdevice": (["src/vdevice"], [], ["vdev_presets.h"]),
    "cli": (["src/cli"], ["viz_plot", "viz_snapshot", "viz_trace", "viz_flame", "viz_view", "viz_answers", "viz_common", "import",
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
    ("`mh_viz`", "viz/common, answers, plot, snapshot, trace, flame, view",
     "analysis (viz/common: model only), libpng, zlib",
     ["viz_common", "viz_answers", "viz_plot", "viz_snapshot", "viz_trace", "viz_flame", "viz_view"], None),
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
        names.update(IDENT_RE.findall(open(h, encoding="utf-8").read()))
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


IDENT_RE = re.compile(r"\b(mh_[a-z0-9][A-Za-z0-9_]*|MH_[A-Z0-9][A-Z0-9_]*)\b")
LITERAL_RE = re.compile(r"""("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)+')""")


def pyhook_exports():
    """The mh_ functions src/pyhook's headers declare: what Python calls through ctypes."""
    names = set()
    for h in glob.glob(os.path.join(ROOT, "src", "pyhook", "*.h")):
        names.update(re.findall(r"^[A-Za-z].*?\b(mh_[a-z0-9_]+)\(", open(h, encoding="utf-8").read(), re.M))
    return names


def expected_guard(rel):
    parts = rel.split("/")
    stem = re.sub(r"\W", "_", parts[-1][:-2]).upper()
    if parts[0] == "include":
        return "MEMHIST_%s_H" % stem
    if parts[0] == "viz":
        return "MH_VIZ_%s_H" % stem
    return "MH_%s_%s_H" % (parts[1].upper(), stem)


def tree_sources():
    for top in ("src", "viz", "include"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h", ".cpp")):
                    yield os.path.relpath(os.path.join(dirpath, f), ROOT).replace(os.sep, "/")


def build_definitions():
    """MH_ names the build defines on the compiler's command line (cmake/, CMakeLists.txt)."""
    names = set()
    for f in glob.glob(os.path.join(ROOT, "cmake", "*.cmake")) + [os.path.join(ROOT, "CMakeLists.txt")]:
        names.update(re.findall(r"\b(MH_[A-Z0-9_]+)\b", open(f, encoding="utf-8").read()))
    return names


def check_names(problems):
    allowed = public_names() | pyhook_exports() | build_definitions()
    for rel in tree_sources():
        text = open(os.path.join(ROOT, rel), encoding="utf-8").read()
        guard = re.search(r"#ifndef\s+(\w+)\s*\n#define\s+(\w+)", text)
        if rel.endswith(".h"):
            want = expected_guard(rel)
            if not guard or guard.group(1) != want or guard.group(2) != want:
                problems.append(f"{rel}: include guard should be {want}")
        if rel.startswith("include/"):
            continue
        code = "".join(LITERAL_RE.split(text)[0::2])
        for name in sorted(set(IDENT_RE.findall(code))):
            if name not in allowed and not (guard and name == guard.group(1)):
                problems.append(f"{rel}: {name} is not public, so it needs {name[:2]}__")


def check_header_suffixes(problems):
    offered = {h for _, _, hs in MODULES.values() for h in hs}
    for rel in tree_sources():
        name = rel.rsplit("/", 1)[-1]
        if re.search(r"_(internal|iint|priv|private)\.h$", name):
            problems.append(f"{rel}: an internal header's name ends in _int.h")
        if name.endswith("_int.h") and name in offered:
            problems.append(f"{rel}: a header other modules include cannot end in _int.h")


def check_pyhook_exports(problems):
    nm = shutil.which("nm")
    lib = os.path.join(BUILD, "libmemhist_pyhook.so") if BUILD else ""
    if not nm or not os.path.exists(lib):
        print("skipping libmemhist_pyhook's exports: not built")
        return
    out = subprocess.run([nm, "-D", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
    exported = {p[2] for p in (l.split() for l in out.splitlines()) if len(p) == 3 and p[1] in "TDBRW"}
    declared = pyhook_exports()
    for name in sorted(exported - declared):
        problems.append(f"libmemhist_pyhook.so exports {name}, which src/pyhook's headers do not declare")
    for name in sorted(declared - exported):
        problems.append(f"libmemhist_pyhook.so does not export {name}, which src/pyhook's headers declare")


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


PACKAGE = "memhist"


def package_modules():
    """{module name: path} of the Python package (its __init__ is `memhist`)."""
    out = {}
    top = os.path.join(ROOT, "src", "python", PACKAGE)
    for path in sorted(glob.glob(os.path.join(top, "**", "*.py"), recursive=True)):
        rel = os.path.relpath(path, top)[:-3].replace(os.sep, ".")
        name = PACKAGE if rel == "__init__" else PACKAGE + "." + rel
        out[name[:-len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


def top_names(path):
    """The names a module binds at its top level."""
    out = set()
    for node in ast.parse(open(path, encoding="utf-8").read(), path).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return out


def imported(tree, name, modules, defined):
    """The package's modules that module `name` imports anywhere in `tree`
    (at its top or inside functions): `from . import x` and `from memhist
    import x` import module x, or the package itself where x is a name it
    defines (`defined`: {package: its top-level names}); a module the build
    makes (_install) is not in the source tree and left out."""
    base = name if modules[name].endswith("__init__.py") else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            where = node.module or ""
            if node.level:
                up = base.split(".")[:len(base.split(".")) - node.level + 1]
                where = ".".join(up + ([where] if where else []))
            targets = [where + "." + a.name if where + "." + a.name in modules else
                       where if where not in defined or a.name in defined[where] else "" for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in modules:  # a.b.c imports its innermost module of the package
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def import_cycle(graph):
    """One cycle of `graph` ({module: modules it imports}) as a list, or None."""
    state = {}

    def visit(m, path):
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state:
                found = visit(n, path)
                if found:
                    return found
        state[m] = 2
        path.pop()
        return None
    for m in sorted(graph):
        if m not in state:
            found = visit(m, [])
            if found:
                return found
    return None


def check_python_imports(problems):
    modules = package_modules()
    defined = {name: top_names(path) for name, path in modules.items() if path.endswith("__init__.py")}
    graph = {name: imported(ast.parse(open(path, encoding="utf-8").read(), path), name, modules, defined)
             for name, path in modules.items()}
    cycle = import_cycle(graph)
    if cycle:
        problems.append("src/python/memhist: modules import one another in a cycle: " + " -> ".join(cycle))


def main():
    if sys.argv[1:] == ["--table"]:
        sys.stdout.write(design_table())
        return 0
    problems = []
    check_includes(problems)
    check_unique_names(problems)
    check_symbols(problems)
    check_names(problems)
    check_header_suffixes(problems)
    check_pyhook_exports(problems)
    check_design_table(problems)
    check_vdevice_cases(problems)
    check_python_imports(problems)
    for p in sorted(set(problems)):
        print(p)
    print(f"{len(set(problems))} layout problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
