#!/usr/bin/env bash
# Injected device failures on a lent GPU (docs/reliability.md, "Faults"): the CUDA fault tests of
# matrixd_core_test (tests/core/cuda_fault_injection_test.cc), with the memory tests beside them,
# then the same fault tests under compute-sanitizer's memcheck with leak checking, when the device
# has it. Runs from the repository root on the device, binaries bundled in .gpu/, logs under $OUT.
#
# Preparing (here, before the device call):
#   cmake --build build -j2 --target matrixd_core_test
#   ../shared/gpu/bundle.sh .gpu build/tests/matrixd_core_test
# then, through the device tool with carry [".gpu"]:  tests/gpu/faults-run.sh
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" faults
filter='*FaultInjection*:FaultCountdown.*:CudaMemoryPool*:CudaMemoryResource*:CudaStatus*'


gpu_info
log "matrixd_core_test --gtest_filter=${filter}"
run_gtest 240 "${out}/faults.txt" "${bin}/matrixd_core_test" --gtest_filter="${filter}"

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [[ -n ${sanitizer} ]]; then
  log "compute-sanitizer --tool memcheck --leak-check full (fault tests only)"
  timeout 300 "${sanitizer}" --tool memcheck --leak-check full --error-exitcode 99 \
    "${bin}/matrixd_core_test" --gtest_filter='*CudaFaultInjection*' >"${out}/faults-memcheck.txt" 2>&1
  log "  exit $?: $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|^\[  (PASSED|FAILED) ' "${out}/faults-memcheck.txt" | tr '\n' ' ')"
else
  log "compute-sanitizer not found: memcheck skipped"
fi
