#!/usr/bin/env bash
# One device call for issue 9's batched LU target (100000 float64 32x32 matrices from system
# shared memory, factors and pivots into it, >= 2 M matrices/s end to end): the CUDA tests of the
# batched factorization (pipelined copies, NaN/Inf refused on the device with the host check's
# status, pivots into their destination, chunk boundaries, batch of one) and of the server's
# shared-memory path, then matrixd --backend=cuda with matrixd_shm_bench's batched table at
# n = 32, 16 and 8, each with a per-phase split from the server's Prometheus metrics (mean seconds
# per call of the RPC, the queue wait, and the kernel records copy_in / cublas_getrf_batched /
# copy_out of the backend call), and at n = 32 the inline gRPC path once (same factors: yes/NO).
# Runs from the repository root on the device with the binaries bundled in .gpu/:
#
#   ../shared/gpu/bundle.sh .gpu build/server/matrixd build/client/matrixctl \
#       build/tests/bench/matrixd_shm_bench build/tests/matrixd_core_test \
#       build/tests/matrixd_server_test
#   device tool: tests/gpu/batchlu-run.sh   (carry [".gpu"]); everything in $OUT/batchlu.txt
#
# BATCH, SIZES (orders n, comma-separated) and REPEATS narrow the run; BIN and BACKEND let it be
# tried without a GPU (BIN=build-links BACKEND=cpu OUT=/tmp/x BATCH=2000 SKIP_TESTS=1).
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" batchlu batchlu.txt
backend=${BACKEND:-cuda}
batch=${BATCH:-100000}
sizes=${SIZES:-32,16,8}
repeats=${REPEATS:-5}

gpu_info
df -h /dev/shm | tee -a "${report}"

if [ -z "${SKIP_TESTS:-}" ]; then
  log "matrixd_core_test: batched factorization, validation, finiteness scan"
  timeout 300 "${bin}/matrixd_core_test" \
    --gtest_filter='Backends/FactorizeBatchTest.*:ValidateFactorizeBatch.*:FiniteScan.*:ResultDestinations.*' \
    >"${out}/core_test.log" 2>&1
  log "  exit $? ($(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "${out}/core_test.log" | tr '\n' ' '))"
  grep -E '^\[  FAILED  \]' "${out}/core_test.log" | tee -a "${report}"
  log "matrixd_server_test: shared memory, backend finiteness check, batched factorize, bad requests"
  timeout 300 "${bin}/matrixd_server_test" \
    --gtest_filter='*SharedMemory*:BackendFiniteCheck*.*:FactorizeBatch*.*:BadRequest*.*' \
    >"${out}/server_test.log" 2>&1
  log "  exit $? ($(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "${out}/server_test.log" | tr '\n' ' '))"
  grep -E '^\[  FAILED  \]' "${out}/server_test.log" | tee -a "${report}"
fi

port=50073
metrics_port=9473
log "matrixd --backend=${backend} --metrics=127.0.0.1:${metrics_port}"
start_matrixd "${port}" "${out}/matrixd.log" --backend="${backend}" \
  --metrics=127.0.0.1:${metrics_port}

scrape() { python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:${metrics_port}/metrics').read().decode())" >"$1" 2>/dev/null; }
# Mean seconds per call between two scrapes of the factorize RPC, its queue wait and each kernel.
split() {
  python3 - "$1" "$2" <<'PY'
import re, sys
def load(path):
    values = {}
    for line in open(path):
        m = re.match(r'^(\w+)(\{[^}]*\})? ([0-9.eE+-]+|NaN|[+-]Inf)$', line.strip())
        if m: values[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return values
before, after = load(sys.argv[1]), load(sys.argv[2])
rows = []
for (name, labels), total in after.items():
    if not name.endswith("_sum"): continue
    if "actorize" not in labels: continue
    base = name[:-4]
    count = after.get((base + "_count", labels), 0) - before.get((base + "_count", labels), 0)
    if count <= 0: continue
    mean = (total - before.get((name, labels), 0)) / count
    rows.append(f"| {base} | {labels} | {int(count)} | {mean:.4f} |")
print("| metric | labels | calls | mean s/call |\n| --- | --- | --- | --- |")
print("\n".join(sorted(rows)))
PY
}

IFS=, read -r -a orders <<<"${sizes}"
for n in "${orders[@]}"; do
  log "matrixd_shm_bench --tables=batched --batch=${batch} --batch_n=${n} --repeats=${repeats} --noinline_baseline"
  scrape "${out}/metrics-before-${n}.txt"
  timeout 300 "${bin}/matrixd_shm_bench" --server=127.0.0.1:${port} --tables=batched \
    --batch="${batch}" --batch_n="${n}" --repeats="${repeats}" --noinline_baseline \
    >>"${report}" 2>&1
  log "  exit $?"
  scrape "${out}/metrics-after-${n}.txt"
  echo "per-phase split, n = ${n} (the ${repeats} timed calls and the warm-up):" >>"${report}"
  split "${out}/metrics-before-${n}.txt" "${out}/metrics-after-${n}.txt" >>"${report}" 2>&1
done
log "n = ${orders[0]} once more with the inline gRPC path (same factors: bit for bit)"
timeout 300 "${bin}/matrixd_shm_bench" --server=127.0.0.1:${port} --tables=batched \
  --batch="${batch}" --batch_n="${orders[0]}" --repeats=1 >>"${report}" 2>&1
log "  exit $?"
kill "${pid}"; wait "${pid}" 2>/dev/null
log "done"
