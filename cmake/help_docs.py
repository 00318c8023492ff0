"""help_docs.py MEMHIST OUTDIR - the man page and shell completions of memhist,
generated from the tool's own help texts at build time (cmake/install.cmake),
so they always say what the built tool does.

Writes OUTDIR/man1/memhist.1 (roff), OUTDIR/bash/memhist (bash-completion)
and OUTDIR/zsh/_memhist (zsh). Commands come from `memhist --help`; each
command's options, and their choices when the help shows them as a|b|c, from
the "options:" section of `memhist help COMMAND`.
"""
import os
import re
import subprocess
import sys

OPTION_RE = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)(?:[ =]([\w.]+(?:\|[\w.]+)+))?")


def run(tool, *args):
    return subprocess.run([tool] + list(args), capture_output=True, text=True, check=True).stdout


def commands(tool):
    """(name, summary) of every command, in the order `memhist --help` lists them."""
    text = run(tool, "--help")
    block = text.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    return [tuple(re.split(r"\s{2,}", line.strip(), 1)) for line in block.splitlines() if line.strip()]


def options(help_text):
    """{option: [choices]} from the option column of the "options:" section;
    choices written as a|b|c there or on the usage line."""
    found = {}
    section = help_text.split("\noptions:\n", 1)
    if len(section) < 2:
        return found
    for line in section[1].split("\n\n", 1)[0].splitlines():
        if not line.lstrip().startswith("-"):
            continue
        column = re.split(r"\s{2,}", line.strip(), 1)[0]
        for opt, choices in OPTION_RE.findall(column):
            found.setdefault(opt, words(choices))
    usage = help_text.split("usage:", 1)[-1].split("\n\n", 1)[0]
    for opt, choices in OPTION_RE.findall(usage):
        if choices and opt in found and not found[opt]:
            found[opt] = words(choices)
    for opt in ("-h", "--help", "-q", "--quiet"):  # every command takes them
        found.setdefault(opt, [])
    return found


def words(choices):
    """The literal choices of a|b|c (placeholders such as SECONDS left out)."""
    return [c for c in choices.split("|") if c and not c.isupper()] if choices else []


def roff(text):
    lines = []
    for line in text.rstrip("\n").split("\n"):
        line = line.replace("\\", "\\e").replace("-", "\\-")
        lines.append("\\&" + line if line.startswith((".", "'")) else line)
    return "\n".join(lines)


def man_page(tool, cmds, helps):
    version = run(tool, "--version").split()[1]
    out = ['.TH MEMHIST 1 "" "memhist %s" "User Commands"' % version,
           ".SH NAME", "memhist \\- GPU memory history recorder and visualizer",
           ".SH SYNOPSIS", ".B memhist", ".I COMMAND", "[OPTIONS] [FILE...]",
           ".SH DESCRIPTION",
           "memhist records the GPU memory history of a PyTorch or CUDA program and answers",
           "questions about it: peaks, out-of-memory errors, fragmentation, layers.",
           "Every command has \\fB\\-h\\fR; \\fBmemhist help\\fR \\fICOMMAND\\fR shows the same text."]
    common = run(tool, "--help").split("Every command also takes:\n", 1)
    if len(common) == 2:  # the options of every command, as `memhist --help` lists them
        out += [".SH OPTIONS", ".nf", roff(common[1].split("\n\n", 1)[0]), ".fi"]
    out += [".SH COMMANDS"]
    for name, summary in cmds:
        out += [".SS %s" % name, ".nf", roff(helps[name]), ".fi"]
    out += [".SH EXIT STATUS", "0 on success, 1 on failure, 2 on a usage error;",
            "\\fBmemhist record\\fR exits with the recorded program's status."]
    return "\n".join(out) + "\n"


def bash_completion(cmds, opts):
    names = " ".join(n for n, _ in cmds)
    cases = []
    for name, _ in cmds:
        choice_cases = "".join("            %s) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return;;\n"
                               % (o, " ".join(c)) for o, c in opts[name].items() if c)
        cases.append("        %s)\n            opts=\"%s\"\n%s            ;;"
                     % (name, " ".join(opts[name]), ("            case $prev in\n" + choice_cases
                                                     + "            esac\n") if choice_cases else ""))
    return """# bash completion for memhist, generated from its help texts (cmake/help_docs.py).
_memhist() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} opts=""
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "%s --help --version" -- "$cur"))
        return
    fi
    local i
    for ((i = 2; i < COMP_CWORD; i++)); do
        if [[ ${COMP_WORDS[1]} == record && ${COMP_WORDS[i]} == -- ]]; then
            COMPREPLY=($(compgen -c -f -- "$cur"))
            return
        fi
    done
    case ${COMP_WORDS[1]} in
        help) COMPREPLY=($(compgen -W "%s" -- "$cur")); return;;
%s
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o filenames -F _memhist memhist
""" % (names, names, "\n".join(cases))


def zsh_completion(cmds, opts):
    described = "\n".join("        '%s:%s'" % (n, s.replace("'", "'\\''").replace(":", "\\:")) for n, s in cmds)
    cases = []
    for name, _ in cmds:
        specs = []
        for o, c in opts[name].items():
            action = ":value:(%s)" % " ".join(c) if c else ""
            specs.append("'%s%s'" % (o, action))
        cases.append("        %s) _arguments -s %s '*:file:_files' ;;" % (name, " ".join(specs)))
    return """#compdef memhist
# zsh completion for memhist, generated from its help texts (cmake/help_docs.py).
_memhist() {
    local -a commands
    commands=(
%s
    )
    if (( CURRENT == 2 )); then
        _describe 'memhist command' commands
        return
    fi
    shift words
    (( CURRENT-- ))
    case $words[1] in
        help) _describe 'memhist command' commands ;;
%s
    esac
}
_memhist "$@"
""" % (described, "\n".join(cases))


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: help_docs.py MEMHIST OUTDIR\n")
        return 2
    tool, outdir = sys.argv[1:]
    cmds = [c for c in commands(tool) if c[0] != "help"]
    helps = {name: run(tool, "help", name) for name, _ in cmds}
    opts = {name: options(helps[name]) for name, _ in cmds}
    for sub, name, text in (("man1", "memhist.1", man_page(tool, cmds, helps)),
                            ("bash", "memhist", bash_completion(cmds, opts)),
                            ("zsh", "_memhist", zsh_completion(cmds, opts))):
        os.makedirs(os.path.join(outdir, sub), exist_ok=True)
        with open(os.path.join(outdir, sub, name), "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
