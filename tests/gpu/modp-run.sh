#!/usr/bin/env bash
# Issue 13 on a lent GPU: det mod p by the device's blocked LU (core/cuda/modular_lu.h). The CUDA
# modular tests on the device (the LU against the CPU backend's residues for every prime range,
# the condensation's modular paths, the exact determinant's certificates), then the `modular`
# table against NTL on one core at n = 4096 (with the per-phase device times of the GPU runs),
# then the GPU alone at n = 8192, then the exact determinant (batched LU over random 24-bit primes,
# early stop: core/cuda/exact_determinant.h) against FLINT's fmpz_mat_det on one core at n = 500
# and 1000 (about 12 s of FLINT) and alone at n = 2000 and 3000. `modp` runs only the modular
# part, `exact` only the exact part (its tests and tables, about 3 minutes at most; the exact
# table also prints the host part of each size, timed on the device host's CPU); both, the
# default, may need the whole of a device call's 10 minutes. Runs from the
# repository root with the binaries bundled in .gpu/ and writes its logs under $OUT:
#
#   tests/gpu/modp-run.sh [modp|exact|all]
#
# Preparing the run (here, before the device call):
#   cmake --build build -j2 --target matrixd_core_test matrixd_bench
#   ../shared/gpu/bundle.sh .gpu build/tests/matrixd_core_test build/tests/bench/matrixd_bench
# (bundle.sh copies libflint and its libraries — libflint.so.17, libmpfr, libntl, libgmp — into
# .gpu/lib with the rest.)
# then run this script through the device tool with carry [".gpu"].
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" modp

part=${1:-all}

gpu_info
if [[ $part == modp || $part == all ]]; then
log "matrixd_core_test: modular LU, the staged int32 upload, balanced residues, condensation mod p, exact determinants"
run_gtest 270 "${out}/core.txt" "${bin}/matrixd_core_test" --gtest_brief=1 \
  --gtest_filter='CudaModularLu*:*PinnedStaging*:BalancedModulus*:BlockInverse*:*CudaCondensation*Modular*:*DeterminantTest.Modular*:*ExactCertificate*:*Exact*'
grep -E 'Failure|Expected|actual|Which is|FAILED' "${out}/core.txt" | head -60 | tee -a "${out}/summary.txt"
log "matrixd_bench --tables=modular (GPU vs NTL, n = 4096; about a minute of NTL; GPU rows with and without look-ahead)"
timeout 200 "${bin}/matrixd_bench" --tables=modular --no_cpu --ntl_n=4096 --repeats=5 \
  --primes=2147483629,65521,67108859 --modp_look_ahead=1,0 >"${out}/bench_modular.txt" 2>&1
log "  exit $?"
tee -a "${out}/summary.txt" <"${out}/bench_modular.txt"
log "matrixd_bench --tables=modular (the upload overlapped with the LU: piece rows, overlap off)"
timeout 120 "${bin}/matrixd_bench" --tables=modular --no_cpu --ntl_n=4096 --repeats=5 \
  --primes=2147483629 --modp_piece_rows=0,512,256,128 --modp_overlap=1,0 \
  >"${out}/bench_modular_overlap.txt" 2>&1
log "  exit $?"
tee -a "${out}/summary.txt" <"${out}/bench_modular_overlap.txt"
log "matrixd_bench --tables=modular (GPU alone, n = 8192)"
timeout 90 "${bin}/matrixd_bench" --tables=modular --no_cpu --no_ntl --ntl_n=8192 --repeats=3 \
  --primes=2147483629,65521,4611686018427387847 --modp_look_ahead=1,0 \
  >"${out}/bench_modular_8192.txt" 2>&1
log "  exit $?"
tee -a "${out}/summary.txt" <"${out}/bench_modular_8192.txt"
fi
if [[ $part == exact || $part == all ]]; then
log "matrixd_core_test: exact determinants on the GPU, early stop, the CRT, the batched modular LU"
run_gtest 150 "${out}/core_exact.txt" "${bin}/matrixd_core_test" --gtest_brief=1 \
  --gtest_filter='CudaExactDeterminant*:EarlyStop*:CrtReconstruction*:ModularArithmetic*:*ExactCertificate*:*DeterminantTest.Exact*:CudaMemoryPool*:CudaModularLu*'
grep -E 'Failure|Expected|actual|Which is|FAILED' "${out}/core_exact.txt" | head -60 | tee -a "${out}/summary.txt"
log "matrixd_bench --tables=exact (GPU exact determinant vs FLINT on one core, n = 500, 1000)"
timeout 100 "${bin}/matrixd_bench" --tables=exact --no_cpu --exact_sizes=500,1000 --exact_bits=20 \
  --repeats=5 >"${out}/bench_exact.txt" 2>&1
log "  exit $?"
tee -a "${out}/summary.txt" <"${out}/bench_exact.txt"
log "matrixd_bench --tables=exact (GPU alone, n = 2000, 3000)"
timeout 100 "${bin}/matrixd_bench" --tables=exact --no_cpu --no_flint --exact_sizes=2000,3000 \
  --repeats=2 >"${out}/bench_exact_large.txt" 2>&1
log "  exit $?"
tee -a "${out}/summary.txt" <"${out}/bench_exact_large.txt"
fi
