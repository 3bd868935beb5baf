#!/usr/bin/env bash
# End to end on the real binaries: matrixd gets SIGTERM while `matrixctl permanent` runs. The client
# must get its result (exit 0) and the server must exit 0 once the job is done, long before
# --drain_timeout. Then a second SIGTERM during a drain must end the server at once.
#   tests/e2e/drain_sigterm_test.sh build/server/matrixd build/client/matrixctl
set -euo pipefail
matrixd=$1
matrixctl=$2
# About 5 s on a 2-core VM, under 1 s on 16 cores: long enough to be running at the SIGTERM.
n=${MATRIXD_DRAIN_TEST_N:-28}
source "$(dirname "$0")/e2e_lib.sh"
# Microseconds since the epoch (bash 5), for durations without bc.
now_us() { echo "${EPOCHREALTIME/./}"; }
seconds_since() { printf '%d.%03d' $((($(now_us) - $1) / 1000000)) $(((($(now_us) - $1) / 1000) % 1000)); }

# Starts matrixd in the background; sets $server and $port.
start_server() {
  start_matrixd "$matrixd" --backend=cpu --max_permanent_n=32 --drain_timeout=60s
}

# The server log says a job is running once the client's request is in (the scheduler logs
# nothing per job, so wait a little: the request is a few KiB on loopback).
start_permanent() {
  "$matrixctl" --server="127.0.0.1:$port" permanent --random "$n" >"$dir/client.out" 2>&1 &
  client=$!
  sleep 0.5
}

# 1. One SIGTERM: the running job completes for its client, the server exits 0.
start_server
start_permanent
start=$(now_us)
kill -TERM "$server"
client_rc=0
wait "$client" || client_rc=$?
server_rc=0
wait "$server" || server_rc=$?
server=
elapsed=$(seconds_since "$start")
elapsed_us=$(($(now_us) - start))
[[ $client_rc -eq 0 ]] || fail "matrixctl exited $client_rc during the drain"
[[ $server_rc -eq 0 ]] || fail "matrixd exited $server_rc after SIGTERM"
grep -q "1 jobs at the start, all finished" "$dir/server.err" ||
  fail "the job was not running at the SIGTERM, or did not finish (raise MATRIXD_DRAIN_TEST_N)"
echo "SIGTERM with a job in flight: client OK, server exit 0 after ${elapsed} s"

# 2. A second SIGTERM during the drain stops at once: the client loses its call.
start_server
start_permanent
kill -TERM "$server"
sleep 0.3
start=$(now_us)
kill -TERM "$server"
server_rc=0
wait "$server" || server_rc=$?
server=
elapsed=$(seconds_since "$start")
elapsed_us=$(($(now_us) - start))
client_rc=0
wait "$client" || client_rc=$?
[[ $server_rc -eq 143 ]] || fail "matrixd exited $server_rc after a second SIGTERM, want 143"
[[ $client_rc -ne 0 ]] || fail "matrixctl succeeded although the server was stopped"
((elapsed_us < 2000000)) || fail "the second SIGTERM took ${elapsed} s"
echo "second SIGTERM: server ended by the signal after ${elapsed} s"
echo PASS
