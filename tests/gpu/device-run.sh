#!/usr/bin/env bash
# One sitting on a lent GPU machine: what must run there before the CUDA backend and the job queue
# issues can close. Runs from the repository root on the device, with the binaries bundled in .gpu/
# (see "Preparing a GPU run" below) and writes its logs under $OUT. Three parts, one device call
# each, whose `timeout`s add up to under the device tool's 10 minutes per command:
#
#   tests/gpu/device-run.sh tests   # core, server and client suites
#   tests/gpu/device-run.sh bench   # the benchmark tables of the targets (dense, condensation,
#                                   # sparse, permanent, modular, bandwidth, batched, small)
#   tests/gpu/device-run.sh load    # small-request batching through the server on cuda, streams
#                                   # 1 vs 4, and the dashboard check with a carried Prometheus
#
# Preparing a GPU run (here, before the device call):
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build build -j
#   ../shared/gpu/bundle.sh .gpu build/server/matrixd build/client/matrixctl build/tests/matrixd_core_test \
#       build/tests/matrixd_server_test build/tests/matrixd_client_test build/tests/bench/matrixd_bench
#   xz -T2 -9 -k -c /usr/bin/prometheus > .gpu/prometheus.xz
# then run this script through the device tool with carry [".gpu"].
set -uo pipefail
part=${1:-}
if [[ ${part} != tests && ${part} != bench && ${part} != load ]]; then
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
# BIN, BACKEND and PROMETHEUS let the script be tried without a GPU.
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" "device-${part}"
backend=${BACKEND:-cuda}
prometheus=${PROMETHEUS:-.gpu/prometheus.xz}


case ${part} in
  tests)
    gpu_info
    for suite in core server client; do
      log "matrixd_${suite}_test"
      run_gtest 180 "${out}/${suite}.txt" "${bin}/matrixd_${suite}_test" --gtest_brief=1
    done
    ;;
  bench)
    gpu_info
    log "matrixd_bench (target tables)"
    timeout 540 "${bin}/matrixd_bench" \
      --tables=bandwidth,dense,batched,condensation,sparse,permanent,modular,small \
      --det_sizes=8192,16384 --batch_sizes=32 --no_cpu >"${out}/bench.txt" 2>&1
    log "  exit $?"
    ;;
  load)
    port=50051
    for streams in 1 4; do
      log "matrixd --backend=${backend} --streams_per_device=${streams}: deploy/load-batching.sh"
      start_matrixd "${port}" "/tmp/matrixd-${streams}.log" --backend="${backend}" --metrics= \
        --streams_per_device=${streams}
      timeout 150 deploy/load-batching.sh "${bin}" 127.0.0.1:${port} >>"${out}/batching.txt" 2>&1
      log "  exit $?"
      kill "${pid}"; wait "${pid}" 2>/dev/null
      port=$((port + 1))
    done
    log "deploy/dashboard-check.sh (${backend})"
    timeout 200 deploy/dashboard-check.sh "${bin}" "${prometheus}" "${backend}" "${out}/dashboard"
    log "  exit $?"
    ;;
esac
