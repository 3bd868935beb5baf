#!/usr/bin/env bash
# Issue 15 on a lent GPU: the condition-estimate tests on the device (the one- and two-vector triangular
# solves against cuBLAS trsm, getrs and potrs; the block estimator, Factorize with
# estimate_condition, the CUDA determinant's rcond and error bound, repeatability), then the
# `condition` table (the estimate next to cuSOLVER getrf/potrf/geqrf and the LU determinant at
# n = 4096 and 8192, float64; the determinant LU rows are the determinant path), followed by the
# table of where the estimate's time goes (getrs with 1 and 2 right-hand sides, the estimator's
# own LU solve with 1 and 2 vectors, its triangular solves against cuBLAS dtrsv (also with 2
# vectors, and the diagonal blocks' inversion), the estimate with 1 and 2 columns on its solves
# and with 1 on getrs, the number of block solves). SIZES=4096,8192,16384 for issue 15's sizes.
# With ${bin}/matrixd_bench.before (an older build bundled beside it), its `condition` table too,
# for a before/after on one host, alternating with this build's ROUNDS times (default 1; odd
# rounds this build first, even rounds the older one). SANITIZE=1 first runs the float64 triangular-solve tests under
# compute-sanitizer memcheck, and the zero-pivot ones (no cuBLAS reference) under synccheck. One
# device call, under the tool's 10 minutes.
# Runs from the repository root with the binaries bundled in .gpu/ and writes its logs under $OUT:
#
#   tests/gpu/condition-run.sh
#
# Preparing the run (here, before the device call):
#   cmake --build build -j2 --target matrixd_core_test matrixd_bench
#   ../shared/gpu/bundle.sh .gpu build/tests/matrixd_core_test build/tests/bench/matrixd_bench
# then run this script through the device tool with carry [".gpu"].
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" condition

gpu_info
if [[ ${SANITIZE:-0} == 1 ]]; then
  # synccheck only where no cuBLAS reference runs: it reports cuBLAS's own trsm kernel
  # (trsm_ln_up_kernel, divergent barrier) and the process stops there.
  sanitize memcheck 'CudaTriangularSolve/1.*'
  sanitize synccheck 'CudaTriangularSolve/*.ZeroPivot*'
fi
log "matrixd_core_test: condition estimates, factorize accuracy, determinant error bounds"
run_gtest 240 "${out}/core.txt" "${bin}/matrixd_core_test" --gtest_brief=1 \
  --gtest_filter='CudaTriangularSolve*:ConditionEstimate*:CpuCondition*:CudaCondition*:*FactorizeAccuracy*:*DeterminantTest.ErrorBound*:*DeterminantTest.Singular*:*DeterminantTest.Condensation*:*Factorize*:*Repeatab*:CudaPinnedStaging*:CudaTransposeAbsSums*:CudaScaleRows*:CudaMemoryPool*'
grep -E '^\[  FAILED  \]' "${out}/core.txt" | tee -a "${out}/summary.txt"
condition_table() {  # binary, log name
  log "$(basename "$1") --tables=condition (GPU, n = ${SIZES:-4096,8192})"
  timeout 300 "$1" --tables=condition --condition_sizes="${SIZES:-4096,8192}" --repeats=5 \
    --no_cpu >"${out}/$2" 2>&1
  log "  exit $?"
  tee -a "${out}/summary.txt" <"${out}/$2"
}
# Odd rounds run this build first, even rounds the older one, so that neither always goes first.
for ((round = 1; round <= ${ROUNDS:-1}; ++round)); do
  if [[ -x ${bin}/matrixd_bench.before ]] && ((round % 2 == 0)); then
    condition_table "${bin}/matrixd_bench.before" "bench_condition_before_${round}.txt"
  fi
  condition_table "${bin}/matrixd_bench" "bench_condition_${round}.txt"
  if [[ -x ${bin}/matrixd_bench.before ]] && ((round % 2 == 1)); then
    condition_table "${bin}/matrixd_bench.before" "bench_condition_before_${round}.txt"
  fi
done
