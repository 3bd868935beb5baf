#!/usr/bin/env bash
# Issue 13, permanents: the CUDA permanent tests, the `permanent` table (both precisions, dense and
# sparse walks, n = 32, 34, 36) and the `accuracy` table (relative error against exact integer
# permanents, n = 20..36), in one device call (timeouts add up to under 10 minutes). Runs from the
# repository root with the binaries bundled in .gpu/ and writes its logs under $OUT:
#
#   cmake --build build -j2 --target matrixd_core_test matrixd_bench
#   ../shared/gpu/bundle.sh .gpu build/tests/matrixd_core_test build/tests/bench/matrixd_bench
#   (device tool, carry [".gpu"]) tests/gpu/permanent-precision.sh
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" permanent-precision

gpu_info
log "matrixd_core_test --gtest_filter='*Permanent*'"
run_gtest 120 "${out}/permanent-tests.txt" "${bin}/matrixd_core_test" --gtest_filter='*Permanent*' --gtest_brief=1
log "matrixd_bench --no_cpu --tables=permanent --perm_n=36 --repeats=3"
timeout 200 "${bin}/matrixd_bench" --no_cpu --tables=permanent --perm_n=36 --repeats=3 \
  >"${out}/permanent-table.txt" 2>&1
log "  exit $?"
log "matrixd_bench --no_cpu --tables=accuracy --accuracy_sizes=20,24,28,32 --accuracy_samples=5"
timeout 120 "${bin}/matrixd_bench" --no_cpu --tables=accuracy --accuracy_sizes=20,24,28,32 \
  --accuracy_samples=5 >"${out}/accuracy-table.txt" 2>&1
log "  exit $?"
# n = 36: the exact INT64 walk takes ~15 primes x ~2 s per matrix.
log "matrixd_bench --no_cpu --tables=accuracy --accuracy_sizes=36 --accuracy_samples=2"
timeout 130 "${bin}/matrixd_bench" --no_cpu --tables=accuracy --accuracy_sizes=36 \
  --accuracy_samples=2 >"${out}/accuracy-table-36.txt" 2>&1
log "  exit $?"
