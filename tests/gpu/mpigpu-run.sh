#!/usr/bin/env bash
# The --distributed mode on the GPUs (issue 10: "cuBLASMp/cuSOLVERMp by RPC" and "2 MPI ranks x 1
# GPU each vs 1 rank x 2 GPUs, same host, same jobs: the cost of the MPI path"), in one device call
# on a 2-GPU machine (nvidia-h100-x2):
#   G. `mpirun -n 2 matrixd --distributed --backend=cuda --distributed_engine=nvidia_mp`: each rank
#      takes the GPU of its local rank, products run by cuBLASMp and determinants by cuSOLVERMp
#      over one NCCL communicator; then, through matrixctl:
#      a. correctness jobs: multiply of two generated (resident) 2001 x 2001 matrices, det of a
#         generated 1001 x 1001, multiply --multiply_method cublasmp of inline --random 2001
#         operands with B transposed, and an LU solve (which stays on ScaLAPACK);
#      b. timed: GEMM n = 16384 and 32768 (generated A, B; C kept on the server) and det
#         n = 32768, each twice;
#   S. one process, `matrixd --backend=cuda` on both GPUs, the same generated matrices (same
#      seeds): the same correctness jobs (the reference), then timed: 1 GPU (cuBLAS DGEMM, cuSOLVER
#      getrf), `multiply --devices 2` (Cannon over NCCL) and `det --devices 2` (our MultiGpuLu).
# The servers run one after the other (never both on the GPUs during a timing). Compute times
# are the server's stats ("compute ..."); for the grid they run from the header broadcast to the
# gathered result on rank 0 (MPI scatter, host-to-GPU copies and gather included); for Cannon and
# MultiGpuLu from the host operand (their scatter included); for 1 GPU the library call on
# resident operands. Round trips (client) are printed beside them. Outputs in $OUT: summary.txt
# (with the table), checks.txt, jobs/*.txt (every matrixctl answer), grid.err / single.err (the
# servers' logs), env.txt (MPI, NCCL and library paths actually loaded).
#
# MPI: the GPU machine's own OpenMPI (Ubuntu 24.04, 4.1.x) runs it: its `mpirun`, and its
# libmpi.so.40 / libopen-rte / libopen-pal, which bundle.sh never bundles (the binary was built
# against Debian 12's OpenMPI 4.1.4: same soname and ABI). Debian's libscalapack-openmpi.so.2.2 is
# bundled (the machine has none). env.txt shows the ldd lines.
# NCCL: cuBLASMp 0.10 needs NCCL >= 2.29.2, and the binary itself loads libnccl.so.2 (Cannon) before
# the GPU engine's plugin, so the 2.29 library must come first in LD_LIBRARY_PATH for both: the
# script takes $NCCL_DIR, else /tmp/nccl229 (where split-nccl.sh's four calls put it), else the
# machine's Python NVIDIA wheel (nvidia/nccl/lib), whichever holds NCCL >= 2.29.2. Without one the
# grid server refuses to start (--distributed_engine=nvidia_mp says why, in grid.err) and only the
# single-process part runs.
#
# Preparing (here):
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 && \
#     cmake --build build -j2 --target matrixd matrixctl matrixd_mp_grid
#   tests/gpu/bundle-mpigpu.sh .gpu build          # .gpu/mpigpu.tar.xz, ~32 MB
#   tests/gpu/split-nccl.sh                        # .nccl1 .. .nccl4 (if the machine lacks 2.29)
# then on one warm nvidia-h100-x2 machine: the four NCCL calls of split-nccl.sh's header, then
# `cat /tmp/ncl/p0 /tmp/ncl/p1 /tmp/ncl/p2 /tmp/ncl/p3 > /tmp/nccl229/libnccl.so.2` (mkdir -p
# /tmp/nccl229 first) and, carry [".gpu"]:
#   tests/gpu/mpigpu-run.sh
# Knobs: GPUS=2 (the ranks of G and the GPUs of S: 4 on an nvidia-h100-x4, issue 12's MPI row),
# SIZES="16384 32768" (GEMM), DET_SIZES="32768", REPEATS=2, GRID_OPTS (extra flags for the
# grid server, e.g. "--distributed_gpu_block=512"), BUDGET_S=540, NCCL_DIR, BUNDLE_DIR=.gpu; for
# a dry run of the plumbing without a GPU: BACKEND=cpu ENGINE=scalapack SIZES=600 DET_SIZES=600.
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" mpigpu  # its bin is replaced below
mkdir -p "${out}/jobs"
# Mandatory on the lent machines: NVLink multicast (NVLS) can take the host's GPUs out of service.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
gpus=${GPUS:-2}
sizes=${SIZES:-16384 32768}
det_sizes=${DET_SIZES:-32768}
repeats=${REPEATS:-2}
budget=${BUDGET_S:-540}
python=${PYTHON:-python3}
left() { echo $((budget - (SECONDS - started))); }

