#!/usr/bin/env bash
# setup.sh - installs everything memhist needs to build, test and demo, idempotently.
#
# System packages come from Debian/Ubuntu (apt); Python packages from PyPI:
# torch (for the libtorch bridge and for torch's own _memory_viz.py that checks our
# snapshots), matplotlib (plot benchmark), jsonschema (checks the --json outputs against
# docs/schema), perfetto and protobuf (decode `memhist trace`'s protobuf output with the
# classes generated from Perfetto's trace proto), pyarrow and pandas (memhist.read() and
# `memhist export`), duckdb and pyspark with a Java runtime (the queries over an exported
# dataset, tests/export), pytest (the pytest plugin's tests, tests/pytest_plugin). Set
# MEMHIST_SKIP_PIP=1 to skip pip.
# `setup.sh --viewer` also installs headless Chromium and its driver, which the browser tests
# of `memhist view`'s page (tests/python/test_view_page.py; scripts/test.sh asks for them) and
# the memory_viz harness (tests/python/viewer_harness.py, docs/memory-viz.md) drive.
set -euo pipefail

apt_packages=(build-essential cmake pkg-config clang libmsgpack-dev libpng-dev zlib1g-dev
              libcriterion-dev libdw-dev python3 python3-pip python3-venv valgrind clang-format)
if [ "${1:-}" = "--viewer" ]; then
    apt_packages+=(chromium chromium-driver)
fi

missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

# a Java runtime for Spark (tests/export/check_export_spark.py): 17 where Debian has it
if ! command -v java >/dev/null 2>&1; then
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    jre=openjdk-17-jre-headless
    apt-cache show "$jre" >/dev/null 2>&1 || jre=default-jre-headless
    echo "setup: installing $jre"
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "$jre"
fi

if [ "${MEMHIST_SKIP_PIP:-0}" != "1" ]; then
    py_missing=()
    python3 -c "import torch" 2>/dev/null || py_missing+=(torch)
    python3 -c "import matplotlib" 2>/dev/null || py_missing+=(matplotlib)
    python3 -c "import jsonschema" 2>/dev/null || py_missing+=(jsonschema)
    python3 -c "import perfetto.protos.perfetto.trace.perfetto_trace_pb2" 2>/dev/null ||
        py_missing+=(perfetto)
    python3 -c "import google.protobuf" 2>/dev/null || py_missing+=(protobuf)
    python3 -c "import pyarrow.parquet" 2>/dev/null || py_missing+=(pyarrow)
    python3 -c "import pandas" 2>/dev/null || py_missing+=(pandas)
    python3 -c "import duckdb" 2>/dev/null || py_missing+=(duckdb)
    python3 -c "import pyspark" 2>/dev/null || py_missing+=(pyspark)
    python3 -c "import pytest" 2>/dev/null || py_missing+=(pytest)
    if [ ${#py_missing[@]} -gt 0 ]; then
        echo "setup: pip installing ${py_missing[*]} (torch is large; this takes a few minutes once)"
        python3 -m pip install -q "${py_missing[@]}" ||
            python3 -m pip install -q --break-system-packages "${py_missing[@]}"
    fi
fi
echo "setup: all dependencies present"
