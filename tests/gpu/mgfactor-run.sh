#!/usr/bin/env bash
# Factorize over several GPUs by cusolverMg (issue 10), in one device call on nvidia-h100-x2 (or
# nvidia-h200-x2):
#   1. gate: matrixd_multi_gpu_test (MultiGpuFactorize.*: LU/Cholesky factors reproduce A, LU
#      equals one GPU's, solves, orders around the block, n = 1, singular and non-SPD inputs, a
#      resident operand; MultiGpuBackend.*, MultiGpuLu.* as regressions of the shared cusolverMg
#      code), matrixd_core_test (*Supports*:FactorizeDevices.*), matrixd_server_test
#      (BadRequestTest.Factorize*);
#   2. matrixd --backend=cuda on both GPUs; for each n in SIZES: `generate random n` (LU) and
#      `generate identity n` (Cholesky: potrf does the same work on any SPD matrix, and the
#      generator has no random SPD kind), then `factorize --kind lu|cholesky --keep` with
#      --devices=1 and --devices=2, REPEATS times each (the first warms up); the factors are kept
#      on the server (an 8 GB result does not fit a response) and removed after each run.
#   3. BIG=N (optional): a distributed float64 N x N random matrix (`generate --layout=distributed`,
#      8 N^2 bytes: 80 GB at N = 100000), LU over both GPUs with --keep (the factorization stays
#      distributed on the GPUs, no factor crosses to the host), `ls` (the kept handle's bytes and
#      devices), solve by the kept handle with 1 and then 4 random right-hand sides (X of the first
#      to x-big.npy), nvidia-smi before and after releasing it. Then, at CHECK_N (default 20000),
#      the accuracy: the solve by a kept factorization over 2 GPUs against the solve by one kept on
#      one GPU with --keep_input (whose --residual the server reports), max |X2 - X1| / max |X1|.
#      Memory: the operand stays resident beside its factors, so each GPU needs about
#      4 N^2 (its half of A) + 4.4 N^2 (its half of the factors, cusolverMg's workspace allowance)
#      bytes: N = 90000 fits two H100s (68 GB each), N = 100000 needs two H200s (84 GB each).
#      The factorization gathers a distributed operand to host memory first (8 N^2 bytes).
# Every step runs under `timeout`; a failure stops nothing else. Output in $OUT (summary.txt,
# cli.txt, matrixd.log, the tests' logs), tarred into $OUT/mgfactor-logs.tar.gz at the end.
#
# Preparing (here):
#   cmake --build build -j2 --target matrixd matrixctl matrixd_core_test matrixd_multi_gpu_test \
#       matrixd_server_test
#   ../shared/gpu/bundle.sh .gpu build/server/matrixd build/client/matrixctl \
#       build/tests/matrixd_core_test build/tests/matrixd_multi_gpu_test \
#       build/tests/matrixd_server_test
# then through the device tool, carry [".gpu"], kind nvidia-h100-x2:
#   tests/gpu/mgfactor-run.sh
# Knobs: SIZES="16384 32768", REPEATS=2, GATE=1 (0 skips step 1), BIN (default .gpu/bin),
# BIG=0 (N of step 3; 0 skips it), CHECK_N=20000. The big run alone, on two H200s:
#   BIG=100000 SIZES= GATE=0 tests/gpu/mgfactor-run.sh      (kind nvidia-h200-x2)
#   BIG=90000 SIZES= GATE=0 tests/gpu/mgfactor-run.sh       (kind nvidia-h100-x2)
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" mgfactor
sizes=${SIZES:-16384 32768}
repeats=${REPEATS:-2}

gpu_info
gpu_topology

if [ "${GATE:-1}" = 1 ]; then
  log "matrixd_multi_gpu_test"
  run_gtest 400 "${out}/multi_gpu_test.txt" "${bin}/matrixd_multi_gpu_test" --gtest_brief=1 \
    --gtest_filter='MultiGpuFactorize.*:KeptMultiGpuFactorization.*:MultiGpuSolveDevice*:MultiGpuBackend.*:MultiGpuLu.*'
  log "matrixd_core_test"
  run_gtest 300 "${out}/core_test.txt" "${bin}/matrixd_core_test" --gtest_brief=1 \
    --gtest_filter='*SupportsTest*:FactorizeDevices.*:*Factorize*'
  log "matrixd_server_test"
  run_gtest 200 "${out}/server_test.txt" "${bin}/matrixd_server_test" --gtest_brief=1 \
    --gtest_filter='BadRequestTest.*:MultiDeviceAdmission*:DistributedFactorizationRpcTest.*:Kept*'
fi

port=50066
log "matrixd --backend=cuda"
start_matrixd "${port}" "${out}/matrixd.log" --backend=cuda --metrics=127.0.0.1:9476 \
  --resident_memory_limit=200G --max_matrix_elements=20000000000 || log "matrixd did not start"
