#!/usr/bin/env bash
# The README's second command (and what CI runs): installs dependencies, builds everything with
# warnings as errors, and runs the whole test suite. CUDA tests skip where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh --test
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DMATRIXD_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
