# shellcheck shell=bash
# What every tests/gpu/*-run.sh does first and last. Sourced as the script's first command:
#
#   source "$(dirname "$0")/run_lib.sh" NAME [REPORT]
#
# it moves to the repository root and sets
#   out     $OUT (required: the device tool's output folder), created if missing
#   report  $out/REPORT (default summary.txt): where log lines go, beside stdout
#   bin     ${BIN:-.gpu/bin}, the bundled programs (../shared/gpu/bundle.sh); .gpu/lib goes first
#           in LD_LIBRARY_PATH
#   started $SECONDS now
# exports the variables that keep NVLink multicast off, and defines log, now, since and the
# helpers below.
# and on exit packs every file under $out but the report into one $out/NAME-logs.tar.gz (the
# device tool brings back only a few files), removes what it packed and prints the end of the
# report to stdout. The script's exit status is kept.

run_name=${1:?run_lib.sh: NAME the run}
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
out=${OUT:?OUT must name the output directory}
mkdir -p "${out}"
report=${out}/${2:-summary.txt}
export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=${BIN:-.gpu/bin}
started=$SECONDS
# NVLink multicast stays off on the lent machines (the device tool's KINDS.md): NCCL, NVSHMEM.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

# now: seconds since the epoch with nanoseconds; since T: seconds from T (a `now`) to now, 3 decimals.
now() { date +%s.%N; }
since() { awk "BEGIN {printf \"%.3f\", $(now) - $1}"; }

# log MESSAGE...: a time-stamped line to stdout and the report.
log() { echo "## $(date -u +%H:%M:%S) +$((SECONDS - started))s $*" | tee -a "${report}"; }

# gpu_info: the GPUs (nvidia-smi -L) into the report, or a line saying there is no nvidia-smi (a
# run tried without GPU). gpu_topology: `nvidia-smi topo -m` into $out/topology.txt.
gpu_info() {
  if ! command -v nvidia-smi >/dev/null; then
    log "nvidia-smi not found"
    return 0
  fi
  nvidia-smi -L | tee -a "${report}"
}
gpu_topology() {
  command -v nvidia-smi >/dev/null && nvidia-smi topo -m >"${out}/topology.txt" 2>&1
  return 0
}

# gtest_counts FILE: GoogleTest's PASSED / FAILED / SKIPPED lines of FILE on one line.
gtest_counts() { grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$1" | tr '\n' ' '; }

# run_gtest LIMIT_S LOGFILE PROGRAM ARGS...: a test program under `timeout`, stdout and stderr to
# LOGFILE; logs its exit status and counts; returns the status.
run_gtest() {
  local limit=$1 logfile=$2
  shift 2
  timeout "${limit}" "$@" >"${logfile}" 2>&1
  local code=$?
  log "  exit ${code}: $(gtest_counts "${logfile}")"
  return "${code}"
}

# sanitize TOOL FILTER: matrixd_core_test's tests FILTER under compute-sanitizer --tool TOOL
# (memcheck, racecheck, synccheck), its log in $out/sanitizer-TOOL.txt, its summary lines and
# counts in the report.
sanitize() {
  local tool=$1 filter=$2 sanitizer
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  log "compute-sanitizer --tool ${tool}: ${filter}"
  run_gtest 200 "${out}/sanitizer-${tool}.txt" "${sanitizer}" --tool "${tool}" \
    "${bin}/matrixd_core_test" --gtest_brief=1 --gtest_filter="${filter}"
  grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' "${out}/sanitizer-${tool}.txt" |
    tee -a "${report}"
}

# step NAME LIMIT_S LOGFILE COMMAND...: COMMAND under `timeout` (its limit cut to what is left of
# ${budget} seconds since `started`; skipped when less than ${step_min_left:-10} is left), stdout
# appended to LOGFILE, stderr to $out/stderr.txt; logs the exit status and the last line; returns
# the status (99 when skipped).
# shellcheck disable=SC2154  # budget: set by the scripts that call step
step() {
  local name=$1 limit=$2 logfile=$3
  shift 3
  local left=$((budget - (SECONDS - started)))
  if ((left < ${step_min_left:-10})); then
    log "${name}: skipped (budget of ${budget}s spent)"
    return 99
  fi
  ((limit > left)) && limit=${left}
  log "${name} (limit ${limit}s)"
  local before=0
  [[ -f ${logfile} ]] && before=$(wc -l <"${logfile}")
  echo "## ${name}" >>"${out}/stderr.txt"
  timeout -k 5 "${limit}" "$@" >>"${logfile}" 2>>"${out}/stderr.txt"
  local code=$?
  local last="(no output)"
  [[ -f ${logfile} ]] && (($(wc -l <"${logfile}") > before)) && last=$(tail -1 "${logfile}")
  local meaning
  case ${code} in
    0) meaning="ok" ;;
    2) meaning="does not fit the GPUs" ;;
    3) meaning="not available here" ;;
    124 | 137) meaning="TIMED OUT" ;;
    *) meaning="FAILED (see stderr.txt)" ;;
  esac
  log "  exit ${code} (${meaning}): ${last}"
  return "${code}"
}

