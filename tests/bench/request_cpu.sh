#!/bin/bash
# The server's CPU time per request (issue 13): starts a CPU-backend matrixd with metrics on, warms
# it up, then for each run reads the server's utime+stime from /proc/PID/stat before and after
# `matrixctl load` of REQUESTS requests and prints its µs per request with the load's req/s and p99.
# Usage: tests/bench/request_cpu.sh [MATRIXD [MATRIXCTL]]
# Env: RUNS (5), REQUESTS (20000), OP (det), N (8), CONCURRENCY (64), CONNECTIONS (8), PORT (50431),
# SOCKET (a path: serve and load over that unix-domain socket instead of 127.0.0.1:PORT).
set -euo pipefail
matrixd=${1:-build/server/matrixd}
matrixctl=${2:-build/client/matrixctl}
runs=${RUNS:-5}
requests=${REQUESTS:-20000}
port=${PORT:-50431}
address=127.0.0.1:$port
[[ -n ${SOCKET:-} ]] && address=unix:$SOCKET
load=(load --server="$address" --op="${OP:-det}" --n="${N:-8}"
      --concurrency="${CONCURRENCY:-64}" --connections="${CONNECTIONS:-8}")

"$matrixd" --listen="$address" --backend=cpu --metrics=127.0.0.1:$((port + 1)) \
  >/tmp/request_cpu_server.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null' EXIT
for _ in $(seq 50); do
  "$matrixctl" "${load[@]}" --requests=1 >/dev/null 2>&1 && break
  sleep 0.2
done
"$matrixctl" "${load[@]}" --requests=5000 >/dev/null

ticks() { awk '{print $14 + $15}' /proc/$server/stat; }
hz=$(getconf CLK_TCK)
echo "run cpu_us_per_request requests_per_s p99_ms"
for run in $(seq "$runs"); do
  before=$(ticks)
  report=$("$matrixctl" "${load[@]}" --requests="$requests")
  after=$(ticks)
  rate=$(awk '$1 == "requests/s" {print $2}' <<<"$report")
  p99=$(awk '$1 == "p99_ms" {print $2}' <<<"$report")
  awk -v r="$run" -v t=$((after - before)) -v hz="$hz" -v n="$requests" -v rate="$rate" \
    -v p99="$p99" 'BEGIN {printf "%d %.1f %s %s\n", r, t * 1e6 / hz / n, rate, p99}'
done
