#!/usr/bin/env bash
# The multi-GPU scaling run (issues 10 and 12) in one device call: Cannon's float64 product on
# R = 1, 2, 4, 8 GPUs of one host (as many as the machine has), n = 32768 and 65536, operands on
# the GPUs (rounds timed; scatter and gather reported apart), after the correctness test on every
# device count. Writes $OUT/scaling.txt and a summary.
#
# Preparing (here, before the device call):
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 && \
#     cmake --build build -j2 --target matrixd_multi_gpu_test matrixd_cannon_bench
#   ../shared/gpu/bundle.sh .gpu build/tests/matrixd_multi_gpu_test build/tests/matrixd_cannon_bench
# then, through the device tool with carry [".gpu"], on nvidia-h200-x2 (R = 1, 2), -x4 or -x8:
#   tests/gpu/scaling-run.sh
# SIZES="32768" or GPUS="1 2" narrow the run; each bench line is one process under `timeout`.
#
# Not in this run yet (see docs/distributed.md): cuBLASMp products and cuSOLVERMp LU/det (their
# libraries are found by CMake but not called), the permanent split over GPUs, and R MPI ranks of
# one GPU each (the MPI path runs ScaLAPACK on CPUs only).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:?OUT must name the output directory}
export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=${BIN:-.gpu/bin}
log() { echo "## $(date -u +%H:%M:%S) $*" | tee -a "${out}/summary.txt"; }

available=$(nvidia-smi -L | wc -l)
nvidia-smi -L | tee -a "${out}/summary.txt"
gpus_list=${GPUS:-1 2 4 8}
sizes=${SIZES:-32768 65536}

log "matrixd_multi_gpu_test on 1..${available} GPUs"
timeout 240 "${bin}/matrixd_multi_gpu_test" --gtest_brief=1 >"${out}/multi_gpu_test.txt" 2>&1
log "  exit $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "${out}/multi_gpu_test.txt" | tr '\n' ' ')"

for n in ${sizes}; do
  for r in ${gpus_list}; do
    ((r <= available)) || continue
    # 5 blocks of n^2/q^2 doubles per grid position (A, B twice, C): n = 65536 needs >= 2 H200.
    if ((n >= 65536 && r < 2)); then
      log "cannon n=${n} gpus=${r}: skipped (does not fit one GPU)"
      continue
    fi
    log "cannon n=${n} gpus=${r}"
    timeout 300 "${bin}/matrixd_cannon_bench" --n="${n}" --gpus="${r}" --repeats=3 \
      >>"${out}/scaling.txt" 2>&1
    log "  exit $?: $(tail -1 "${out}/scaling.txt")"
  done
done
# Efficiency of each line against the 1-GPU line of the same n (rounds time).
awk '/^cannon/ { split($3, a, "="); split($2, g, "="); split($5, t, "=");
       n = a[2]; r = g[2]; s = t[2]; if (r == 1) base[n] = s; time[n, r] = s; order[++k] = n SUBSEP r }
     END { for (i = 1; i <= k; i++) { split(order[i], p, SUBSEP); n = p[1]; r = p[2];
       if (base[n] > 0) printf "n=%s gpus=%s speed-up %.2f efficiency %.0f%%\n", n, r,
         base[n] / time[n, r], 100 * base[n] / time[n, r] / r } }' "${out}/scaling.txt" |
  tee -a "${out}/summary.txt"
