#!/usr/bin/env bash
# One device call for issue 9's system shared-memory targets: matrixd on cuda with
# matrixd_shm_bench through it (det of an n x n float64 matrix placed in shared memory vs the
# same over gRPC, n = 8192 and 16384; batched LU 32x32 x 100000 shared memory in and out), the
# baseline the target names (matrixd_bench's dense table: the backend call with the matrix
# already in pinned host memory, column pinned(s)), and what a same-host user would do instead
# (torch.linalg.slogdet(torch.from_numpy(a).cuda()), when the machine's python3 has torch).
# Runs from the repository root on the device with the binaries bundled in .gpu/:
#
#   ../shared/gpu/bundle.sh .gpu build/server/matrixd build/client/matrixctl \
#       build/tests/bench/matrixd_shm_bench build/tests/bench/matrixd_bench
#   device tool: tests/gpu/shm-run.sh   (carry [".gpu"]); everything in $OUT/shm.txt
#
# SIZES (det orders, comma-separated), BATCH and REPEATS narrow the run; BIN and BACKEND let it
# be tried without a GPU (BIN=build BACKEND=cpu OUT=/tmp/x SIZES=1024 BATCH=1000; BIN then holds
# the four programs, e.g. a folder of links to them).
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" shm shm.txt
backend=${BACKEND:-cuda}
sizes=${SIZES:-8192,16384}
batch=${BATCH:-100000}
repeats=${REPEATS:-5}

gpu_info
df -h /dev/shm | tee -a "${report}"

port=50071
log "matrixd --backend=${backend}; matrixd_shm_bench --det_sizes=${sizes} --batch=${batch}"
start_matrixd "${port}" "${out}/matrixd.log" --backend="${backend}" --metrics=
timeout 420 "${bin}/matrixd_shm_bench" --server=127.0.0.1:${port} --det_sizes="${sizes}" \
  --batch="${batch}" --repeats="${repeats}" >>"${report}" 2>&1
log "  matrixd_shm_bench exit $?"
# The same through matrixctl --shm (what it says on stderr, and its round trip).
"${bin}/matrixctl" --server=127.0.0.1:${port} det --random "${sizes%%,*}" --shm >>"${report}" 2>&1
log "  matrixctl det --random ${sizes%%,*} --shm: exit $?"
"${bin}/matrixctl" --server=127.0.0.1:${port} shm list >>"${report}" 2>&1
kill "${pid}"; wait "${pid}" 2>/dev/null

log "baseline: matrixd_bench --tables=dense --det_sizes=${sizes} (column pinned(s): the backend call on pinned host memory)"
timeout 240 "${bin}/matrixd_bench" --tables=dense --det_sizes="${sizes}" --gemm_n=1024 \
  --repeats=3 --no_cpu >>"${report}" 2>&1
log "  matrixd_bench exit $?"

log "torch.linalg.slogdet(torch.from_numpy(a).cuda()), float64, median of 3 after a warm-up"
# The first interpreter that has numpy and torch (python3 on PATH may be a bare one).
python=
for candidate in python3 /usr/bin/python3 /usr/local/bin/python3; do
  if command -v "${candidate}" >/dev/null && "${candidate}" -c "import numpy, torch" 2>/dev/null; then
    python=${candidate}
    break
  fi
done
if [ -z "${python}" ]; then
  echo "torch not available here (no python3 with numpy and torch)" >>"${report}"
else
timeout 120 "${python}" - "${sizes}" >>"${report}" 2>&1 <<'PY'
import statistics, sys, time
import numpy as np
import torch
if not torch.cuda.is_available():
    print("torch sees no CUDA device")
    sys.exit(0)
print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
for n in map(int, sys.argv[1].split(",")):
    a = np.random.default_rng(n).uniform(-1, 1, (n, n))
    times = []
    for k in range(4):
        torch.cuda.synchronize()
        t = time.perf_counter()
        sign, logabs = torch.linalg.slogdet(torch.from_numpy(a).cuda())
        float(logabs)  # waits for the result, as a caller would
        if k:
            times.append(time.perf_counter() - t)
    print(f"n = {n}: {statistics.median(times):.4f} s (runs {', '.join(f'{x:.4f}' for x in times)})")
PY
fi
log "done"
