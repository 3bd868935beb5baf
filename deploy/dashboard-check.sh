#!/usr/bin/env bash
# Live dashboard data from a benchmark run (issue 4), without Grafana: starts matrixd with
# --metrics and a Prometheus scraping it every second (both on loopback, in a temporary
# directory), drives the server with `matrixctl load` (determinants, single and batched LU,
# products, permanents, then a few bad requests and an overload so that error codes appear) and
# with deploy/resident-load.py (resident matrices: streamed and parallel uploads, operations by
# handle, a kept product, downloads, releases), and then runs every panel query of
# deploy/grafana/matrixd-dashboard.json against Prometheus, as Grafana would, writing which
# panels have data and a few of their values.
#
#   deploy/dashboard-check.sh BIN PROMETHEUS BACKEND OUT
#     BIN         directory with matrixd and matrixctl (.gpu/bin), or a build tree (build)
#     PROMETHEUS  a prometheus binary, or an xz-compressed one (*.xz, unpacked to a temp dir
#                 by Python's lzma: no xz tool needed)
#     BACKEND     cpu | cuda | auto (matrixd --backend)
#     OUT         directory for the report: dashboard-report.txt, load.txt, matrixd.log,
#                 prometheus.log, metrics.txt (the last scrape)
#   Environment: PHASE_SECONDS (default 4): length of each load phase; PYTHON (default
#     /usr/bin/python3 if present, else python3): runs deploy/dashboard-report.py and
#     deploy/resident-load.py (which needs grpcio and grpc_tools).
#
# Exit status: 0 when every panel that can have data on this backend has some.
set -euo pipefail

if [[ $# -ne 4 ]]; then
  sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
bin=$1 prometheus=$2 backend=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)
dashboard=${here}/grafana/matrixd-dashboard.json
phase=${PHASE_SECONDS:-4}
python=${PYTHON:-$([[ -x /usr/bin/python3 ]] && echo /usr/bin/python3 || echo python3)}
helper() { "${python}" "${here}/dashboard-report.py" "$@"; }

find_binary() {  # NAME: BIN/NAME, or BIN/server/NAME or BIN/client/NAME in a build tree
  local candidate
  for candidate in "${bin}/$1" "${bin}/server/$1" "${bin}/client/$1"; do
    [[ -x ${candidate} ]] && { echo "${candidate}"; return; }
  done
  echo "dashboard-check: no executable $1 under ${bin}" >&2
  exit 2
}
matrixd=$(find_binary matrixd)
matrixctl=$(find_binary matrixctl)
case ${backend} in cpu | cuda | auto) ;; *) echo "dashboard-check: backend ${backend}?" >&2; exit 2 ;; esac
mkdir -p "${out}"
out=$(cd "${out}" && pwd)

work=$(mktemp -d /tmp/dashboard-check.XXXXXX)
pids=()
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "${pid}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "${pid}" 2>/dev/null || true; done
  rm -rf "${work}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ ${prometheus} == *.xz ]]; then
  helper unxz "${prometheus}" "${work}/prometheus"
  prometheus=${work}/prometheus
fi
[[ -x ${prometheus} ]] || { echo "dashboard-check: ${prometheus} is not executable" >&2; exit 2; }

read -r grpc_port metrics_port prometheus_port <<<"$(helper free-ports 3 | tr "\n" " ")"
server=127.0.0.1:${grpc_port}
prometheus_url=http://127.0.0.1:${prometheus_port}

# A short queue, so that the overload phase below is refused with RESOURCE_EXHAUSTED; the other
# phases keep at most 4 requests in flight, which the 2 workers and the queue always take. A small
# resident limit, so that the resident bytes show against it on the same scale.
"${matrixd}" --listen="${server}" --metrics="127.0.0.1:${metrics_port}" --backend="${backend}" \
  --queue_depth=4 --resident_memory_limit=16MiB >"${out}/matrixd.log" 2>&1 &
pids+=($!)
helper wait-http "http://127.0.0.1:${metrics_port}/metrics" 60 ||
  { echo "dashboard-check: matrixd did not start; see ${out}/matrixd.log" >&2; exit 1; }

cat >"${work}/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: matrixd
    static_configs:
      - targets: ["127.0.0.1:${metrics_port}"]
