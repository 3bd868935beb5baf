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
cd "$(dirname "$0")/../.."
part=${1:-}
if [[ ${part} != tests && ${part} != bench && ${part} != load ]]; then
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
out=${OUT:?OUT must name the output directory}
export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=${BIN:-.gpu/bin}           # BIN, BACKEND and PROMETHEUS let the script be tried without a GPU
backend=${BACKEND:-cuda}
prometheus=${PROMETHEUS:-.gpu/prometheus.xz}

log() { echo "## $(date -u +%H:%M:%S) $*" | tee -a "${out}/summary.txt"; }

case ${part} in
  tests)
    nvidia-smi -L | tee -a "${out}/summary.txt"
    for suite in core server client; do
      log "matrixd_${suite}_test"
      timeout 180 "${bin}/matrixd_${suite}_test" --gtest_brief=1 >"${out}/${suite}.txt" 2>&1
      log "  exit $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "${out}/${suite}.txt" | tr '\n' ' ')"
    done
    ;;
  bench)
    nvidia-smi -L | tee -a "${out}/summary.txt"
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
      "${bin}/matrixd" --listen=127.0.0.1:${port} --backend="${backend}" --metrics= \
        --streams_per_device=${streams} >"/tmp/matrixd-${streams}.log" 2>&1 &
      pid=$!
      for _ in $(seq 60); do
        "${bin}/matrixctl" --server=127.0.0.1:${port} --deadline=1s health >/dev/null 2>&1 && break
        sleep 0.5
      done
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
