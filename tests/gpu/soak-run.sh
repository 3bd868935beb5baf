#!/usr/bin/env bash
# One device call for issue 11's soak on the GPU: tests/e2e/soak_test.sh with matrixd on the
# cuda backend (every result of the mixed load checked against matrixd_soak's reference, statuses
# by code, the server's RSS after the warm-up and at the end, then a SIGTERM drain). Runs from
# the repository root on the device with the binaries bundled in .gpu/:
#
#   ../shared/gpu/bundle.sh .gpu build/server/matrixd build/tests/soak/matrixd_soak
#   device tool: tests/gpu/soak-run.sh   (carry [".gpu"]); the report in $OUT/report.txt
#
# MATRIXD_SOAK_SECONDS (default 480: a device command may run 10 minutes at most) and the other
# MATRIXD_SOAK_* variables of soak_test.sh pass through; BACKEND=cpu tries it without a GPU.
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" soak report.txt
command -v nvidia-smi >/dev/null && nvidia-smi -L | tee "${out}/gpu.txt"
MATRIXD_SOAK_BACKEND=${BACKEND:-cuda} MATRIXD_SOAK_SECONDS=${MATRIXD_SOAK_SECONDS:-480} \
  MATRIXD_SOAK_OUT="${out}" tests/e2e/soak_test.sh "${bin}/matrixd" "${bin}/matrixd_soak" \
  2>&1 | tee "${out}/soak.log"
exit "${PIPESTATUS[0]}"
