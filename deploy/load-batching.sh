#!/usr/bin/env bash
# Small-request batching, measured (issue 4): the same number of small LU factorizations sent one
# matrix per request and 64 matrices per batched request, at each size, against a running
# matrixd. Prints each run's `matrixctl load` table and a summary table at the end.
#
#   deploy/load-batching.sh BIN HOST:PORT
#     BIN: the directory holding matrixctl (build/client here; .gpu/bin on the GPU machine, with
#          LD_LIBRARY_PATH=.gpu/lib), or the matrixctl binary itself.
#   Environment: SIZES (default "32 16 8"), MATRICES per run (20000), BATCH (64),
#     CONCURRENCY (16), DTYPE (float64).
#
# Start the server first, e.g. `matrixd --listen=127.0.0.1:50051 --backend=cpu --metrics=`.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
matrixctl=$1
[[ -d ${matrixctl} ]] && matrixctl=${matrixctl}/matrixctl
server=$2
sizes=${SIZES:-32 16 8}
matrices=${MATRICES:-20000}
batch=${BATCH:-64}
concurrency=${CONCURRENCY:-16}
dtype=${DTYPE:-float64}

if [[ ! -x ${matrixctl} ]]; then
  echo "load-batching: ${matrixctl} is not an executable matrixctl" >&2
  exit 2
fi
"${matrixctl}" --server="${server}" --deadline=5s health >/dev/null

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname): $(nproc) CPUs, $(uname -sr)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/# GPU: /'
fi
echo "# server ${server}; ${matrices} matrices of ${dtype} per run, concurrency ${concurrency}"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews the numbers)"

summary=$(mktemp)
trap 'rm -f "${summary}"' EXIT
printf '%-4s %4s %6s %9s %9s %8s %11s %11s %9s %9s %7s\n' op n batch requests matrices wall_s \
  requests/s matrices/s p50_ms p99_ms failed >"${summary}"

# One `matrixctl load` run: prints its table and adds its summary row. A run with failed requests
# still reports (the table lists the errors by code).
run() {
  local op=$1 n=$2 run_batch=$3 requests=$4 table
  echo
  echo "\$ matrixctl load --server=${server} --op=${op} --n=${n} --dtype=${dtype}" \
    "--batch=${run_batch} --requests=${requests} --concurrency=${concurrency}"
  table=$("${matrixctl}" --server="${server}" load --op="${op}" --n="${n}" --dtype="${dtype}" \
    --batch="${run_batch}" --requests="${requests}" --concurrency="${concurrency}") || true
  echo "${table}"
  awk -v op="${op}" -v n="${n}" -v b="${run_batch}" '
    { value[$1] = $2 }
    END { printf "%-4s %4s %6s %9s %9s %8s %11s %11s %9s %9s %7s\n", op, n, b, value["requests"],
          value["matrices"], value["wall_s"], value["requests/s"], value["matrices/s"],
          value["p50_ms"], value["p99_ms"], value["failed"] }' <<<"${table}" >>"${summary}"
}

for n in ${sizes}; do
  run lu "${n}" 1 "${matrices}"
  run lu "${n}" "${batch}" $(((matrices + batch - 1) / batch))
done

echo
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# summary (matrices/s counts matrices of successful requests)"
cat "${summary}"
