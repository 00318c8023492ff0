"""memhist's own Python stack capture (src/record/pystack.h) against CPython.

Loads libmemhist with ctypes and, in this interpreter and in every other
python3.10 ... python3.14 found on PATH (or listed in MH_TEST_PYTHONS,
separated by ':'), checks that:
  - the start-up check accepts the interpreter's frame layout;
  - a captured stack equals traceback.extract_stack() (file, function,
    line) for plain calls, methods, generators, comprehensions, lambdas,
    deep recursion, other threads, with the GIL held (PyDLL) and released
    (CDLL);
  - code objects that die and whose addresses are reused are named right;
  - the copied-line-table parser gives PyCode_Addr2Line's line for every
    instruction offset of thousands of code objects.
Exits 77 when libmemhist.so is not built."""
import ctypes
import os
import shutil
import subprocess
import sys
import threading
import traceback
import types

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def load():
    lib_dir = os.environ.get("MH_BINARY_DIR", "build")
    path = os.path.join(lib_dir, "libmemhist.so")
    if not os.path.exists(path):
        print("skipped: %s not built" % path)
        sys.exit(77)
    return ctypes.CDLL(path), ctypes.PyDLL(path)


NOGIL, GIL = load()
for lib in (NOGIL, GIL):
    lib.mh__stack_capture.restype = ctypes.c_uint32
    lib.mh__stack_capture.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.mh__stack_describe.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t]
    lib.mh__linetable_line.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
    lib.mh__stack_init.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def describe(node):
    buf = ctypes.create_string_buffer(1 << 16)
    n = GIL.mh__stack_describe(node, buf, len(buf))
    check(n >= 0, "describe node %d: %d" % (node, n))
    lines = buf.value.decode().splitlines()
    return [tuple(l.split("\t")) for l in lines]


def expected(stack):
    return [(f.filename, f.name, str(f.lineno)) for f in reversed(stack)]


def compare(label, node, stack, limit=None):
    got = describe(node)
    want = expected(stack)
    if limit is not None:
        want = want[:limit]
    check(got == want, "%s: stack differs\n  got  %s\n  want %s" % (label, got[:6], want[:6]))


def capture(label, gil=False, limit=0):
    lib = GIL if gil else NOGIL
    node, stack = lib.mh__stack_capture(None, 0, limit), traceback.extract_stack()
    compare(label + (" (GIL held)" if gil else " (GIL released)"), node, stack, limit or None)
    return node


class Model:
    def forward(self, gil):
        return capture("method", gil)


def gen(gil):
    yield capture("generator", gil)


def recurse(n, gil):
    if n == 0:
        return capture("recursion limit 40", gil, 40), capture("recursion", gil)
    return recurse(n - 1, gil)


def scenarios(gil):
    capture("plain", gil)
    Model().forward(gil)
    list(gen(gil))
    [capture("comprehension", gil) for _ in range(2)]
    (lambda: capture("lambda", gil))()
    recurse(120, gil)
    a, b = capture("repeat", gil), capture("repeat", gil)
    check(a != b, "two call sites on different lines share a node")
    nodes = [capture("loop", gil) for _ in range(3)]
    check(len(set(nodes)) == 1, "one call site in a loop gives %d nodes" % len(set(nodes)))


def code_churn():
    """exec'd functions die; their addresses get reused by new ones."""
    for i in range(400):
        ns = {"capture": capture}
        src = "\n" * (i % 7) + "def fn_%d():\n    return capture('churn %d')\n" % (i, i)
        exec(compile(src, "<churn %d>" % i, "exec"), ns)
        ns["fn_%d" % i]()


def line_tables():
    addr2line = ctypes.pythonapi.PyCode_Addr2Line
    addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
    addr2line.restype = ctypes.c_int
    minor = sys.version_info[1]
    codes, seen = [], set()

    def walk(co):
        if id(co) in seen:
            return
        seen.add(id(co))
        codes.append(co)
        for c in co.co_consts:
            if isinstance(c, types.CodeType):
                walk(c)

    for mod in list(sys.modules.values()):
        for obj in list(getattr(mod, "__dict__", {}).values()):
            co = getattr(obj, "__code__", None)
            if isinstance(co, types.CodeType):
                walk(co)
    bad = checked = 0
    for co in codes:
        table = co.co_linetable
        for off in range(-2, len(co.co_code) + 4, 2):
            want = addr2line(co, off)
            got = NOGIL.mh__linetable_line(minor, table, len(table), co.co_firstlineno, off)
            checked += 1
            if got != want:
                bad += 1
                if bad <= 3:
                    print("  %s:%s offset %d: got %d want %d" % (co.co_filename, co.co_name, off, got, want))
    check(bad == 0, "line tables: %d of %d offsets differ" % (bad, checked))
    check(len(codes) > 500, "only %d code objects checked" % len(codes))
    return len(codes), checked


def run_here():
    why = ctypes.create_string_buffer(256)
    rc = NOGIL.mh__stack_init(why, len(why))
    print("python %s: init %d (%s)" % (sys.version.split()[0], rc, why.value.decode()))
    check(rc == 0, "start-up check refused CPython %s: %s" % (sys.version.split()[0], why.value.decode()))
    if rc != 0:
        return
    for gil in (False, True):
        scenarios(gil)
    code_churn()
    t = threading.Thread(target=scenarios, args=(False,))
    t.start()
    t.join()
    n, k = line_tables()
    print("  %d code objects, %d offsets agree with PyCode_Addr2Line" % (n, k))


def other_pythons():
    mine = "%d.%d" % sys.version_info[:2]
    names = [p for p in os.environ.get("MH_TEST_PYTHONS", "").split(":") if p]
    names += ["python3.%d" % m for m in range(10, 15)]
    done = {mine}
    for name in names:
        exe = shutil.which(name) or (name if os.path.isfile(name) else None)
        if not exe:
            continue
        v = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True)
        ver = v.stdout.strip()
        if v.returncode != 0 or ver in done:
            continue
        done.add(ver)
        r = subprocess.run([exe, __file__], env=dict(os.environ, MH_PYSTACK_CHILD="1"),
                           capture_output=True, text=True)
        sys.stdout.write(r.stdout + r.stderr)
        check(r.returncode in (0, 77), "python %s failed" % ver)
    return sorted(done)


def main():
    run_here()
    if not os.environ.get("MH_PYSTACK_CHILD"):
        print("versions checked:", ", ".join(other_pythons()))
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
