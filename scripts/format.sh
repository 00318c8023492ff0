#!/usr/bin/env bash
# format.sh [--check] - formats every C, C++ and header file under git with the
# repository's .clang-format; --check changes nothing and fails, naming the files,
# where a file is not formatted (scripts/test.sh runs it so).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
command -v clang-format >/dev/null || { echo "format.sh: clang-format is missing (scripts/setup.sh installs it)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp')
if [ "${1:-}" = "--check" ]; then
    bad=()
    for f in "${files[@]}"; do
        clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
    done
    if [ ${#bad[@]} -gt 0 ]; then
        echo "format.sh: not formatted by clang-format (run scripts/format.sh): ${bad[*]}" >&2
        exit 1
    fi
    echo "format.sh: ${#files[@]} files formatted"
else
    clang-format -i "${files[@]}"
fi
