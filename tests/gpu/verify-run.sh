#!/usr/bin/env bash
# Issue 15 on a lent GPU: the Freivalds, certificate, provenance and repeatability tests on the
# device, then the `verify` table (Freivalds' check next to cuBLAS gemm at n = 4096 and 8192,
# float64 and float32). One device call, under the tool's 10 minutes. Runs from the repository
# root with the binaries bundled in .gpu/ and writes its logs under $OUT:
#
#   tests/gpu/verify-run.sh
#
# Preparing the run (here, before the device call):
#   cmake --build build -j2 --target matrixd_core_test matrixd_bench
#   ../shared/gpu/bundle.sh .gpu build/tests/matrixd_core_test build/tests/bench/matrixd_bench
# then run this script through the device tool with carry [".gpu"].
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:?OUT must name the output directory}
export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=${BIN:-.gpu/bin}

log() { echo "## $(date -u +%H:%M:%S) $*" | tee -a "${out}/summary.txt"; }

nvidia-smi -L | tee -a "${out}/summary.txt"
log "matrixd_core_test: Freivalds, certificates, repeatability"
timeout 180 "${bin}/matrixd_core_test" --gtest_brief=1 \
  --gtest_filter='*Freivalds*:*VerifiedMultiply*:*ExactCertificate*:*Repeatability*' \
  >"${out}/core.txt" 2>&1
log "  exit $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "${out}/core.txt" | tr '\n' ' ')"
log "matrixd_bench --tables=verify (GPU, n = 4096, 8192)"
timeout 360 "${bin}/matrixd_bench" --tables=verify --verify_sizes=4096,8192 --repeats=5 --no_cpu \
  >"${out}/bench_verify.txt" 2>&1
log "  exit $?"
cat "${out}/bench_verify.txt" | tee -a "${out}/summary.txt"
