#!/usr/bin/env bash
# Issue 15 on a lent GPU: iterative refinement and deterministic requests. The CUDA refine and
# repeatability tests on the device, then the `refine` table (an LU solve refined with float32 and
# TF32 factors through cuSOLVER IRS, and with float64 factors and double-double residuals, next
# to the plain cusolverDnDgetrf + getrs solve, at n = 4096 and 8192) and the `deterministic`
# table. One device call, under the tool's 10 minutes. Runs from the repository root with the
# binaries bundled in .gpu/ and writes its logs under $OUT:
#
#   tests/gpu/refine-run.sh
#
# Preparing the run (here, before the device call):
#   cmake --build build -j2 --target matrixd_core_test matrixd_bench
#   ../shared/gpu/bundle.sh .gpu build/tests/matrixd_core_test build/tests/bench/matrixd_bench
# then run this script through the device tool with carry [".gpu"].
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" refine

gpu_info
log "matrixd_core_test: refinement, repeatability, Freivalds"
run_gtest 180 "${out}/core.txt" "${bin}/matrixd_core_test" --gtest_brief=1 \
  --gtest_filter='*Refine*:*Repeatability*:*Freivalds*'
grep -E 'Failure|Expected|actual|FAILED' "${out}/core.txt" | head -40 | tee -a "${out}/summary.txt"
log "matrixd_bench --tables=refine,deterministic (GPU, n = 4096, 8192)"
timeout 330 "${bin}/matrixd_bench" --tables=refine,deterministic --refine_sizes=4096,8192 \
  --repeats=5 --no_cpu >"${out}/bench_refine.txt" 2>&1
log "  exit $?"
tee -a "${out}/summary.txt" <"${out}/bench_refine.txt"
