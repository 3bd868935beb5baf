#!/usr/bin/env bash
# Issue 13 on a lent GPU: the exact determinant's one-piece products. The CUDA tests of the exact
# determinant, the modular LU, the fused product kernel (core/cuda/fused_modular_product.h), the
# CRT and the certificates (fused products bit for bit against cuBLAS), the fused kernel's
# tests again under compute-sanitizer (memcheck, racecheck, synccheck); then the `exact`
# table at n = 1000 and 2000 (20-bit entries, GPU alone) for this binary with its products fused,
# and through cuBLAS (--exact_products=fused,cublas), and for the binary before
# the change when it is bundled as matrixd_bench.before, the two alternated twice so that both see
# the same host; then one FLINT run at n = 1000 (about 7-10 s) beside this binary, for FLINT/ours
# on this host. About 3-4 minutes. Runs from the repository root with the binaries bundled in
# .gpu/ and writes its logs under $OUT:
#
#   tests/gpu/exactdet-run.sh
#
# Preparing the run (here, before the device call):
#   cmake --build build -j2 --target matrixd_core_test matrixd_bench
#   ../shared/gpu/bundle.sh .gpu build/tests/matrixd_core_test build/tests/bench/matrixd_bench
#   cp BEFORE/matrixd_bench .gpu/bin/matrixd_bench.before    # optional: main's binary
# then run this script through the device tool with carry [".gpu"].
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" exactdet

gpu_info
log "matrixd_core_test: exact determinants, modular LU, CRT, certificates, fused products"
run_gtest 240 "${out}/core.txt" "${bin}/matrixd_core_test" --gtest_brief=1 \
  --gtest_filter='CudaExactDeterminant*:CudaModularLu*:CudaFusedModularProduct*:EarlyStop*:CrtReconstruction*:ModularArithmetic*:*ExactCertificate*:*DeterminantTest.Exact*:*DeterminantTest.Modular*:ExactPrimes*:BalancedModulus*:Hadamard*'
grep -E 'Failure|Expected|actual|Which is|FAILED' "${out}/core.txt" | head -60 | tee -a "${report}"
# The fused kernel's pipeline under compute-sanitizer: out-of-bounds copies (memcheck), shared-memory
# races between its stages (racecheck) and its barriers (synccheck); the latter two leave out the
# test that only compares with cuBLAS (whose kernels are not ours to check).
sanitize memcheck 'CudaFusedModularProduct.*'
sanitize racecheck 'CudaFusedModularProduct.M*:CudaFusedModularProduct.L*'
sanitize synccheck 'CudaFusedModularProduct.M*:CudaFusedModularProduct.L*'

# bench LABEL PROGRAM ARGS...: the exact table, GPU alone, n = 1000 and 2000, into the report.
bench() {
  local label=$1 program=$2
  shift 2
  log "${label}: $(basename "${program}") --tables=exact --exact_sizes=1000,2000 $*"
  timeout 120 "${program}" --tables=exact --no_cpu --no_flint --exact_sizes=1000,2000 \
    --exact_bits=20 --repeats=5 "$@" >"${out}/bench_${label}.txt" 2>&1
  log "  exit $?"
  grep -E '^(1000|2000) |GPU phases|failed|MISMATCH' "${out}/bench_${label}.txt" | tee -a "${report}"
}

before=${bin}/matrixd_bench.before
for round in 1 2; do
  bench "after_${round}" "${bin}/matrixd_bench" --exact_products=fused,cublas
  if [[ -x ${before} ]]; then
    bench "before_${round}" "${before}"
  else
    log "no ${before}: the cublas rows of this binary stand for the products before"
  fi
done

log "matrixd_bench --tables=exact with FLINT on one core, n = 1000 (this binary)"
timeout 120 "${bin}/matrixd_bench" --tables=exact --no_cpu --exact_sizes=1000 --exact_bits=20 \
  --repeats=5 >"${out}/bench_flint.txt" 2>&1
log "  exit $?"
tee -a "${report}" <"${out}/bench_flint.txt"