# The bundle: .gpu/mpigpu.tar.xz (bundle-mpigpu.sh) unpacked, or .gpu/bin + .gpu/lib as they are.
root=${BUNDLE_DIR:-.gpu}
if [[ -f ${root}/mpigpu.tar.xz ]]; then
  mkdir -p /tmp/mpigpu && tar -C /tmp/mpigpu -xJf "${root}/mpigpu.tar.xz" && root=/tmp/mpigpu
fi
root=$(cd "${root}" && pwd)
bin=${root}/bin
export LD_LIBRARY_PATH=${root}/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for f in matrixd matrixctl libmatrixd_mp_grid.so; do
  [[ -e ${bin}/${f} ]] || log "MISSING ${bin}/${f} (see the header: bundle-mpigpu.sh)"
done

# NCCL >= 2.29.2 first in the library path.
nccl_version() {  # FILE -> "2.29.7" (empty when unreadable)
  strings "$1" 2>/dev/null | sed -n 's/^NCCL version \([0-9]*\.[0-9]*\.[0-9]*\).*/\1/p' | head -1
}
new_enough() {  # VERSION -> status 0 when >= 2.29.2
  local major minor patch
  IFS=. read -r major minor patch <<<"$1"
  [[ -n ${patch} ]] && ((major > 2 || (major == 2 && (minor > 29 || (minor == 29 && patch >= 2)))))
}
wheel_nccl_dirs() {
  local python_bin
  for python_bin in python3 /opt/torch/.venv/bin/python3; do
    command -v "${python_bin}" >/dev/null 2>&1 || continue
    "${python_bin}" -c 'import glob, site
for root in site.getsitepackages() + [site.getusersitepackages()]:
    for d in glob.glob(root + "/nvidia/nccl/lib"): print(d)' 2>/dev/null
  done
}
nccl_dir=""
for d in ${NCCL_DIR:-} /tmp/nccl229 $(wheel_nccl_dirs); do
  [[ -f ${d}/libnccl.so.2 ]] || continue
  v=$(nccl_version "${d}/libnccl.so.2")
  log "NCCL candidate ${d}: ${v:-unknown version}"
  if new_enough "${v}"; then
    nccl_dir=${d}
    break
  fi
done
if [[ -n ${nccl_dir} ]]; then
  export LD_LIBRARY_PATH=${nccl_dir}:${LD_LIBRARY_PATH}
  log "NCCL: ${nccl_dir} first in LD_LIBRARY_PATH"
else
  log "NCCL: no NCCL >= 2.29.2 found; the grid server will refuse the GPU engine"
fi

nvidia-smi -L | tee -a "${out}/summary.txt"
{
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH}"
  command -v mpirun && mpirun --version 2>&1 | head -1
  echo "--- ldd matrixd (MPI: the machine's, not bundled)"
  ldd "${bin}/matrixd" | grep -E 'libmpi|libopen-|scalapack|libnccl|libcublas|not found'
  echo "--- ldd libmatrixd_mp_grid.so"
  ldd "${bin}/libmatrixd_mp_grid.so" | grep -E 'cublasmp|cusolverMp|libnccl|libcublas|not found'
} >"${out}/env.txt" 2>&1
grep -E 'Open MPI|libmpi.so|libnccl|not found' "${out}/env.txt" | tee -a "${out}/summary.txt"

server_pid=""
port=""
# start NAME COMMAND...: starts a server, waits (120 s) for its "listening on" line; sets port.
start() {
  local name=$1
  shift
  "$@" >"${out}/${name}.out" 2>"${out}/${name}.err" &
  server_pid=$!
  port=""
  for _ in $(seq 1200); do
    port=$(sed -n 's/^matrixd listening on [^ ]*:\([0-9]*\) .*/\1/p' "${out}/${name}.out" 2>/dev/null)
    [[ -n ${port} ]] && break
    if ! kill -0 "${server_pid}" 2>/dev/null; then break; fi
    sleep 0.1
  done
  if [[ -z ${port} ]]; then
    log "${name}: did not start; its log:"
    tail -5 "${out}/${name}.err" | tee -a "${out}/summary.txt"
    stop
    return 1
  fi
  log "${name}: $(cat "${out}/${name}.out")"
  grep -E 'engine:' "${out}/${name}.err" | tee -a "${out}/summary.txt" || true
}
stop() {
  [[ -n ${server_pid} ]] || return 0
  kill -TERM "${server_pid}" 2>/dev/null
  for _ in $(seq 300); do
    kill -0 "${server_pid}" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "${server_pid}" 2>/dev/null
  wait "${server_pid}" 2>/dev/null
  server_pid=""
}
trap stop EXIT

