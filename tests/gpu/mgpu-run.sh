#!/usr/bin/env bash
# LU/determinant float64 over the 2 GPUs of one host (issue 10's "LU/det n = 65536, 2 GPUs vs 1
# GPU cuSOLVER getrf >= 1.6x"), in one device call on nvidia-h100-x2:
#   0. the GPUs, their peer access and whether cusolverMg loads (matrixd_lu_bench --probe);
#   1. correctness gate, small n: matrixd_multi_gpu_test --gtest_filter='MultiGpuLu.*', then
#      matrixd_lu_bench --check for both ops (own = MultiGpuLu, mg = cusolverMg) on 1 and 2 GPUs,
#      n a multiple of the block, not one, below it; uniform vs getrf on one GPU, the reversed
#      (-1, 2, -1) matrix vs its exact determinant, a singular matrix vs 0. An op whose gate fails
#      is left out of the timed runs (FORCE=1 runs it anyway);
#   2. timed: getrf1 (cusolverDnXgetrf on GPU 0), mg and own on 2 GPUs at n = SIZES, then, as
#      the budget allows, own on 1 GPU and own's block sweep at n = 32768;
#   3. a table of the best time of each (op, n, GPUs) and its speed-up over getrf1 at that n.
# Every step runs under `timeout` and its failure stops nothing else. Output in $OUT: lu.txt (the
# bench lines), checks.txt, summary.txt, table.txt, stderr.txt, topology.txt.
#
# Preparing (here):
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 && \
#     cmake --build build -j2 --target matrixd_lu_bench matrixd_multi_gpu_test
#   ../shared/gpu/bundle.sh .gpu build/tests/matrixd_lu_bench build/tests/matrixd_multi_gpu_test
# then through the device tool, carry [".gpu"], kind nvidia-h100-x2:
#   tests/gpu/mgpu-run.sh
# Knobs: SIZES="16384 32768 65536", REPEATS=2 (timed runs after one warm-up; 1 at 65536),
# BLOCK=512 (own and mg), SWEEP_BLOCKS="256 768 1024", BUDGET_S=540, FORCE=0.
# cusolverMg is loaded at run time (libcusolverMg.so.12 of the CUDA toolkit, 100 MB, not carried):
# when the loader does not find it, the script looks in the CUDA and Python wheel folders; when
# it is nowhere, mg says "not available" (exit 3) and the rest runs.
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" mgpu
sizes=${SIZES:-16384 32768 65536}
repeats=${REPEATS:-2}
block=${BLOCK:-512}
sweep_blocks=${SWEEP_BLOCKS:-256 768 1024}
budget=${BUDGET_S:-540}
force=${FORCE:-0}

for b in matrixd_lu_bench matrixd_multi_gpu_test; do
  [[ -x ${bin}/${b} ]] || log "MISSING ${bin}/${b} (bundle it: see the header)"
done
gpu_info
gpu_topology
available=$(nvidia-smi -L | wc -l)

# cusolverMg: the toolkit's, else a wheel's (nvidia/cu13/lib or nvidia/cusolver/lib).
if ! ldconfig -p 2>/dev/null | grep -q 'libcusolverMg.so.12'; then
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda-13*/lib64 \
    /usr/local/cuda-13*/targets/x86_64-linux/lib $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null | xargs -n1 -I{} echo {}/nvidia/cu13/lib {}/nvidia/cusolver/lib); do
    if [[ -e ${dir}/libcusolverMg.so.12 ]]; then
      export LD_LIBRARY_PATH=${LD_LIBRARY_PATH}:${dir}
      log "cusolverMg from ${dir}"
      break
    fi
  done
fi
step "probe" 30 "${out}/summary.txt" "${bin}/matrixd_lu_bench" --probe

# 1. Correctness gate.
step "gtest MultiGpuLu" 150 "${out}/checks.txt" "${bin}/matrixd_multi_gpu_test" \
  --gtest_filter='MultiGpuLu.*' --gtest_brief=1
