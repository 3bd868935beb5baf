#!/usr/bin/env bash
# Jobs over 2 GPUs through the server reading a resident operand where it lies (issue 10: no copy
# to the host and back), in one device call on nvidia-h100-x2 (or nvidia-h200-x2):
#   1. gate: matrixd_multi_gpu_test (MultiGpuLu.*, MultiGpuBackend.*, CannonGemm.*: resident
#      operands on each GPU, NaN/Inf, overflow; DistributedResidentTest.*: C written into
#      distributed and one-GPU resident matrices bit for bit the host C, every dtype) and
#      matrixd_server_test MultiDeviceAdmission.* and Distributed* (a kept product over the GPUs is
#      distributed; its Download is the inline product bit for bit);
#   2. matrixd --backend=cuda on both GPUs; `generate random N --seed=7` (resident, float64), then
#      `det @HANDLE --devices=1` and `--devices=2`, twice each (the first call of each warms up);
#   3. two resident M x M matrices, `multiply @A @B --keep` on one GPU and with
#      `--devices=2 --multiply_method=cannon`, twice each (C kept on the server: on 2 GPUs a
#      distributed matrix written from the GPUs, then removed); then two resident I x I matrices,
#      `--devices=2 --multiply_method=cannon` with C inline against kept, twice each;
#   4. the server's stats of each call (compute seconds, kernels: cannon_scatter/rounds/gather,
#      multi_gpu_lu) are in cli.txt; summary.txt has round trips and exits, metrics.txt the
#      device-memory metrics sampled while a 2-GPU job runs (both GPUs' `admitted`).
# Every step runs under `timeout`; a failure stops nothing else. Output in $OUT.
#
# Preparing (here):
#   cmake --build build -j2 --target matrixd matrixctl matrixd_multi_gpu_test matrixd_server_test
#   ../shared/gpu/bundle.sh .gpu build/server/matrixd build/client/matrixctl \
#       build/tests/matrixd_multi_gpu_test build/tests/matrixd_server_test
# then through the device tool, carry [".gpu"], kind nvidia-h100-x2:
#   tests/gpu/mgres-run.sh
# Knobs: N=32768 (determinant), M=16384 (product), I=8192 (inline against kept: C must fit
# --max_message_bytes, 1 GiB), REPEATS=2, GATE=1 (0 skips step 1); BIN and
# BACKEND let it be tried without a GPU (BIN=build/... BACKEND=cpu GATE=0 N=64 M=64 OUT=/tmp/x).
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" mgres
n=${N:-32768}
m=${M:-16384}
inline_m=${I:-8192}
repeats=${REPEATS:-2}
backend=${BACKEND:-cuda}

gpu_info
gpu_topology

if [ "${GATE:-1}" = 1 ]; then
  log "matrixd_multi_gpu_test"
  run_gtest 300 "${out}/multi_gpu_test.txt" "${bin}/matrixd_multi_gpu_test" --gtest_brief=1 \
    --gtest_filter='MultiGpuLu.*:MultiGpuBackend.*:CannonGemm.*:DistributedResidentTest.*'
  log "matrixd_server_test MultiDeviceAdmission.*:Distributed*"
  run_gtest 200 "${out}/server_test.txt" "${bin}/matrixd_server_test" --gtest_brief=1 \
    --gtest_filter='MultiDeviceAdmission.*:Distributed*'
fi

port=50063
log "matrixd --backend=${backend}"
start_matrixd "${port}" "${out}/matrixd.log" --backend="${backend}" --metrics=127.0.0.1:9473 \
  --resident_memory_limit=60% --max_matrix_elements=20000000000 || log "matrixd did not start"
ctl_timeout=300  # ctl (run_lib.sh)
ctl health >>"${out}/cli.txt" 2>&1

# Samples the device-memory metrics every 0.2 s into metrics.txt while the caller's job runs.
sample_metrics() {
  while kill -0 "$1" 2>/dev/null; do
    curl -s 127.0.0.1:9473/metrics | grep -E '^matrixd_device_memory_bytes.*admitted' \
      | tr '\n' ' ' >>"${out}/metrics.txt"
    echo >>"${out}/metrics.txt"
    sleep 0.2
  done
}

# timed LABEL ARGS...: one matrixctl call, its output in cli.txt, round trip and exit in summary.
timed() {
  local label=$1
  shift
  echo "### ${label}: matrixctl $*" >>"${out}/cli.txt"
  local t0
  t0=$(now)
  ctl "$@" >>"${out}/cli.txt" 2>&1 &
  local call=$!
  echo "### ${label}" >>"${out}/metrics.txt"
  sample_metrics "${call}" &
  local sampler=$!
  wait "${call}"
  local rc=$?
  wait "${sampler}" 2>/dev/null
  log "  ${label}: exit ${rc}, round trip $(since "${t0}") s"
}

t0=$(now)
handle=$(ctl generate random "${n}" --seed=7 2>>"${out}/cli.txt")
log "generate random ${n}: $(since "${t0}") s, handle ${handle:0:8}"
if [ -n "${handle}" ]; then
  for devices in 1 2; do
    for r in $(seq "${repeats}"); do
      timed "det n=${n} devices=${devices} run ${r}" det "@${handle:0:8}" --devices="${devices}"
    done
  done
  ctl rm "${handle}" >/dev/null 2>&1
fi

# products SIZE SEED CALL...: two resident SIZE x SIZE matrices (seeds SEED and SEED + 1), then
# each CALL ("LABEL|FLAGS": matrixctl multiply @A @B FLAGS) REPEATS times, in turn.
products() {
  local size=$1 seed=$2
  shift 2
  local a b
  a=$(ctl generate random "${size}" --seed="${seed}" 2>>"${out}/cli.txt")
  b=$(ctl generate random "${size}" --seed="$((seed + 1))" 2>>"${out}/cli.txt")
  log "generate 2 x random ${size}: handles ${a:0:8} ${b:0:8}"
  if [ -z "${a}" ] || [ -z "${b}" ]; then return; fi
  local r call flags
  for r in $(seq "${repeats}"); do
    for call in "$@"; do
      read -ra flags <<<"${call#*|}"
      timed "multiply m=${size} ${call%%|*} run ${r}" multiply "@${a:0:8}" "@${b:0:8}" "${flags[@]}"
    done
  done
}
cannon="--devices=2 --multiply_method=cannon"
products "${m}" 3 "devices=1|--keep" "cannon devices=2|--keep ${cannon}"
products "${inline_m}" 5 "cannon devices=2 inline|${cannon}" "cannon devices=2 kept|--keep ${cannon}"
ctl ls >>"${out}/cli.txt" 2>&1
ctl ls 2>/dev/null | awk '$1 ~ /^[0-9a-f]+$/ && length($1) == 32 {print $1}' |
  while read -r h; do ctl rm "$h" >/dev/null 2>&1; done

# The server's compute time and kernels of each call, next to the round trips above.
grep -E '^### |^matrixctl:|compute|log\|det' "${out}/cli.txt" \
  >"${out}/stats.txt" 2>/dev/null
curl -s 127.0.0.1:9473/metrics | grep -E '^matrixd_(device_memory|kernel_duration_seconds_sum)' \
  >>"${out}/metrics-end.txt" 2>&1
kill "${pid}"
wait "${pid}" 2>/dev/null
log "done"