EOF
"${prometheus}" --config.file="${work}/prometheus.yml" --storage.tsdb.path="${work}/data" \
  --web.listen-address="127.0.0.1:${prometheus_port}" --log.level=warn \
  >"${out}/prometheus.log" 2>&1 &
pids+=($!)
if ! helper wait-http "${prometheus_url}/-/ready" 60 || ! helper wait-target "${prometheus_url}" 60
then
  echo "dashboard-check: Prometheus is not scraping matrixd; see ${out}/prometheus.log" >&2
  exit 1
fi

actual_backend=$(helper fetch "http://127.0.0.1:${metrics_port}/metrics" |
  sed -n 's/^matrixd_build_info{.*backend="\([a-z]*\)".*/\1/p')
# Permanents that take a while on each backend: one that outlasts its call's deadline, and one
# slow enough that 32 at once overflow the queue (n <= 30, matrixd's default limit).
if [[ ${actual_backend} == cuda ]]; then
  late_permanent=30 late_deadline=10ms overload_permanent=28
else
  late_permanent=24 late_deadline=50ms overload_permanent=20
fi
echo "dashboard-check: matrixd (${actual_backend}) at ${server}, Prometheus at ${prometheus_url}"

: >"${out}/load.txt"
load() {  # matrixctl load FLAGS...: the table goes to load.txt; failed requests are expected
  echo "\$ matrixctl --server=${server} load $*" | tee -a "${out}/load.txt"
  "${matrixctl}" --server="${server}" load "$@" >>"${out}/load.txt" 2>&1 || true
  echo >>"${out}/load.txt"
}
resident_load() {  # resident-load.py FLAGS...: its summary goes to load.txt
  echo "\$ resident-load.py --server=${server} $*" | tee -a "${out}/load.txt"
  "${python}" "${here}/resident-load.py" --server="${server}" "$@" >>"${out}/load.txt" 2>&1 ||
    echo "dashboard-check: resident-load.py exited with status $?; see ${out}/load.txt" >&2
  echo >>"${out}/load.txt"
}

sleep 3  # a few idle scrapes before the load, so that rates start from a baseline
start=$(date +%s)
load --op=det --n=64 --requests=0 --duration="${phase}" --concurrency=4
load --op=det --n=48 --method=condensation --requests=0 --duration="${phase}" --concurrency=2
load --op=det --n=32 --dtype=complex128 --requests=0 --duration="${phase}" --concurrency=2
load --op=lu --n=32 --requests=0 --duration="${phase}" --concurrency=4
load --op=lu --n=32 --batch=64 --requests=0 --duration="${phase}" --concurrency=4
load --op=gemm --n=256 --requests=0 --duration="${phase}" --concurrency=4
load --op=gemm --n=128 --dtype=float32 --requests=0 --duration="${phase}" --concurrency=2
load --op=permanent --n=16 --method=glynn --requests=0 --duration="${phase}" --concurrency=2
load --op=permanent --n=14 --dtype=int64 --requests=0 --duration="${phase}" --concurrency=2
resident_load --duration="$((2 * phase))"
# Bad requests: rejected by validation (INVALID_ARGUMENT: LU of uint32, a permanent over the
# size limit), jobs past their call's deadline (DEADLINE_EXCEEDED), and an overload
# (RESOURCE_EXHAUSTED when the queue is full). Three bursts a few scrapes apart: a counter series
# is born at its first increment, and rate() cannot see that one (it has no earlier sample), so
# only the later bursts show in the error panels.
for _ in 1 2 3; do
  load --op=lu --n=16 --dtype=uint32 --requests=10 --concurrency=2
  load --op=permanent --n=40 --requests=3 --concurrency=1
  load --op=permanent --n="${late_permanent}" --deadline="${late_deadline}" --requests=2 \
    --concurrency=2
  load --op=permanent --n="${overload_permanent}" --requests=48 --concurrency=32
  sleep 2
done
load --op=det --n=64 --requests=0 --duration="${phase}" --concurrency=4
sleep 3  # the last scrapes of the load
end=$(date +%s)

helper fetch "http://127.0.0.1:${metrics_port}/metrics" >"${out}/metrics.txt"
status=0
helper report "${dashboard}" "${prometheus_url}" "${start}" "${end}" \
  "${out}/dashboard-report.txt" || status=$?
echo "dashboard-check: report in ${out}/dashboard-report.txt, load tables in ${out}/load.txt"
exit "${status}"