ctl() { timeout -k 5 "${CTL_TIMEOUT:-300}" "${bin}/matrixctl" --server="127.0.0.1:${port}" "$@"; }
# job SERVER NAME ARGS...: one matrixctl call, its answer in jobs/NAME.SERVER.txt; logs the
# compute and round-trip times and the device the stats name.
job() {
  local server=$1 name=$2
  shift 2
  if (($(left) < 20)); then
    log "${server} ${name}: skipped (budget of ${budget}s spent)"
    return 99
  fi
  local file="${out}/jobs/${name}.${server}.txt"
  ctl "$@" >"${file}" 2>&1
  local code=$?
  local compute trip device
  compute=$(sed -n 's/.*, compute \([^,]*\),.*/\1/p' "${file}" | head -1)
  trip=$(sed -n 's/.*round trip \(.*\)$/\1/p' "${file}" | head -1)
  device=$(sed -n 's/.*server: backend [^,]*, device \(.*\), compute.*/\1/p' "${file}" | head -1)
  if ((code != 0)); then
    log "${server} ${name}: FAILED (exit ${code}): $(tail -1 "${file}")"
  else
    log "${server} ${name}: compute ${compute:-?}, round trip ${trip:-?} [${device}]"
    echo "${server}|${name}|${compute}|${trip}" >>"${out}/times.txt"
  fi
  return "${code}"
}
generate() {  # SEED N -> handle on stdout
  ctl generate random "$2" --seed "$1" 2>>"${out}/generate.txt"
}
kept() { sed -n 's/^  kept [a-z_]*: \([^ ]*\) .*/\1/p' "$1" | head -1; }

# The same jobs on either server ($1: grid or single). Correctness first, then timings.
run_jobs() {
  local s=$1
  local a b d
  a=$(generate 11 2001) && b=$(generate 12 2001) &&
    job "${s}" multiply2001 multiply "@${a}" "@${b}" --output "${out}/c2001.${s}.npy"
  ctl rm "${a}" "${b}" >/dev/null 2>&1
  d=$(generate 13 1001) && job "${s}" det1001 det "@${d}"
  ctl rm "${d}" >/dev/null 2>&1
  local method=()
  [[ ${s} == grid ]] && method=(--multiply_method cublasmp)
  job "${s}" multiply2001t multiply --random 2001 --seed 5 --transpose_b "${method[@]}" \
    --output "${out}/c2001t.${s}.npy"
  job "${s}" lusolve1500 factorize --kind lu --random 1500 --rhs_random 2 --seed 3 \
    --output "${out}/x1500.${s}.npy"

  local n r
  for n in ${sizes}; do
    a=$(generate 21 "${n}") && b=$(generate 22 "${n}") || { log "${s}: generate ${n} failed"; continue; }
    for r in $(seq "${repeats}"); do
      if [[ ${s} == grid ]]; then
        job "${s}" "gemm${n}.r${r}" multiply "@${a}" "@${b}" --keep &&
          ctl rm "$(kept "${out}/jobs/gemm${n}.r${r}.${s}.txt")" >/dev/null 2>&1
      else
        job "${s}" "gemm${n}.1gpu.r${r}" multiply "@${a}" "@${b}" --keep &&
          ctl rm "$(kept "${out}/jobs/gemm${n}.1gpu.r${r}.${s}.txt")" >/dev/null 2>&1
        job "${s}" "gemm${n}.cannon${gpus}.r${r}" multiply "@${a}" "@${b}" --devices "${gpus}" \
          --keep && ctl rm "$(kept "${out}/jobs/gemm${n}.cannon${gpus}.r${r}.${s}.txt")" \
          >/dev/null 2>&1
      fi
    done
    ctl rm "${a}" "${b}" >/dev/null 2>&1
  done
  for n in ${det_sizes}; do
    d=$(generate 23 "${n}") || { log "${s}: generate ${n} failed"; continue; }
    for r in $(seq "${repeats}"); do
      if [[ ${s} == grid ]]; then
        job "${s}" "det${n}.r${r}" det "@${d}"
      else
        job "${s}" "det${n}.1gpu.r${r}" det "@${d}"
        job "${s}" "det${n}.mgpulu${gpus}.r${r}" det "@${d}" --devices "${gpus}"
      fi
    done
    ctl rm "${d}" >/dev/null 2>&1
  done
}

