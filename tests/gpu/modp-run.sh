#!/usr/bin/env bash
# Issue 13 on a lent GPU: det mod p by the device's blocked LU (core/cuda/modular_lu.h). The CUDA
# modular tests on the device (the LU against the CPU backend's residues for every prime range,
# the condensation's modular paths, the exact determinant's certificates), then the `modular`
# table against NTL on one core at n = 4096 (with the per-phase device times of the GPU runs),
# then the GPU alone at n = 8192. One device call, under the tool's 10 minutes. Runs from the
# repository root with the binaries bundled in .gpu/ and writes its logs under $OUT:
#
#   tests/gpu/modp-run.sh
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
log "matrixd_core_test: modular LU, balanced residues, condensation mod p, exact determinants"
timeout 240 "${bin}/matrixd_core_test" --gtest_brief=1 \
  --gtest_filter='CudaModularLu*:BalancedModulus*:*CudaCondensation*Modular*:*DeterminantTest.Modular*:*ExactCertificate*:*Exact*' \
  >"${out}/core.txt" 2>&1
log "  exit $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "${out}/core.txt" | tr '\n' ' ')"
grep -E 'Failure|Expected|actual|Which is|FAILED' "${out}/core.txt" | head -60 | tee -a "${out}/summary.txt"
log "matrixd_bench --tables=modular (GPU vs NTL, n = 4096; about a minute of NTL)"
timeout 200 "${bin}/matrixd_bench" --tables=modular --no_cpu --ntl_n=4096 --repeats=5 \
  --primes=2147483629,65521,67108859 >"${out}/bench_modular.txt" 2>&1
log "  exit $?"
cat "${out}/bench_modular.txt" | tee -a "${out}/summary.txt"
log "matrixd_bench --tables=modular (GPU alone, n = 8192)"
timeout 120 "${bin}/matrixd_bench" --tables=modular --no_cpu --no_ntl --ntl_n=8192 --repeats=3 \
  --primes=2147483629,65521,4611686018427387847 >"${out}/bench_modular_8192.txt" 2>&1
log "  exit $?"
cat "${out}/bench_modular_8192.txt" | tee -a "${out}/summary.txt"
