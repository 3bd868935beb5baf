#!/usr/bin/env bash
# Factorizations of a resident matrix read on the GPU where it lies: QR, batches and refined LU
# solves (Backend::FactorizeReadsOnDevice), which the server used to copy to host memory first and
# the backend then uploaded again. One device call on nvidia-h100-x1 (or nvidia-h200):
#   1. gate: matrixd_core_test (ResidentMatrix*: each of them on a resident view bit for bit as on
#      the host bytes, the batch with a singular member refactored on the host; the factorize,
#      refinement and batched-LU suites as regressions), matrixd_server_test (resident and
#      factorize RPCs);
#   2. for the server before the change ($BIN/matrixd.before, if bundled) and after ($BIN/matrixd),
#      alternated ROUNDS times: matrixd --backend=cuda; for each n in SIZES `generate random n`,
#      then `factorize @H --kind qr --rhs_random 1 --estimate_condition` and
#      `factorize @H --refine --rhs_random 1`, each's round trip and reply lines in the report.
# Every step runs under `timeout`; a failure stops nothing else. Output in $OUT (summary.txt,
# cli.txt, the servers' logs, the tests' logs), tarred into $OUT/resfact-logs.tar.gz at the end.
#
# Preparing (here; matrixd.before built from the commit before, e.g. in a worktree):
#   cmake --build build -j2 --target matrixd matrixctl matrixd_core_test matrixd_server_test
#   ../shared/gpu/bundle.sh .gpu build/server/matrixd build/client/matrixctl \
#       build/tests/matrixd_core_test build/tests/matrixd_server_test
#   cp OLD/matrixd .gpu/bin/matrixd.before
# then through the device tool, carry [".gpu"]: tests/gpu/resident-factorize-run.sh
# Knobs: SIZES="4096 8192", ROUNDS=2, GATE=1 (0 skips step 1), SERVER_FLAGS (added to both
# servers' flags; the default lets a QR of n = 8192 answer its 1 GiB of Q and R inline:
# --max_message_bytes=2000000000), BIN (default .gpu/bin), BACKEND (cuda;
# cpu to try it without a GPU: BIN=DIR BACKEND=cpu GATE=0 SIZES=300 OUT=/tmp/x).
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" resfact
sizes=${SIZES:-4096 8192}
rounds=${ROUNDS:-2}
backend=${BACKEND:-cuda}
read -r -a server_flags <<<"${SERVER_FLAGS:---max_message_bytes=2000000000}"

gpu_info

if [ "${GATE:-1}" = 1 ]; then
  log "matrixd_core_test"
  run_gtest 400 "${out}/core_test.txt" "${bin}/matrixd_core_test" --gtest_brief=1 \
    --gtest_filter='*ResidentMatrix*:*Factorize*:*Refine*:*BatchedLu*:*FactorizeBatch*'
  log "matrixd_server_test"
  run_gtest 300 "${out}/server_test.txt" "${bin}/matrixd_server_test" --gtest_brief=1 \
    --gtest_filter='*Resident*:*Factoriz*:*Refine*'
fi

# What timed_kept (run_lib.sh) reports of each reply.
reply_lines='rcond|refinement|rror'

port=50069
ctl_timeout=300  # ctl (run_lib.sh)
servers=()
[ -x "${bin}/matrixd.before" ] && servers+=(before)
servers+=(after)
for round in $(seq "${rounds}"); do
  for server in "${servers[@]}"; do
    program=matrixd
    [ "${server}" = before ] && program=matrixd.before
    log "round ${round}: ${program} --backend=${backend}"
    "${bin}/${program}" --listen="127.0.0.1:${port}" --backend="${backend}" \
      --resident_memory_limit=90% "${server_flags[@]}" >"${out}/${program}-${round}.log" 2>&1 &
    pid=$!
    for _ in $(seq 60); do
      ctl --deadline=1s health >/dev/null 2>&1 && break
      sleep 0.5
    done
    for n in ${sizes}; do
      handle=$(generate "random ${n}" random "${n}")
      timed_kept "${server} qr n=${n}" factorize "@${handle:0:8}" --kind=qr --rhs_random=1 \
        --estimate_condition >/dev/null
      timed_kept "${server} refined lu n=${n}" factorize "@${handle:0:8}" --refine \
        --rhs_random=1 >/dev/null
      ctl rm "${handle}" >/dev/null 2>&1
    done
    kill "${pid}"
    wait "${pid}" 2>/dev/null
  done
done
log "done"
