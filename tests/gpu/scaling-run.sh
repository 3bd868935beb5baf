#!/usr/bin/env bash
# The multi-GPU scaling run (issues 10 and 12) in one device call, on R = 1, 2, 4 (8) GPUs of one
# host (as many as the machine has), all operands resident on the GPUs:
#   1. cuBLASMp and cuSOLVERMp: the libraries' versions (probe), correctness against one GPU
#      (matrixd_mp_bench --check), cuBLASMp GEMM float64 and cuSOLVERMp LU/det float64 at
#      n = 32768 and 65536 (one process per GPU, forked by the bench, no MPI);
#   2. Cannon's float64 product (one process, NCCL between its GPUs) after its correctness test.
# Speed-up and efficiency lines against the smallest R that ran for each (method, n). Writes
# $OUT/scaling.txt (the bench lines), $OUT/summary.txt and one log per step.
#
# Preparing (here, before the device call):
#   deploy/install-deps.sh     # the wheels: cuBLASMp 0.10, cuSOLVERMp 0.9.1, NCCL 2.29.7
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 && \
#     cmake --build build -j2 --target matrixd_multi_gpu_test matrixd_cannon_bench matrixd_mp_bench
#   tests/gpu/bundle-mp.sh .gpu build    # bundle.sh + libcublasmp.so.0 and libcusolverMp.so.0
# then, through the device tool with carry [".gpu"], on nvidia-h100-x4 (or -x2, -x8):
#   tests/gpu/scaling-run.sh
# Knobs: OPS="mp cannon permanent" (any of them; PERM_N=36 the permanent's order), GPUS="1 2 4",
# SIZES="32768 65536", REPEATS=2 (timed runs after one warm-up), GEMM_BLOCK / LU_BLOCK
# (block-cyclic block; 0 = the bench's default 1024 / 512), GRID_ROWS (process grid rows; 0 =
# the most nearly square grid, rows <= cols),
# BUDGET_S=470 (the whole script; a step that would pass it is skipped and says so).
#
# NCCL: cuBLASMp 0.10 needs NCCL >= 2.29.2, too large to carry. The script asks the bench which
# NCCL and cuBLAS it loads (--probe) and, when they are too old, tries the NVIDIA wheels of the
# machine's Python (nvidia/nccl/lib, nvidia/cublas/lib) first in LD_LIBRARY_PATH.
set -uo pipefail
# Mandatory on the lent machines: NVLink multicast (NVLS) can take the host's GPUs out of service.
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" scaling
ops=${OPS:-mp cannon permanent}
gpus_list=${GPUS:-1 2 4 8}
sizes=${SIZES:-32768 65536}
repeats=${REPEATS:-2}
budget=${BUDGET_S:-470}
step_min_left=15  # step (run_lib.sh) skips with less left

available=$(nvidia-smi -L | wc -l)
gpu_info
gpu_topology

# The candidate folders of a newer NCCL and cuBLAS on the machine: its Python's NVIDIA wheels.
wheel_lib_dirs() {
  local python
  for python in python3 /opt/torch/.venv/bin/python3; do
    command -v "${python}" >/dev/null 2>&1 || continue
    "${python}" - <<'PY' 2>/dev/null
import glob, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()]
dirs = []
for root in roots:
    for name in ("nccl", "cublas"):
        dirs += glob.glob(f"{root}/nvidia/{name}/lib")
print(":".join(dict.fromkeys(dirs)))
PY
  done | grep -v '^$' | head -1
}

run_mp() {
  local probe_log="${out}/mp_probe.txt"
  if [[ ! -x ${bin}/matrixd_mp_bench ]]; then
    log "mp: ${bin}/matrixd_mp_bench missing (built without the cuBLASMp wheels?); skipped"
    return
  fi
  if ! step "mp probe" 20 "${probe_log}" "${bin}/matrixd_mp_bench" --probe; then
    local extra
    extra=$(wheel_lib_dirs)
    if [[ -n ${extra} ]]; then
      export LD_LIBRARY_PATH=${extra}:${LD_LIBRARY_PATH}
      if ! step "mp probe with ${extra}" 20 "${probe_log}" "${bin}/matrixd_mp_bench" --probe; then
        log "mp: no NCCL >= 2.29.2 / cuBLAS >= 13.1 on this machine; cuBLASMp/cuSOLVERMp skipped"
        return
      fi
    else
      log "mp: no NCCL >= 2.29.2 / cuBLAS >= 13.1 on this machine; cuBLASMp/cuSOLVERMp skipped"
      return
    fi
  fi
  ldd "${bin}/matrixd_mp_bench" >"${out}/mp_ldd.txt" 2>&1

  # Correctness on the largest grid (and 2 GPUs): sizes that no block divides, ragged edges.
  local r checks=""
  for r in 2 4 8; do ((r <= available)) && checks="${r}"; done
  ((available >= 2)) && [[ ${checks} != 2 ]] && checks="2 ${checks}"
  for r in ${checks}; do
    step "check cublasmp gpus=${r}" 60 "${out}/mp_check.txt" \
      "${bin}/matrixd_mp_bench" --check --op=gemm --n=1999 --block=128 --gpus="${r}"
    step "check cusolvermp_lu gpus=${r}" 60 "${out}/mp_check.txt" \
      "${bin}/matrixd_mp_bench" --check --op=lu --n=1001 --block=64 --gpus="${r}"
  done

  local n op
  # The one-GPU library baselines the issues compare with (cuBLAS DGEMM, cuSOLVER getrf), on the
  # whole matrices; the 65536 product does not fit one H100 (the bench exits 2 and says so).
  for n in ${sizes}; do
    step "dgemm1 n=${n}" 90 "${out}/scaling.txt" \
      "${bin}/matrixd_mp_bench" --op=dgemm1 --n="${n}" --gpus=1 --repeats="${repeats}"
    step "getrf1 n=${n}" 120 "${out}/scaling.txt" \
      "${bin}/matrixd_mp_bench" --op=getrf1 --n="${n}" --gpus=1 --repeats="${repeats}"
  done
  for op in gemm lu; do
    for n in ${sizes}; do
      for r in ${gpus_list}; do
        ((r <= available)) || continue
        local block=${GEMM_BLOCK:-0}
        [[ ${op} == lu ]] && block=${LU_BLOCK:-0}
        # n = 65536: the GEMM's three 32 GiB operands need two H100s (one H200); the LU's one
        # fits one GPU.
        step "${op} n=${n} gpus=${r}" 150 "${out}/scaling.txt" \
          "${bin}/matrixd_mp_bench" --op="${op}" --n="${n}" --gpus="${r}" \
          --repeats="${repeats}" --block="${block}" --grid_rows="${GRID_ROWS:-0}"
      done
    done
  done
}

