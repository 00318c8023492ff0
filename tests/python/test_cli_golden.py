"""CLI golden tests: each tests/cli/NAME.cmd holds the arguments of one
`memhist` invocation (run from tests/data); its stdout, stderr and exit code
must equal tests/cli/NAME.out byte for byte. Regenerate the expected files
with `MEMHIST_REGEN=1 python3 tests/python/test_cli_golden.py` and review the
diff before committing."""
import difflib
import os
import shlex
import subprocess
import sys

root = os.environ.get("MH_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
memhist = os.environ.get("MEMHIST") or os.path.join(root, "build", "memhist")
cli_dir = os.path.join(root, "tests", "cli")
data_dir = os.path.join(root, "tests", "data")


def run_case(cmd_file):
    with open(cmd_file) as f:
        args = shlex.split(f.read().strip())
    p = subprocess.run([memhist] + args, cwd=data_dir, capture_output=True, text=True, timeout=120)
    return "$ memhist %s\n%s--- stderr\n%s--- exit %d\n" % (" ".join(args), p.stdout, p.stderr,
                                                          p.returncode)


def main():
    if not os.path.exists(memhist):
        print("skip: memhist binary not found at", memhist)
        return 77
    cases = sorted(f for f in os.listdir(cli_dir) if f.endswith(".cmd"))
    failures = 0
    for case in cases:
        got = run_case(os.path.join(cli_dir, case))
        expected_file = os.path.join(cli_dir, case[:-4] + ".out")
        if os.environ.get("MEMHIST_REGEN"):
            with open(expected_file, "w") as f:
                f.write(got)
            print("wrote", expected_file)
            continue
        with open(expected_file) as f:
            expected = f.read()
        if got != expected:
            failures += 1
            print("FAIL", case)
            sys.stdout.writelines(difflib.unified_diff(expected.splitlines(True),
                                                       got.splitlines(True), "expected", "got"))
        else:
            print("ok  ", case)
    print("%d passed, %d failed" % (len(cases) - failures, failures))
    return 1 if failures or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
