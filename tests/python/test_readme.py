"""The README stays short and every page it leads to is there.

Checks that README.md is at most 300 lines; that every relative link of
README.md and of the pages in docs/ names a file that exists and, with a
#fragment, a heading of that file; that every page in docs/ is reached from
the README, directly or through another page; and that the commands of the
README's shell examples run: each `memhist ...` line (or `$ memhist ...`
prompt of an example output) that reads a recording
runs on a short simulated run in place of run.memhist (those that record or
simulate a program, which need torch, are left to the virtual-device tests).
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.environ.get("MH_SOURCE_DIR",
                                      os.path.join(os.path.dirname(__file__), "..", "..")))
MEMHIST = os.environ.get("MEMHIST")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
MAX_LINES = 300


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def headings(path):
    with open(path, encoding="utf-8") as f:
        return {slug(l.lstrip("#")) for l in f if l.startswith("#")}


def check_links(path, problems, reached):
    text = open(path, encoding="utf-8").read()
    base = os.path.dirname(path)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        file, _, frag = target.partition("#")
        dest = os.path.normpath(os.path.join(base, file)) if file else path
        rel = os.path.relpath(path, ROOT)
        if not os.path.exists(dest):
            problems.append("%s: link to %s: no such file" % (rel, target))
            continue
        reached.add(dest)
        if frag and dest.endswith(".md") and frag not in headings(dest):
            problems.append("%s: link to %s: no such heading" % (rel, target))


def check_reach(problems):
    readme = os.path.join(ROOT, "README.md")
    seen, todo = set(), [readme]
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen.add(page)
        reached = set()
        check_links(page, problems, reached)
        todo.extend(p for p in reached if p.endswith(".md"))
    docs = os.path.join(ROOT, "docs")
    for name in sorted(os.listdir(docs)):
        page = os.path.join(docs, name)
        if name.endswith(".md") and page not in seen:
            problems.append("docs/%s: not reached from README.md" % name)


def readme_commands():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    for lang, block in re.findall(r"```(\w*)\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():  # continued lines joined
            line = line.split("#", 1)[0].strip()
            if line.startswith("$ "):
                line = line[2:]
            elif lang != "sh":
                continue
            if line.startswith("memhist "):
                yield shlex.split(line)[1:]


def check_commands(problems):
    if not MEMHIST:
        print("skipping the README's commands: no MEMHIST")
        return
    with tempfile.TemporaryDirectory(prefix="mh-readme-") as work:
        run = os.path.join(work, "run.memhist")
        subprocess.run([MEMHIST, "simulate", "--steps", "4", "-o", run], check=True,
                       capture_output=True)
        ran = 0
        for args in readme_commands():
            if "--" in args or args[0] in ("record", "simulate") or "--version" in args:
                continue
            args = [a.replace("run.memhist", run) for a in args]
            r = subprocess.run([MEMHIST] + args, cwd=work, capture_output=True, text=True)
            ran += 1
            if r.returncode != 0:
                problems.append("README: memhist %s exits %d: %s"
                                % (" ".join(args), r.returncode, r.stderr.strip()[-300:]))
        if ran < 6:
            problems.append("README: only %d commands found to run" % ran)


def main():
    problems = []
    n = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read().count("\n")
    if n > MAX_LINES:
        problems.append("README.md: %d lines, more than %d" % (n, MAX_LINES))
    check_reach(problems)
    check_commands(problems)
    for p in problems:
        print(p)
    print("%d problem(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
