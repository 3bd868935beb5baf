#!/usr/bin/env bash
# One device call for issue 9's CUDA IPC target: matrixd --backend=cuda, and matrixd_ipc_bench as
# a second process on the same GPU that shares float64 A, B and C by CUDA IPC handle, has the
# server multiply them in place, checks C against its own cublasDgemm and times (i) cublasDgemm
# alone, (ii) the Multiply round trip (target: (ii) <= 1.1 x (i) at n = 8192); then the error
# cases on the real GPU. Runs from the repository root on the device with the binaries bundled
# in .gpu/:
#
#   ../shared/gpu/bundle.sh .gpu build/server/matrixd build/client/matrixctl \
#       build/tests/bench/matrixd_ipc_bench
#   device tool: tests/gpu/ipc-run.sh   (carry [".gpu"]); everything in $OUT/ipc.txt
#
# N and REPEATS narrow the run; BIN points at another folder holding the three programs.
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" ipc ipc.txt
n=${N:-8192}
repeats=${REPEATS:-5}

gpu_info
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-<unset>}" | tee -a "${report}"

port=50072
log "matrixd --backend=cuda; matrixd_ipc_bench --n=${n} --repeats=${repeats}"
start_matrixd "${port}" "${out}/matrixd.log" --backend=cuda --metrics=
timeout 400 "${bin}/matrixd_ipc_bench" --server=127.0.0.1:${port} --n="${n}" \
  --repeats="${repeats}" >>"${report}" 2>&1
status=$?
log "  matrixd_ipc_bench exit ${status} (0: C right and every error case as wanted)"
# The regions as matrixctl shows them (the bench unregisters its own at the end: expect none).
"${bin}/matrixctl" --server=127.0.0.1:${port} shm list >>"${report}" 2>&1
"${bin}/matrixctl" --server=127.0.0.1:${port} health >>"${report}" 2>&1
log "  server healthy after the run: exit $?"
kill "${pid}"; wait "${pid}" 2>/dev/null
tail -5 "${out}/matrixd.log" >>"${report}"
log "done"
exit "${status}"