# G: GPUS MPI ranks x 1 GPU. --bind-to none: OpenMPI binds each rank to one core by default,
# which would leave rank 0's gRPC threads and host packing one core. The local backend's pool on
# rank 0's GPU is capped so that the GPU engine's own allocations (outside that pool) fit beside
# the resident operands.
read -r -a grid_opts <<<"${GRID_OPTS:-}"
grid_cmd=(mpirun -n "${gpus}" --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS
  "${bin}/matrixd" --distributed --backend="${BACKEND:-cuda}"
  --distributed_engine="${ENGINE:-nvidia_mp}" --distributed_min_dimension=1000
  --distributed_timeout=10m --device_memory_limit=45% --listen=127.0.0.1:0 --metrics=
  --max_matrix_elements=20000000000
  "${grid_opts[@]}")
if start grid "${grid_cmd[@]}"; then
  run_jobs grid
  for f in multiply2001 det1001 multiply2001t; do
    grep -qE 'cuBLASMp grid|cuSOLVERMp grid' "${out}/jobs/${f}.grid.txt" 2>/dev/null ||
      log "CHECK FAILED: ${f} did not run on the GPU engine (see jobs/${f}.grid.txt)"
  done
  grep -q 'ScaLAPACK grid' "${out}/jobs/lusolve1500.grid.txt" 2>/dev/null ||
    log "CHECK FAILED: the LU solve did not run on ScaLAPACK"
  stop
fi

# S: one process, GPUS GPUs.
if start single "${bin}/matrixd" --backend="${BACKEND:-cuda}" --listen=127.0.0.1:0 --metrics= \
    --max_matrix_elements=20000000000; then
  run_jobs single
  stop
fi

# Correctness: the grid's answers against the single process's.
"${python}" - "${out}" <<'PY' 2>&1 | tee -a "${out}/checks.txt" "${out}/summary.txt"
import os, sys
out = sys.argv[1]
try:
    import numpy as np
except ImportError:
    np = None
def field(path, name):
    try:
        for line in open(path):
            if line.startswith("  " + name):
                return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None
ok = True
# Relative to the largest entry: products (k = 2001 terms) agree to ~1e-14; the solve's X, to the
# system's condition times the working precision.
for name, tolerance in (("c2001", 1e-11), ("c2001t", 1e-11), ("x1500", 1e-7)):
    g, s = f"{out}/{name}.grid.npy", f"{out}/{name}.single.npy"
    if np is None or not (os.path.exists(g) and os.path.exists(s)):
        print(f"check {name}: SKIPPED (missing output or numpy)"); ok = False; continue
    a, b = np.load(g), np.load(s)
    err = float(np.abs(a - b).max()) / max(float(np.abs(b).max()), 1e-300)
    good = a.shape == b.shape and err < tolerance
    ok &= good
    print(f"check {name}: max|grid - single| / max|single| = {err:.3g} {'ok' if good else 'FAILED'}")
g, s = f"{out}/jobs/det1001.grid.txt", f"{out}/jobs/det1001.single.txt"
lg, ls_ = field(g, "log|det|"), field(s, "log|det|")
sg, ss = field(g, "sign"), field(s, "sign")
if lg is None or ls_ is None:
    print("check det1001: SKIPPED (missing answer)"); ok = False
else:
    good = abs(float(lg) - float(ls_)) <= 1e-9 * abs(float(ls_)) and sg == ss
    ok &= good
    print(f"check det1001: log|det| grid {lg} single {ls_}, sign {sg} {ss} {'ok' if good else 'FAILED'}")
print("checks: " + ("all ok" if ok else "NOT all ok"))
PY

# The table: each job's best compute time over its repeats, per configuration.
log "table (best compute time of ${repeats} runs; round trip of that run)"
touch "${out}/times.txt"
awk -F'|' '
  function seconds(t,   v, u) { split(t, p, " "); v = p[1] + 0; u = p[2];
    return u == "ms" ? v / 1e3 : u == "us" ? v / 1e6 : u == "ns" ? v / 1e9 : v }
  $2 ~ /\.r[0-9]+$/ {
    key = $1 "|" $2; sub(/\.r[0-9]+$/, "", key)
    t = seconds($3)
    if (!(key in best) || t < best[key]) { best[key] = t; trip[key] = $4 }
  }
  END { for (k in best) { split(k, p, "|"); printf "%-7s %-22s compute %9.3f s   round trip %s\n", p[1], p[2], best[k], trip[k] } }
' "${out}/times.txt" | sort -k2,2 -k1,1 | tee -a "${out}/summary.txt"
log "done in $((SECONDS - started))s"
