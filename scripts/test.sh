#!/usr/bin/env bash
# test.sh - installs what is missing, builds memhist and runs every test:
#   1. the full suite (Criterion unit tests, CLI golden tests, Python
#      cross-checks, torch bridge tests; GPU tests skip without a GPU), the
#      Python stack walker also on CPython 3.13 and 3.14 (scripts/extra-pythons.sh);
#   2. the CLI analyses on every test input under Valgrind memcheck
#      (scripts/memcheck.sh: uninitialised reads fail the build);
#   3. the C tests again under ASan+UBSan (clang);
#   4. the recorder stress program under TSan;
#   5. a short run of every libFuzzer target (clang);
# and, first, that every C/C++ file is formatted by clang-format (scripts/format.sh --check).
# Set MEMHIST_FUZZ_SECONDS (default 20) to fuzz longer, 0 to skip fuzzing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
"$root/scripts/setup.sh" --viewer  # Chromium and chromedriver: the page tests (test_view_page.py)

failed=()
run_ctest() { # DIR LABEL-ARGS...
    local dir="$1"
    shift
    (cd "$root/$dir" && ctest --output-on-failure --timeout 900 "$@") || failed+=("$dir $*")
}

# CPython 3.13 and 3.14 beside the system's, for the Python stack walker's test
# (tests/python/test_record_pystack.py reads MH_TEST_PYTHONS)
extra_pythons="$(scripts/extra-pythons.sh)"
export MH_TEST_PYTHONS="${MH_TEST_PYTHONS:+$MH_TEST_PYTHONS:}$extra_pythons"
echo "== Python stack walker also checked on: ${extra_pythons:-no other interpreter}"

echo "== formatting (clang-format, .clang-format)"
scripts/format.sh --check || failed+=("format")

echo "== build (RelWithDebInfo) and full suite"
scripts/build.sh build -DMEMHIST_TESTS=ON -DMEMHIST_SANITIZE= -DMEMHIST_FUZZ=OFF
run_ctest build

echo "== CLI analyses under Valgrind memcheck"
scripts/memcheck.sh build || failed+=("memcheck")

echo "== unit tests under ASan+UBSan"
# clang: its UBSan also stops on arithmetic on null pointers, which gcc's passes
CC=clang CXX=clang++ scripts/build.sh build-asan -DMEMHIST_SANITIZE=address -DMEMHIST_WITH_TORCH=OFF -DMEMHIST_BENCH=OFF
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 run_ctest build-asan -LE "python|gpu|torch"

echo "== recorder stress under TSan"
# Criterion cannot start under TSan, so the recorder's TSan tests are plain programs (tests/tsan).
MEMHIST_TARGETS="tsan_stress_recorder" scripts/build.sh build-tsan -DMEMHIST_SANITIZE=thread \
    -DMEMHIST_WITH_TORCH=OFF -DMEMHIST_BENCH=OFF
TSAN_OPTIONS=halt_on_error=1 run_ctest build-tsan -L tsan

fuzz_seconds="${MEMHIST_FUZZ_SECONDS:-20}"
if [ "$fuzz_seconds" != "0" ] && command -v clang >/dev/null; then
    echo "== fuzzing each parser for ${fuzz_seconds}s"
    fuzzers="$(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//' | tr '\n' ' ')"
    CC=clang CXX=clang++ MEMHIST_TARGETS="$fuzzers" scripts/build.sh build-fuzz -DMEMHIST_FUZZ=ON \
        -DMEMHIST_TESTS=ON -DMEMHIST_WITH_TORCH=OFF -DMEMHIST_BENCH=OFF
    for f in "$root"/build-fuzz/tests/fuzz_*; do
        [ -x "$f" ] || continue
        name="$(basename "$f")"
        work="$root/build-fuzz/corpus-$name"
        mkdir -p "$work"
        # seeds: tests/fuzz/corpus/<word> where <word> is part of the fuzzer's name
        # or the word on a "seeds: WORD" line of its source
        also="$(sed -n 's/.*seeds: \([a-z]*\).*/\1/p' "$root/tests/fuzz/$name.c" | head -1)"
        for seeds in "$root"/tests/fuzz/corpus/*/; do
            word="$(basename "$seeds")"
            if [ "$word" = "$also" ]; then
                cp -r "$seeds". "$work"/
            else
                case "$name" in *"$word"*) cp -r "$seeds". "$work"/ ;; esac
            fi
        done
        if UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "$f" -max_total_time="$fuzz_seconds" \
            -rss_limit_mb=2048 -artifact_prefix="$root/build-fuzz/$name-" "$work" \
            >"$root/build-fuzz/$name.log" 2>&1; then
            echo "fuzz $name: $(grep -Eo 'Done [0-9]+ runs' "$root/build-fuzz/$name.log" | tail -1)"
        else
            tail -30 "$root/build-fuzz/$name.log"
            failed+=("fuzz $name")
        fi
    done
fi

if [ ${#failed[@]} -gt 0 ]; then
    printf 'FAILED: %s\n' "${failed[@]}"
    exit 1
fi
echo "all test stages passed"
