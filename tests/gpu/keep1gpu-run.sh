#!/usr/bin/env bash
# A factorization kept on the one GPU that computed it (keep1gpu: core/cuda/kept_factorization.h),
# in one device call on nvidia-h100-x1 (or nvidia-h200):
#   1. gate: matrixd_core_test (CudaKeptFactorization.*: read back bit for bit as the downloaded
#      factor, solves as the plain factorization, memory freed; WithKeptParts.*; the Factorize and
#      Solve suites as regressions), matrixd_server_test (OneGpuKeptFactorizationTest.*: through
#      gRPC against the factorization kept through the host; Kept*, the plumbing);
#   2. matrixd --backend=cuda --devices=0; for each n in SIZES: `generate random n` (LU) and
#      `generate identity n` (Cholesky), then REPEATS times each (the first warms up):
#      `factorize --keep` (kept on the GPU now) and `factorize --keep --keep_input` (still through
#      the host, the old path: its round trip is the baseline), each followed by `solve` by the
#      kept handle with 1 and 4 random right-hand sides (the same B for both, --seed); X of the
#      first solve of each kept to .npy and compared, max |X_gpu - X_host| / max |X_host|; the
#      kept handles removed after each run. `ls` after the first kept factorization shows its
#      bytes and device.
# Every step runs under `timeout`; a failure stops nothing else. Output in $OUT (summary.txt,
# cli.txt, matrixd.log, the tests' logs), tarred into $OUT/keep1gpu-logs.tar.gz at the end.
#
# Preparing (here):
#   cmake --build build -j2 --target matrixd matrixctl matrixd_core_test matrixd_server_test
#   ../shared/gpu/bundle.sh .gpu build/server/matrixd build/client/matrixctl \
#       build/tests/matrixd_core_test build/tests/matrixd_server_test
# then through the device tool, carry [".gpu"], kind nvidia-h100-x1:
#   tests/gpu/keep1gpu-run.sh
# Knobs: SIZES="16384" (32768 too fits an H100: 8 GiB A + 8 GiB factor + getrf's staging),
# REPEATS=2, GATE=1 (0 skips step 1), BIN (default .gpu/bin).
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" keep1gpu
sizes=${SIZES:-16384}
repeats=${REPEATS:-2}

gpu_info

if [ "${GATE:-1}" = 1 ]; then
  log "matrixd_core_test"
  run_gtest 400 "${out}/core_test.txt" "${bin}/matrixd_core_test" --gtest_brief=1 \
    --gtest_filter='CudaKeptFactorization.*:WithKeptParts.*:DeviceFactorization.*:*Factorize*:*Solve*'
  log "matrixd_server_test"
  run_gtest 300 "${out}/server_test.txt" "${bin}/matrixd_server_test" --gtest_brief=1 \
    --gtest_filter='OneGpuKeptFactorizationTest.*:Kept*:KeepOnDevices*:*Solve*:BadRequestTest.Factoriz*'
fi

port=50067
log "matrixd --backend=cuda --devices=0"
start_matrixd "${port}" "${out}/matrixd.log" --backend=cuda --devices=0 \
  --resident_memory_limit=200G --max_matrix_elements=20000000000 || log "matrixd did not start"
ctl_timeout=300  # ctl (run_lib.sh)
ctl health >>"${out}/cli.txt" 2>&1



# kept_run LABEL HANDLE KIND RUN: the factorization of HANDLE kept on the GPU and kept through the
# host, each solved by its handle; the kept handles removed.
kept_run() {
  local label=$1 a=$2 kind=$3 run=$4
  local on_gpu through_host
  on_gpu=$(timed_kept "${label} factorize --keep (on the GPU)" factorize "@${a:0:8}" --kind="${kind}" \
    --keep | head -1)
  [ "${run}" = 1 ] && ctl ls 2>&1 | grep -i "${on_gpu:0:8}" >>"${out}/summary.txt"
  timed_kept "${label} solve by the GPU-kept handle, 1 rhs" solve "@${on_gpu:0:8}" --rhs_random=1 \
    --output="${out}/x-gpu.npy" >/dev/null
  timed_kept "${label} solve by the GPU-kept handle, 4 rhs" solve "@${on_gpu:0:8}" --rhs_random=4 \
    >/dev/null
  through_host=$(timed_kept "${label} factorize --keep --keep_input (through the host)" factorize \
    "@${a:0:8}" --kind="${kind}" --keep --keep_input | head -1)
  timed_kept "${label} solve by the host-kept handle, 1 rhs" solve "@${through_host:0:8}" \
    --rhs_random=1 --output="${out}/x-host.npy" >/dev/null
  log "  ${label}: $(compare_npy "${out}/x-host.npy" "${out}/x-gpu.npy")"
  ctl rm "${on_gpu}" "${through_host}" >/dev/null 2>&1
  rm -f "${out}/x-gpu.npy" "${out}/x-host.npy"
}

for n in ${sizes}; do
  log "n=${n}"
  a=$(generate "random ${n}" random "${n}" --seed=5)
  for r in $(seq "${repeats}"); do kept_run "LU n=${n} run ${r}" "${a}" lu "${r}"; done
  ctl rm "${a}" >/dev/null 2>&1
  s=$(generate "identity ${n}" identity "${n}")
  for r in $(seq "${repeats}"); do kept_run "Cholesky n=${n} run ${r}" "${s}" cholesky "${r}"; done
  ctl rm "${s}" >/dev/null 2>&1
  log "  after rm:"
  ctl ls >>"${out}/summary.txt" 2>&1
  nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv >>"${out}/summary.txt" 2>&1
done

kill "${pid}"
wait "${pid}" 2>/dev/null
log "done"
