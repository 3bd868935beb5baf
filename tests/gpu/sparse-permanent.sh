#!/usr/bin/env bash
# Issue 13, sparse permanents: the CUDA permanent tests and the `permanent` table with the GPU's
# sparse walk swept over its head sizes (-1 automatic, 0 the block walk, 8/12/16/20 the head walk;
# core/cpu/permanent_head_walk.h), n = 32, 34, 36 at 30 % density, both entry kinds, EXTENDED and
# FAST, in one device call. Runs from the repository root with the binaries bundled in .gpu/ and
# writes its logs under $OUT:
#
#   cmake --build build -j2 --target matrixd_core_test matrixd_bench
#   ../shared/gpu/bundle.sh .gpu build/tests/matrixd_core_test build/tests/bench/matrixd_bench
#   (device tool, carry [".gpu"]) tests/gpu/sparse-permanent.sh
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" sparse-permanent

gpu_info
log "matrixd_core_test --gtest_filter='*Permanent*:*HeadWalk*'"
run_gtest 150 "${out}/permanent-tests.txt" "${bin}/matrixd_core_test" \
  --gtest_filter='*Permanent*:*HeadWalk*' --gtest_brief=1
log "matrixd_bench --no_cpu --tables=permanent --perm_n=36 --perm_density=0.3 --repeats=3 --perm_head_rows=-1,0,8,12,16,20"
timeout 400 "${bin}/matrixd_bench" --no_cpu --tables=permanent --perm_n=36 --perm_density=0.3 \
  --repeats=3 --perm_head_rows=-1,0,8,12,16,20 >"${out}/permanent-sweep.txt" 2>&1
log "  exit $?"
