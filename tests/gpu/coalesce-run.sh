#!/usr/bin/env bash
# One device call for issue 13's small-request targets (>= 50 K requests/s for det and lu at
# n = 8 and 32, concurrency 64, p99 <= 5 ms; a lone request <= 0.3 ms round trip): matrixd on
# cuda with coalescing on (the default: --coalesce_window_us=200) and off
# (--coalesce_max_group=1), `matrixctl load` for det and lu at n = 8 and 32, concurrency 64, 10 s
# each, then a lone-request run (concurrency 1) on an idle server, and the server's coalescing
# metrics. Runs from the repository root on the device with the binaries bundled in .gpu/:
#
#   ../shared/gpu/bundle.sh .gpu build/server/matrixd build/client/matrixctl
#   device tool: tests/gpu/coalesce-run.sh   (carry [".gpu"]); everything in $OUT/coalesce.txt
#
# SIZES, OPS, DURATION, CONCURRENCY, CONNECTIONS (a list: the loaded runs spread their requests
# over that many TCP connections, `matrixctl load --connections`; default 1), APIS (the client's
# calls, `matrixctl load --load_api`: a list of callback, blocking and queue; default callback),
# CLIENTS (a list: the concurrency and connections split over that many `matrixctl load` processes
# run at once, their rates summed; default 1) and WINDOWS
# (window values in us; "off" = no coalescing) narrow the run; SERVER_FLAGS adds matrixd flags (e.g. --host_determinant_max_order=0) and TAG
# names the run in the summary; SOCKET (a path) serves and loads over that unix-domain socket; BIN and BACKEND let it be tried without a GPU (BIN=build-links BACKEND=cpu
# OUT=/tmp/x DURATION=2).
set -uo pipefail
tag=${TAG:-}
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" coalesce "coalesce${tag:+-$tag}.txt"
backend=${BACKEND:-cuda}
sizes=${SIZES:-8 32}
ops=${OPS:-det lu}
duration=${DURATION:-10}
concurrency=${CONCURRENCY:-64}
windows=${WINDOWS:-off 0 200}
connections_list=${CONNECTIONS:-1}
apis=${APIS:-callback}
clients_list=${CLIENTS:-1}
read -r -a server_flags <<<"${SERVER_FLAGS:-}"
summary=${out}/coalesce${tag:+-$tag}-summary.txt

gpu_info
echo "# $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "${report}"
printf '| coalescing | op | n | concurrency | connections | client calls | client processes | req/s | p50 ms | p99 ms |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n' >"${summary}"

port=50081
start_server() {  # $1: window (us) or "off"
  local flags=(--coalesce_window_us="$1")
  [[ $1 == off ]] && flags=(--coalesce_max_group=1)
  start_matrixd "${port}" "${out}/matrixd-${tag}$1.log" --backend="${backend}" \
    --metrics=127.0.0.1:9469 "${flags[@]}" "${server_flags[@]}"
}
# Where the CPU went during one load: the server's threads (utime + stime from
# /proc/PID/task/*/stat, as cores busy over the run, by thread name, and the busiest threads
# alone) and the whole host's busy cores (/proc/stat), so that a serial bottleneck (one thread
# near 1.00) or a saturated host shows.
thread_ticks() {  # $1 pid: "tid name ticks" per thread
  local t
  for t in /proc/"$1"/task/*; do
    printf '%s %s %s\n' "${t##*/}" "$(tr ' ' _ <"$t/comm" 2>/dev/null)" \
      "$(sed 's/.*) //' "$t/stat" 2>/dev/null | awk '{print $12 + $13}')"
  done
}
host_ticks() { awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8, $5 + $6}' /proc/stat; }
cpu_report() {  # $1 before (thread_ticks), $2 after, $3 host before, $4 host after, $5 seconds
  local hz
  hz=$(getconf CLK_TCK)
  {
    echo "server threads over ${5} s (cores busy; CLK_TCK ${hz}):"
    awk -v hz="${hz}" -v s="$5" 'NR == FNR {before[$1] = $3; next}
      {d = ($3 - before[$1]) / hz / s; by_name[$2] += d; count[$2]++; total += d
       if (d > 0.05) printf "  thread %s %s %.2f\n", $1, $2, d}
      END {for (n in by_name) printf "  name %s x%d %.2f\n", n, count[n], by_name[n]
           printf "  server total %.2f cores\n", total}' "$1" "$2" | sort -k4 -g -r | head -40
    read -r busy0 idle0 <<<"$3"
    read -r busy1 idle1 <<<"$4"
    awk -v b=$((busy1 - busy0)) -v i=$((idle1 - idle0)) -v n="$(nproc)" \
      'BEGIN {printf "  host busy %.1f of %d cores\n", n * b / (b + i), n}'
  } >>"${report}"
}