run_cannon() {
  step "matrixd_multi_gpu_test on 1..${available} GPUs" 240 "${out}/multi_gpu_test.txt" \
    "${bin}/matrixd_multi_gpu_test" --gtest_brief=1
  local n r
  for n in ${sizes}; do
    for r in ${gpus_list}; do
      ((r <= available)) || continue
      # 5 blocks of n^2/q^2 doubles per grid position (A, B twice, C): n = 65536 needs >= 2 H200.
      if ((n >= 65536 && r < 2)); then
        log "cannon n=${n} gpus=${r}: skipped (does not fit one GPU)"
        continue
      fi
      step "cannon n=${n} gpus=${r}" 300 "${out}/scaling.txt" \
        "${bin}/matrixd_cannon_bench" --n="${n}" --gpus="${r}" --repeats=3
    done
  done
}

# One float64 permanent (entries k / 2^20) with its Gray-code walk split over R GPUs.
run_permanent() {
  local r
  for r in ${gpus_list}; do
    ((r <= available)) || continue
    step "permanent n=${PERM_N:-36} gpus=${r}" 200 "${out}/scaling.txt" \
      "${bin}/matrixd_permanent_split_bench" --n="${PERM_N:-36}" --gpus="${r}" --repeats=2
  done
}

for op in ${ops}; do
  case ${op} in
    mp) run_mp ;;
    cannon) run_cannon ;;
    permanent) run_permanent ;;
    *) log "unknown OPS entry ${op}" ;;
  esac
done

# Speed-up and efficiency of each (method, n, R) against the smallest R of the same method and n,
# and of the distributed libraries against the one-GPU library (cuBLAS for cuBLASMp, cuSOLVER
# getrf for cuSOLVERMp), on the best (least) time of the runs. Cannon's lines give "gpus=R n=N
# ... rounds=S s"; the mp bench's give key=value fields with seconds=S.
log "efficiency (best time per method, n, R; against the smallest R that ran, and the 1-GPU library)"
touch "${out}/scaling.txt"
awk '
  function field(key,   i, kv) {
    for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == key) return kv[2] }
    return ""
  }
  /^(cannon|cublasmp|cusolvermp_lu|cublas|cusolver_getrf|permanent) / {
    method = $1; n = field("n"); r = field("gpus")
    s = (method == "cannon") ? field("rounds") : field("seconds")
    if (n == "" || r == "" || s == "") next
    key = method SUBSEP n
    if (!((key, r) in best) || s + 0 < best[key, r]) best[key, r] = s + 0
    if (!(key in base_r) || r + 0 < base_r[key]) base_r[key] = r + 0
    if (!((key, r) in seen)) { seen[key, r] = 1; order[++k] = key SUBSEP r }
  }
  END {
    library["cublasmp"] = "cublas"; library["cusolvermp_lu"] = "cusolver_getrf"
    library["cannon"] = "cublas"
    for (i = 1; i <= k; i++) {
      split(order[i], p, SUBSEP); method = p[1]; n = p[2]; r = p[3]; key = method SUBSEP n
      if (method == "cublas" || method == "cusolver_getrf") continue
      b = base_r[key]; t = best[key, r]; tb = best[key, b]
      line = sprintf("%s n=%s gpus=%s best=%.4fs speed-up %.2f vs %d GPU(s), efficiency %.0f%%",
                     method, n, r, t, tb / t, b, 100 * tb * b / (t * r))
      lib = library[method] SUBSEP n
      if ((lib, 1) in best) {
        line = line sprintf("; vs 1-GPU %s %.4fs: speed-up %.2f, efficiency %.0f%%",
                            library[method], best[lib, 1], best[lib, 1] / t,
                            100 * best[lib, 1] / (t * r))
      }
      print line
    }
  }' "${out}/scaling.txt" | tee -a "${out}/summary.txt"
log "done in $((SECONDS - started))s"