declare -A gate=([own]=pass [mg]=pass)
for op in own mg; do
  for gpus in 1 2; do
    ((gpus > available)) && continue
    for shape in "1001 64" "1024 128" "37 64" "2 1" "3000 256"; do
      read -r n nb <<<"${shape}"
      step "check ${op} n=${n} block=${nb} gpus=${gpus}" 60 "${out}/checks.txt" \
        "${bin}/matrixd_lu_bench" --check --op="${op}" --n="${n}" --block="${nb}" --gpus="${gpus}"
      code=$?
      if ((code == 3)); then
        gate[${op}]="not available"
        break 2
      fi
      ((code != 0)) && gate[${op}]=fail
    done
  done
done
log "gate: own ${gate[own]}, mg ${gate[mg]} (checks.txt: $(grep -c PASS "${out}/checks.txt") PASS, $(grep -c FAIL "${out}/checks.txt") FAIL)"
runs() { [[ ${gate[$1]} == pass || (${force} == 1 && ${gate[$1]} != "not available") ]]; }

# 2. Timed runs: at each n the baseline, then both ops on 2 GPUs.
limit_for() { if (($1 >= 65536)); then echo 150; elif (($1 >= 32768)); then echo 90; else echo 60; fi; }
for n in ${sizes}; do
  r=${repeats}
  ((n >= 65536)) && r=1
  lim=$(limit_for "${n}")
  step "getrf1 n=${n}" "${lim}" "${out}/lu.txt" "${bin}/matrixd_lu_bench" --op=getrf1 --n="${n}" \
    --repeats="${r}"
  for op in own mg; do
    runs "${op}" || { log "${op} n=${n}: skipped (gate ${gate[${op}]})"; continue; }
    step "${op} n=${n} gpus=2 block=${block}" "${lim}" "${out}/lu.txt" "${bin}/matrixd_lu_bench" \
      --op="${op}" --n="${n}" --gpus=2 --block="${block}" --repeats="${r}"
  done
done
# Extras as the budget allows: own on one GPU (its overhead against getrf), and block sizes.
if runs own; then
  step "own n=32768 gpus=1 block=${block}" 60 "${out}/lu.txt" "${bin}/matrixd_lu_bench" \
    --op=own --n=32768 --gpus=1 --block="${block}" --repeats="${repeats}"
  for nb in ${sweep_blocks}; do
    step "own n=32768 gpus=2 block=${nb}" 60 "${out}/lu.txt" "${bin}/matrixd_lu_bench" \
      --op=own --n=32768 --gpus=2 --block="${nb}" --repeats="${repeats}"
  done
fi

# 3. The table: best seconds per (op, n, gpus, block), speed-up over getrf1's best at that n.
awk '
  { op = $1; n = ""; g = ""; b = ""; s = ""; t = ""; sign = ""; l = ""
    for (i = 2; i <= NF; ++i) {
      split($i, kv, "=")
      if (kv[1] == "n") n = kv[2]; else if (kv[1] == "gpus") g = kv[2]
      else if (kv[1] == "block") b = kv[2]; else if (kv[1] == "seconds") s = kv[2]
      else if (kv[1] == "tflops") t = kv[2]; else if (kv[1] == "sign") sign = kv[2]
      else if (kv[1] == "log_abs_det") l = kv[2]
    }
    if (s == "") next
    key = op " " n " " g " " b
    if (!(key in best) || s + 0 < best[key] + 0) { best[key] = s; tf[key] = t; det[key] = sign " " l }
    if (op == "getrf1" && (!(n in base) || s + 0 < base[n] + 0)) base[n] = s
  }
  END {
    printf "%-8s %7s %5s %6s %10s %8s %9s  %s\n", "op", "n", "gpus", "block", "seconds", "TFLOP/s", "vs getrf1", "sign log|det|"
    for (key in best) {
      split(key, k, " ")
      speedup = (k[2] in base) ? sprintf("%.2fx", base[k[2]] / best[key]) : "-"
      printf "%-8s %7s %5s %6s %10.4f %8s %9s  %s\n", k[1], k[2], k[3], k[4], best[key], tf[key], speedup, det[key]
    }
  }' "${out}/lu.txt" 2>/dev/null | (read -r header; echo "${header}"; sort -k2,2n -k1,1 -k3,3n -k4,4n) \
  >"${out}/table.txt"
log "table (best of the timed runs; speed-up = getrf1's best / this):"
tee -a "${out}/summary.txt" <"${out}/table.txt"
log "done"
