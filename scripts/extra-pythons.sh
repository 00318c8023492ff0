#!/usr/bin/env bash
# extra-pythons.sh - unpacks CPython interpreters newer than the system's
# (3.13 and 3.14, Debian's builds from its testing suite) into a private
# folder, so the Python stack walker's test (tests/python/test_record_pystack.py)
# checks every frame layout torch's wheels run on, not only the system's.
#
# Nothing is installed system-wide: each package is unpacked under DEST
# (default .cache/pythons) together with the C library it was built against,
# and DEST/python3.N runs it through that library's own loader. Prints the
# interpreters that run, ':'-separated (the format of MH_TEST_PYTHONS), and
# nothing when the packages cannot be fetched: the test then checks fewer
# versions and says which. Idempotent: an interpreter already unpacked is
# reused. x86-64 only.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${MEMHIST_PYTHONS_DIR:-$root/.cache/pythons}"
mirror="${MEMHIST_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
suite=forky
minors=(13 14)

note() { echo "extra-pythons: $*" >&2; }

runs() { "$1" -c "import ctypes, threading" >/dev/null 2>&1; }

# Writes DEST/python3.N: the interpreter started by its own C library's loader,
# with argv[0] kept so sys.executable and the standard library are found.
write_launcher() { # MINOR
    local tree="$dest/root" exe="$dest/python3.$1"
    local libs="$tree/usr/lib/x86_64-linux-gnu"
    cat >"$tree/usr/bin/python3.$1-run" <<EOF
#!/bin/sh
exec "$libs/ld-linux-x86-64.so.2" --library-path "$libs:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" --argv0 "\$0" "$tree/usr/bin/python3.$1" "\$@"
EOF
    chmod +x "$tree/usr/bin/python3.$1-run"
    ln -sfn "$tree/usr/bin/python3.$1-run" "$exe"
}

# Package file names from the suite's index: "package path" lines.
index() {
    local idx="$dest/Packages.xz"
    if [ ! -s "$idx" ]; then
        curl -fsSL --connect-timeout 15 --max-time 120 -o "$idx.part" "$mirror/dists/$suite/main/binary-amd64/Packages.xz" &&
            mv "$idx.part" "$idx" || return 1
    fi
    xz -dc "$idx" | awk '/^Package: /{p=$2} /^Filename: /{print p, $2}'
}

fetch_minor() { # MINOR INDEX-FILE
    local m="$1" list="$2" pkg path
    for pkg in "python3.$m-minimal" "libpython3.$m-minimal" "libpython3.$m-stdlib" libc6 libexpat1 \
        libffi8 libzstd1; do
        path="$(awk -v p="$pkg" '$1 == p {print $2; exit}' "$list")"
        [ -n "$path" ] || { note "no $pkg in Debian $suite"; return 1; }
        local deb="$dest/debs/$(basename "$path")"
        if [ ! -s "$deb" ]; then
            curl -fsSL --connect-timeout 15 --max-time 300 -o "$deb.part" "$mirror/$path" && mv "$deb.part" "$deb" ||
                { note "could not fetch $pkg"; return 1; }
        fi
        dpkg-deb -x "$deb" "$dest/root" || return 1
    done
}

main() {
    [ "$(uname -m)" = x86_64 ] && command -v dpkg-deb >/dev/null && command -v curl >/dev/null &&
        command -v xz >/dev/null || { note "needs x86-64, dpkg-deb, curl and xz"; return 0; }
    mkdir -p "$dest/debs" "$dest/root"
    local found=() list="$dest/packages.txt" m
    for m in "${minors[@]}"; do
        local why="does not run here"
        if ! runs "$dest/python3.$m"; then
            # a cached index may name files the suite has since replaced: refetch it once
            local try
            why="could not be fetched from $mirror"
            for try in cached fresh; do
                [ "$try" = fresh ] && rm -f "$list" "$dest/Packages.xz"
                [ -s "$list" ] || index >"$list" || { rm -f "$list"; continue; }
                fetch_minor "$m" "$list" && write_launcher "$m" && why="does not run here" && break
            done
        fi
        if runs "$dest/python3.$m"; then
            found+=("$dest/python3.$m")
        else
            note "CPython 3.$m from Debian $suite $why"
        fi
    done
    (IFS=:; echo "${found[*]}")
}

main