# `matrixctl load` prints a table; keep it, and pull req/s and the percentiles for the summary.
# With $7 client processes (CLIENTS) the concurrency and connections are split evenly among them,
# all started at once: req/s is their sum, p50 and p99 the worst client's.
run_load() {  # $1 label, $2 op, $3 n, $4 concurrency, $5 connections, $6 api, $7 clients
  local clients=${7:-1} text before after host_before host_after c
  local each=$(($4 / clients)) each_connections=$((($5 + clients - 1) / clients))
  ((each < 1)) && each=1
  before=$(thread_ticks "${pid}")
  host_before=$(host_ticks)
  local client_pids=()
  for ((c = 0; c < clients; c++)); do
    timeout $((duration + 60)) "${bin}/matrixctl" --server="${server_address}" load --op="$2" \
      --n="$3" --concurrency="${each}" --connections="${each_connections}" --load_api="$6" \
      --duration="${duration}" --requests=0 >"${out}/load-client-${c}.txt" 2>&1 &
    client_pids+=($!)
  done
  wait "${client_pids[@]}"
  after=$(thread_ticks "${pid}")
  host_after=$(host_ticks)
  text=$(cat "${out}"/load-client-*.txt)
  rm -f "${out}"/load-client-*.txt
  echo "${text}" >>"${report}"
  cpu_report <(echo "${before}") <(echo "${after}") "${host_before}" "${host_after}" "${duration}"
  local rate p50 p99
  rate=$(awk '$1 == "requests/s" {s += $2; n++} END {if (n) printf "%.0f", s}' <<<"${text}")
  p50=$(awk '$1 == "p50_ms" && $2 > m {m = $2} END {if (m != "") print m}' <<<"${text}")
  p99=$(awk '$1 == "p99_ms" && $2 > m {m = $2} END {if (m != "") print m}' <<<"${text}")
  echo "| ${tag:+$tag }$1 | $2 | $3 | $4 | $5 | $6 | ${clients} | ${rate:-?} | ${p50:-?} | ${p99:-?} |" \
    >>"${summary}"
}

for window in ${windows}; do
  log "matrixd --backend=${backend} coalescing ${window} (window us, or off)"
  start_server "${window}"
  # Warm-up: the first calls create the streams' handles and pools.
  "${bin}/matrixctl" --server="${server_address}" load --op=det --n=8 --concurrency=8 --requests=2000 \
    >/dev/null 2>&1
  for op in ${ops}; do
    for n in ${sizes}; do
      for connections in ${connections_list}; do
        for api in ${apis}; do
          for clients in ${clients_list}; do
            log "load --op=${op} --n=${n} --concurrency=${concurrency}" \
              "--connections=${connections} --load_api=${api} --duration=${duration}" \
              "over ${clients} client process(es)"
            run_load "${window}" "${op}" "${n}" "${concurrency}" "${connections}" "${api}" \
              "${clients}"
          done
        done
      done
    done
  done
  for op in ${ops}; do
    log "lone requests: load --op=${op} --n=8 --concurrency=1 --duration=${duration} (idle server)"
    run_load "${window}" "${op}" 8 1 1 callback
  done
  log "coalescing metrics"
  curl -s http://127.0.0.1:9469/metrics 2>/dev/null | grep -E '^matrixd_coalesced' >>"${report}"
  kill "${pid}"; wait "${pid}" 2>/dev/null
done
tee -a "${report}" <"${summary}"
