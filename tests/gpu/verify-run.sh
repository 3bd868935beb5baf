#!/usr/bin/env bash
# Issue 15 on a lent GPU: the Freivalds (thin products included), certificate, provenance and
# repeatability tests on the device, then the `verify` table (Freivalds' check, each way of running
# it, next to the unverified cuBLAS gemm at n = 4096, 8192 and 16384, float64 and float32, and its
# thin product staged and unstaged next to the copy kernel); the thin products' tests under
# compute-sanitizer's memcheck, racecheck and synccheck unless SANITIZE=0.
# One device call, under the tool's 10 minutes. Runs from the repository root with the binaries
# bundled in .gpu/ and writes its logs under $OUT:
#
#   tests/gpu/verify-run.sh
#
# Preparing the run (here, before the device call):
#   cmake --build build -j2 --target matrixd_core_test matrixd_bench
#   ../shared/gpu/bundle.sh .gpu build/tests/matrixd_core_test build/tests/bench/matrixd_bench
# then run this script through the device tool with carry [".gpu"].
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" verify

gpu_info
log "matrixd_core_test: Freivalds, certificates, repeatability"
run_gtest 180 "${out}/core.txt" "${bin}/matrixd_core_test" --gtest_brief=1 \
  --gtest_filter='*Freivalds*:*ThinProduct*:*VerifiedMultiply*:*ExactCertificate*:*Repeatability*'
if [[ ${SANITIZE:-1} == 1 ]]; then
  # The staged thin product's bulk copies and barriers (core/cuda/bulk_copy.cuh).
  for tool in memcheck racecheck synccheck; do sanitize "${tool}" '*ThinProduct*'; done
fi
log "matrixd_bench --tables=verify (GPU, n = ${VERIFY_SIZES:-4096,8192,16384})"
timeout 360 "${bin}/matrixd_bench" --tables=verify --verify_sizes=${VERIFY_SIZES:-4096,8192,16384} --repeats=${REPEATS:-5} --no_cpu \
  >"${out}/bench_verify.txt" 2>&1
log "  exit $?"
tee -a "${out}/summary.txt" <"${out}/bench_verify.txt"
