"""The man page and shell completions match the tool's help texts.

cmake/help_docs.py generates them at build time into MH_BINARY_DIR/docs.
Checks that the man page has a section for every command `memhist --help`
lists, holds every option of every command's help, and renders without
groff warnings; that bash completion completes command names, options and
option choices, and commands after `record --`; that the zsh completion
parses. Environment: MH_BINARY_DIR.
"""
import os
import re
import shutil
import subprocess
import sys

BIN = os.environ["MH_BINARY_DIR"]
MEMHIST = os.path.join(BIN, "memhist")
DOCS = os.path.join(BIN, "docs")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120)


def complete(words):
    """COMPREPLY of the bash completion for the command line `words` (the
    last word is the one being completed)."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); '
              '_memhist; printf "%s\\n" "${COMPREPLY[@]}"')
    p = run("bash", "-c", script, "bash", os.path.join(DOCS, "bash", "memhist"), *words)
    check(p.returncode == 0, "bash completion runs: %s" % p.stderr)
    return set(p.stdout.split())


commands = re.findall(r"^  (\w+)\s{2,}", run(MEMHIST, "--help").stdout.split("commands:")[1], re.M)
check(len(commands) > 5, "commands listed by --help: %s" % commands)
man = open(os.path.join(DOCS, "man1", "memhist.1")).read()
for name in commands:
    if name == "help":
        continue
    check((".SS %s\n" % name) in man, "man page section for %s" % name)
    text = run(MEMHIST, "help", name).stdout
    for opt in re.findall(r"(?m)^\s+(--[a-z][\w-]*)", text.split("options:")[-1]):
        check(opt.replace("-", "\\-") in man, "man page has %s %s" % (name, opt))
        check(opt in complete(["memhist", name, opt[:3]]), "bash completes %s %s" % (name, opt))
if shutil.which("groff"):
    p = run("groff", "-man", "-Tutf8", "-ww", "-z", os.path.join(DOCS, "man1", "memhist.1"))
    check(p.returncode == 0 and not p.stderr, "man page renders without warnings: %s" % p.stderr)

check(complete(["memhist", "rep"]) == {"report"}, "bash completes a command name")
check(complete(["memhist", "help", "sim"]) == {"simulate"}, "bash completes help's argument")
check(complete(["memhist", "plot", "--kind", "s"]) == {"segments"}, "bash completes an option's choices")
check(complete(["memhist", "record", "--stacks", ""]) == {"python", "all", "none"}, "record --stacks choices")
check("python3" in complete(["memhist", "record", "-o", "x", "--", "python"]), "a command after record --")
if shutil.which("zsh"):
    p = run("zsh", "-n", os.path.join(DOCS, "zsh", "_memhist"))
    check(p.returncode == 0, "zsh completion parses: %s" % p.stderr)
else:
    print("note: zsh is not installed; the zsh completion's syntax is not checked")

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