# The EXIT trap: one tarball of the logs, the report left beside it, its end on stdout.
pack_logs() {
  local code=$?
  local tarball=${run_name}-logs.tar.gz
  local report_name
  report_name=$(basename "${report}")
  local files=()
  mapfile -t files < <(find "${out}" -mindepth 1 -maxdepth 1 ! -name "${tarball}" \
    ! -name "${report_name}" -printf '%P\n' | sort)
  local packed=("${files[@]}")
  [[ -f ${report} ]] && packed+=("${report_name}")
  if ((${#packed[@]} > 0)) && tar -C "${out}" -czf "${out}/${tarball}" "${packed[@]}"; then
    ((${#files[@]} > 0)) && (cd "${out}" && rm -rf -- "${files[@]}")
  fi
  echo "=== ${run_name}: exit ${code}; ${#files[@]} logs in \$OUT/${tarball}, the report in" \
    "\$OUT/${report_name}; its last lines:"
  [[ -f ${report} ]] && tail -n 40 "${report}"
  exit "${code}"
}
trap pack_logs EXIT

# start_matrixd PORT LOGFILE FLAGS...: ${bin}/matrixd on 127.0.0.1:PORT (on the unix-domain
# socket ${SOCKET} instead when SOCKET is set) in the background (its process id in `pid`, its
# address in `server_address`), output to LOGFILE; returns once `matrixctl health` answers, or
# after 30 s with status 1.
start_matrixd() {
  local port=$1 logfile=$2
  shift 2
  server_address=127.0.0.1:${port}
  [[ -n ${SOCKET:-} ]] && server_address=unix:${SOCKET}
  "${bin}/matrixd" --listen="${server_address}" "$@" >"${logfile}" 2>&1 &
  # shellcheck disable=SC2034  # for the caller
  pid=$!
  for _ in $(seq 60); do
    "${bin}/matrixctl" --server="${server_address}" --deadline=1s health >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  return 1
}

# ctl ARGS...: matrixctl against the server that start_matrixd started last (else
# 127.0.0.1:${port}), under `timeout` of ${ctl_timeout:-400} s (its --deadline 10 s less).
ctl() {
  local limit=${ctl_timeout:-400}
  timeout "${limit}" "${bin}/matrixctl" --server="${server_address:-127.0.0.1:${port}}" \
    --deadline="$((limit - 10))s" "$@"
}

# generate LABEL ARGS...: `ctl generate ARGS...`; prints the handle, logs the time, and sends
# matrixctl's messages to $out/cli.txt.
generate() {
  local label=$1
  shift
  local t0 handle
  t0=$(now)
  handle=$(ctl generate "$@" 2>>"${out}/cli.txt")
  log "  generate ${label}: exit $?, $(since "${t0}") s, handle ${handle:0:8}" >&2
  echo "${handle}"
}

# timed_kept LABEL ARGS...: one `ctl ARGS...` call, its reply in $out/cli.txt; its exit status,
# round trip and the lines of its reply that match ${reply_lines} (default: the cusolver / solve
# / seconds / residual / error lines) to the report; prints the handles it kept
# (`kept NAME: HANDLE`).
timed_kept() {
  local label=$1
  shift
  echo "### ${label}: matrixctl $*" >>"${out}/cli.txt"
  local t0 reply rc
  t0=$(now)
  reply=$(ctl "$@" 2>&1)
  rc=$?
  echo "${reply}" >>"${out}/cli.txt"
  log "  ${label}: exit ${rc}, round trip $(since "${t0}") s;" \
    "$(echo "${reply}" | grep -E "${reply_lines:-cusolver|solve|seconds|residual|error|rror}" | tr -s ' ' |
      tr '\n' ';' | cut -c1-400)" >&2
  echo "${reply}" | grep -oE 'kept [a-z_]+: [0-9a-f]+' | awk '{print $3}' | sort -u
}

# compare_npy X1 X2: max |X2 - X1| / max |X1| of two .npy files and whether X2 is finite, when
# numpy is here.
compare_npy() {
  if command -v python3 >/dev/null && python3 -c 'import numpy' 2>/dev/null; then
    python3 -c "
import numpy as np
a = np.load('$1'); b = np.load('$2')
print('max |X2 - X1| / max |X1| =', np.abs(a - b).max() / np.abs(a).max(), 'finite:', np.isfinite(b).all())" 2>&1
  else
    echo "no numpy here; compare $1 and $2 by hand"
  fi
}
