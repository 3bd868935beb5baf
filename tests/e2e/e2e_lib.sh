# Shared by the end-to-end scripts (source it after `set -euo pipefail`): a scratch folder `dir`
# removed on exit, `fail MESSAGE` (prints the folder's *.out and *.err, exits 1), and
# `start_matrixd BINARY ARGS...`, which starts the server on a free loopback port with ARGS and
# no metrics endpoint, sets `server` (its pid, killed on exit) and `port`, and fails when it does
# not come up within 10 s. A script may redefine `fail` or its exit trap after sourcing this.
dir=$(mktemp -d)
server=
port=
e2e_cleanup() {
  [[ -n "$server" ]] && kill -KILL "$server" 2>/dev/null || true
  rm -rf "$dir"
}
trap e2e_cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$dir"/*.out "$dir"/*.err; do [[ -f $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }; done
  exit 1
}
start_matrixd() {
  local binary=$1
  shift
  # Created first: the background job opens them when it gets to run, and a `sed` on a file not
  # yet there would end the script (set -e) at once.
  : >"$dir/server.out"
  : >"$dir/server.err"
  "$binary" --listen=127.0.0.1:0 --metrics= "$@" >"$dir/server.out" 2>"$dir/server.err" &
  server=$!
  for _ in $(seq 100); do
    port=$(sed -n 's/^matrixd listening on [^ ]*:\([0-9]*\) .*/\1/p' "$dir/server.out")
    [[ -n "$port" ]] && return 0
    sleep 0.1
  done
  fail "matrixd did not start"
}
