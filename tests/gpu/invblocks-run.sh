#!/usr/bin/env bash
# Issue 15, the diagonal blocks' inversion on a lent GPU: the triangular solve tests (every block
# inverse against a host substitution, all four element types, both block sizes, partial last
# blocks, lower/upper, unit/non-unit, badly scaled; the solves against cuBLAS trsm, getrs and
# potrs, which use the inverses), then the `condition` tables at n = 4096, 8192, 16384, whose
# triangle table has the inversion's time (`invert`, float64, 128-row blocks; target <= 30 us).
# One device call of a few minutes. Runs from the repository root with the binaries bundled in
# .gpu/ and writes its logs under $OUT:
#
#   tests/gpu/invblocks-run.sh
#
# Preparing the run (here, before the device call):
#   cmake --build build -j2 --target matrixd_core_test matrixd_bench
#   ../shared/gpu/bundle.sh .gpu build/tests/matrixd_core_test build/tests/bench/matrixd_bench
# then run this script through the device tool with carry [".gpu"].
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" invblocks

gpu_info
log "matrixd_core_test: CudaTriangularSolve*"
run_gtest 240 "${out}/core.txt" "${bin}/matrixd_core_test" --gtest_brief=1 \
  --gtest_filter='CudaTriangularSolve*'
grep -E '^\[  FAILED  \]|Failure|error|bound' "${out}/core.txt" | head -40 | tee -a "${out}/summary.txt"
log "matrixd_bench --tables=condition (GPU, n = ${SIZES:-4096,8192,16384})"
timeout 300 "${bin}/matrixd_bench" --tables=condition --condition_sizes="${SIZES:-4096,8192,16384}" \
  --repeats=5 --no_cpu >"${out}/bench_condition.txt" 2>&1
log "  exit $?"
tee -a "${out}/summary.txt" <"${out}/bench_condition.txt"
