#!/usr/bin/env bash
# One device call for the resident-matrix issue: the core suite (resident matrices on the CUDA
# backend among it), the server and client suites, then matrixd on cuda and matrixd_transfer_bench
# through it. Runs from the repository root on the device with the binaries bundled in .gpu/:
#
#   ../shared/gpu/bundle.sh .gpu build/server/matrixd build/client/matrixctl \
#       build/tests/matrixd_core_test build/tests/matrixd_server_test build/tests/matrixd_client_test \
#       build/tests/bench/matrixd_transfer_bench
#   device tool: tests/gpu/resident-run.sh   (carry [".gpu"]); logs under $OUT
#
# TABLES and SIZES (matrixd_transfer_bench flags) narrow the benchmark; BIN and BACKEND let it be
# tried without a GPU (BIN=build/... BACKEND=cpu OUT=/tmp/x SIZES="--upload_gib=0.25 ...").
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" resident
backend=${BACKEND:-cuda}

gpu_info
for suite in ${SUITES:-core server client}; do
  log "matrixd_${suite}_test"
  run_gtest 200 "${out}/${suite}.txt" "${bin}/matrixd_${suite}_test" --gtest_brief=1
done

port=50061
log "matrixd --backend=${backend}; matrixd_transfer_bench ${TABLES:-all tables} ${SIZES:-}"
start_matrixd "${port}" "${out}/matrixd.log" --backend="${backend}" --metrics=127.0.0.1:9470 \
  --resident_memory_limit=90%
# shellcheck disable=SC2086
timeout 300 "${bin}/matrixd_transfer_bench" --server=127.0.0.1:${port} \
  ${TABLES:+--tables=${TABLES}} ${SIZES:-} >"${out}/transfer.md" 2>&1
log "  exit $?"
# The same path through matrixctl (CLI_N: float64 n of the uploaded matrix; 0 skips).
cli_n=${CLI_N:-16384}
if [ "${cli_n}" -gt 0 ]; then
  ctl() { "${bin}/matrixctl" --server=127.0.0.1:${port} "$@"; }
  for streams in 1 4; do
    t0=$(date +%s.%N)
    handle=$(ctl upload --random "${cli_n}" --streams="${streams}" 2>>"${out}/cli.txt")
    t1=$(date +%s.%N)
    log "  matrixctl upload --random ${cli_n} --streams=${streams}: $(awk "BEGIN {print $t1 - $t0}") s, handle ${handle:0:8}"
    ctl det "@${handle:0:8}" >>"${out}/cli.txt" 2>&1; log "  det @handle: exit $?"
    ctl multiply "@${handle:0:8}" "@${handle:0:8}" --keep >>"${out}/cli.txt" 2>&1
    log "  multiply --keep: exit $?"
    t0=$(date +%s.%N)
    ctl download "${handle}" --output "${out}/../cli-download.npy" >>"${out}/cli.txt" 2>&1
    log "  download: exit $?, $(awk "BEGIN {print $(date +%s.%N) - $t0}") s"
    rm -f "${out}/../cli-download.npy"
    ctl ls >>"${out}/cli.txt" 2>&1
    ctl ls 2>/dev/null | awk '$1 ~ /^[0-9a-f]+$/ && length($1) == 32 {print $1}' | while read -r h; do ctl rm "$h" >/dev/null 2>&1; done
  done
fi
curl -s 127.0.0.1:9470/metrics | grep -E '^matrixd_(transfer|resident|device_memory)' \
  >"${out}/metrics.txt" 2>&1
kill "${pid}"; wait "${pid}" 2>/dev/null
log "done"
