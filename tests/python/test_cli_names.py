"""Long names in the text tables of `layers` and `diff`: the name column
widens to fit names up to 60 characters, and a longer name keeps its head
and its tail around "..." and stays valid UTF-8 (cut between characters,
never inside one); the columns after it line up. The recording is a torch-shaped snapshot built here
(snapshot_check.Gen) whose frames carry the names, imported with
`memhist import`."""
import os
import pickle
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402

MID = "/models/" + "ümlaut" * 12 + "/"  # 2-byte characters in the middle, 89 bytes
SHORT = "encoder_with_a_descriptive_name.py"
LONG = "project" + MID + "deep_module_file.py"


def table_lines(*args):
    p = subprocess.run([sc.memhist()] + list(args), capture_output=True, timeout=300)
    if p.returncode != 0:
        sc.fail("memhist %s exited %d: %s" % (" ".join(args), p.returncode, p.stderr[-500:]))
    try:
        return p.stdout.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        sc.fail("memhist %s printed invalid UTF-8: %s" % (args[0], e))


def recording(d, name, sizes):
    gen = sc.Gen()
    gen.stacks = [[sc.frame("forward", SHORT, 12)], [sc.frame("forward", LONG, 34)]]
    gen.begin_step(0)
    for stack, size in enumerate(sizes):
        gen.alloc(0, size, stack=stack)
    gen.end_step()
    snap = os.path.join(d, name + ".pickle")
    with open(snap, "wb") as f:
        pickle.dump(gen.snapshot(), f)
    out = os.path.join(d, name + ".memhist")
    sc.run("import", snap, "-o", out)
    return out


def check_row(lines, what):
    rows = [l for l in lines if l.startswith("  ") and " MiB " in l and "step" not in l]
    short = [l for l in rows if SHORT + ":12 forward" in l]
    if not short:
        sc.fail("%s: the 44-character name is not printed whole: %s" % (what, rows))
    long_rows = [l for l in rows if "ümlaut" in l]
    if not long_rows or "..." not in long_rows[0] or not long_rows[0].rstrip().split("  ")[1].startswith("ümlaut") \
            or "_file.py:34 forward" not in long_rows[0]:
        sc.fail("%s: the long name is not its head and tail around '...': %s" % (what, long_rows))
    name = long_rows[0].strip().split("  ")[0]
    if len(name) != 60:
        sc.fail("%s: the elided name is %d characters, not the column's 60: %r" % (what, len(name), name))
    # the columns after the names line up (counted in characters)
    if short[0].index(" MiB") != long_rows[0].index(" MiB"):
        sc.fail("%s: the columns after the names do not line up:\n%s\n%s" % (what, short[0], long_rows[0]))


def main():
    sc.memhist()
    d = sc.workdir("cli_names")
    a = recording(d, "a", [8 << 20, 4 << 20])
    b = recording(d, "b", [6 << 20, 2 << 20])
    check_row(table_lines("layers", a), "layers")
    check_row(table_lines("diff", a, b), "diff")
    print("ok: long names fit, elided in the middle as valid UTF-8")


if __name__ == "__main__":
    main()
