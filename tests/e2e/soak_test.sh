#!/usr/bin/env bash
# Soak on the real binaries: matrixd (CPU backend unless MATRIXD_SOAK_BACKEND says otherwise)
# under matrixd_soak's mixed load, every result checked, statuses by code and the server's RSS
# after the warm-up against the end (tests/soak/soak_main.cc). Then the server must still drain
# and exit 0 on SIGTERM.
#   tests/e2e/soak_test.sh build/server/matrixd build/tests/soak/matrixd_soak
# MATRIXD_SOAK_SECONDS (default 20) sets the length, MATRIXD_SOAK_WARMUP_SECONDS the warm-up
# (default a quarter of it, 6 to 120 s), MATRIXD_SOAK_CLIENTS the checking threads (default 4),
# MATRIXD_SOAK_RSS_SLACK_MIB the RSS growth allowed (default 24); MATRIXD_SOAK_OUT, when set,
# keeps the report and the server's log there. docs/reliability.md, "Load and soak".
set -euo pipefail
matrixd=$1
soak=$2
seconds=${MATRIXD_SOAK_SECONDS:-20}
warmup=${MATRIXD_SOAK_WARMUP_SECONDS:-$((seconds / 4 < 6 ? 6 : (seconds / 4 > 120 ? 120 : seconds / 4)))}
backend=${MATRIXD_SOAK_BACKEND:-cpu}
source "$(dirname "$0")/e2e_lib.sh"
# Keeps the report and the server's log when asked, and prints the server's last lines on failure.
cleanup() {
  if [[ -n "${MATRIXD_SOAK_OUT:-}" ]]; then mkdir -p "$MATRIXD_SOAK_OUT" && cp "$dir"/* "$MATRIXD_SOAK_OUT"/; fi
  e2e_cleanup
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$dir"/server.*; do echo "--- $f" >&2; tail -n 40 "$f" >&2; done
  exit 1
}

# --job_ttl below the warm-up, so that the finished jobs the server remembers reach their steady
# number before the first RSS reading.
start_matrixd "$matrixd" --backend="$backend" --max_permanent_n=12 --job_ttl=3s --drain_timeout=30s

rc=0
"$soak" --server="127.0.0.1:$port" --server_pid="$server" --seconds="$seconds" \
  --warmup_seconds="$warmup" --clients="${MATRIXD_SOAK_CLIENTS:-4}" \
  --rss_slack_mib="${MATRIXD_SOAK_RSS_SLACK_MIB:-24}" | tee "$dir/report.txt" || rc=$?
[[ $rc -eq 0 ]] || fail "matrixd_soak exited $rc"

kill -TERM "$server"
server_rc=0
wait "$server" || server_rc=$?
server=
[[ $server_rc -eq 0 ]] || fail "matrixd exited $server_rc after SIGTERM following the soak"
echo "server drained and exited 0 after the soak"
echo PASS