ctl_timeout=500  # ctl (run_lib.sh)
ctl health >>"${out}/cli.txt" 2>&1

# factorize LABEL HANDLE ARGS...: one kept factorization; its round trip and the kernel lines of
# its stats (cusolver_getrf/potrf on one GPU, cusolvermg_getrf/potrf on several) go to the
# summary, its kept handles are removed.
factorize() {
  local label=$1 handle=$2
  shift 2
  echo "### ${label}: matrixctl factorize @${handle:0:8} $*" >>"${out}/cli.txt"
  local t0 reply rc
  t0=$(now)
  reply=$(ctl factorize "@${handle:0:8}" --keep "$@" 2>&1)
  rc=$?
  echo "${reply}" >>"${out}/cli.txt"
  log "  ${label}: exit ${rc}, round trip $(since "${t0}") s;" \
    "$(echo "${reply}" | grep -E 'cusolver|seconds|error|rror' | tr -s ' ' | tr '\n' ';' | cut -c1-400)"
  # The kept results ("  kept NAME: HANDLE (...)" lines).
  for kept in $(echo "${reply}" | grep -oE 'kept [a-z_]+: [0-9a-f]+' | awk '{print $3}' | sort -u); do
    ctl rm "${kept}" >/dev/null 2>&1
  done
}

for n in ${sizes}; do
  log "n=${n}"
  a=$(generate "random ${n}" random "${n}" --seed=5)
  for r in $(seq "${repeats}"); do
    for d in 1 2; do factorize "LU n=${n} devices=${d} run ${r}" "${a}" --kind=lu --devices="${d}"; done
  done
  ctl rm "${a}" >/dev/null 2>&1
  s=$(generate "identity ${n}" identity "${n}")
  for r in $(seq "${repeats}"); do
    for d in 1 2; do
      factorize "Cholesky n=${n} devices=${d} run ${r}" "${s}" --kind=cholesky --devices="${d}"
    done
  done
  ctl rm "${s}" >/dev/null 2>&1
  ctl ls >>"${out}/cli.txt" 2>&1
done



big=${BIG:-0}
if [ "${big}" -gt 0 ]; then
  log "big: LU of a distributed float64 ${big} x ${big} kept over 2 GPUs, solved by its handle"
  a=$(generate "distributed random ${big}" random "${big}" --seed=21 --layout=distributed)
  nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv >>"${out}/summary.txt" 2>&1
  f=$(timed_kept "factorize LU n=${big} devices=2 --keep" factorize "@${a:0:8}" --kind=lu --devices=2 \
    --keep | head -1)
  ctl ls >>"${out}/cli.txt" 2>&1
  ctl ls 2>&1 | grep -i "${f:0:8}" >>"${out}/summary.txt"
  nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv >>"${out}/summary.txt" 2>&1
  timed_kept "solve n=${big} by the kept handle, 1 rhs" solve "@${f:0:8}" --rhs_random=1 \
    --output="${out}/x-big.npy" >/dev/null
  timed_kept "solve n=${big} by the kept handle, 4 rhs" solve "@${f:0:8}" --rhs_random=4 >/dev/null
  ctl rm "${f}" "${a}" >/dev/null 2>&1
  log "  after rm (every GPU's memory given back):"
  nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv >>"${out}/summary.txt" 2>&1
  rm -f "${out}/x-big.npy"

  check=${CHECK_N:-20000}
  log "accuracy at n=${check}: kept over 2 GPUs vs kept on 1 GPU (with its residual)"
  c=$(generate "distributed random ${check}" random "${check}" --seed=23 --layout=distributed)
  f2=$(timed_kept "factorize LU n=${check} devices=2 --keep" factorize "@${c:0:8}" --kind=lu \
    --devices=2 --keep | head -1)
  f1=$(timed_kept "factorize LU n=${check} devices=1 --keep --keep_input" factorize "@${c:0:8}" \
    --kind=lu --devices=1 --keep --keep_input | grep -v '^$' | head -1)
  timed_kept "solve n=${check} kept on 1 GPU, --residual" solve "@${f1:0:8}" --rhs_random=2 \
    --residual --output="${out}/x1.npy" >/dev/null
  timed_kept "solve n=${check} kept over 2 GPUs" solve "@${f2:0:8}" --rhs_random=2 \
    --output="${out}/x2.npy" >/dev/null
  log "  $(compare_npy "${out}/x1.npy" "${out}/x2.npy")"
  ctl rm "${f1}" "${f2}" "${c}" >/dev/null 2>&1
  rm -f "${out}/x1.npy" "${out}/x2.npy"
fi

kill "${pid}"
wait "${pid}" 2>/dev/null
log "done"
