#!/usr/bin/env bash
# Distributed resident matrices and the device Generate (issue 10), in one device call on
# nvidia-h200-x2 (or nvidia-h100-x2; the 80 GB step needs 2 x H200):
#   1. gate: matrixd_core_test (generator kernel = host generator, every dtype and kind; the row
#      mapping), matrixd_multi_gpu_test (DistributedResidentTest.*: parts generated in place and
#      uploaded/gathered bit for bit, determinant read in place = one GPU's; MultiGpuLu.*,
#      MultiGpuBackend.*), matrixd_server_test (Distributed*, GenerateRpc*, MultiDeviceAdmission.*);
#   2. matrixd --backend=cuda on both GPUs: `generate random N` single and `--layout distributed`,
#      both downloaded and compared byte for byte (cmp), the single one's file uploaded again with
#      `--layout distributed` (one stream, then 4 parts) and downloaded again (cmp);
#   3. `det --devices 1` of the single matrix and `det --devices 2` of the distributed one (the
#      same log|det| expected; REPEATS times, the first warms up), with generate times;
#   4. products (issue 10, Cannon reading distributed operands in place): two generated float64
#      PRODUCT_N x PRODUCT_N matrices (default 32768), single-device and `--layout distributed`:
#      `multiply --keep` of the single ones on 1 GPU and with `--devices 2` (Cannon), and of the
#      distributed ones with `--devices 2` (REPEATS times each; each kept C removed at once); the
#      server's compute time and Cannon's scatter/rounds/gather split go to stats.txt;
#   5. BIG (default 100000, float64, 80 GB): `generate --layout distributed`, then `det --devices 2`,
#      only where each GPU has more than 100 GB (H200).
# Every step runs under `timeout`; a failure stops nothing else. Output in $OUT (summary.txt,
# cli.txt, matrixd.log, the tests' logs), tarred into $OUT/distlayout-logs.tar.gz at the end.
#
# Preparing (here):
#   cmake --build build -j2 --target matrixd matrixctl matrixd_core_test matrixd_multi_gpu_test \
#       matrixd_server_test
#   ../shared/gpu/bundle.sh .gpu build/server/matrixd build/client/matrixctl \
#       build/tests/matrixd_core_test build/tests/matrixd_multi_gpu_test \
#       build/tests/matrixd_server_test
# then through the device tool, carry [".gpu"], kind nvidia-h200-x2:
#   tests/gpu/distlayout-run.sh
# Knobs: N=8191 (round trip and det), SIZES="32768" (timed dets), PRODUCT_N=32768 (0 skips step
# 4), REPEATS=2, BIG=100000 (0 skips step 5), GATE=1 (0 skips step 1), BIN (default .gpu/bin), BACKEND=cuda (cpu: a dry run of the
# script without a GPU, where every distributed call is refused).
set -uo pipefail
# shellcheck source=tests/gpu/run_lib.sh
source "$(dirname "$0")/run_lib.sh" distlayout
n=${N:-8191}
big=${BIG:-100000}
repeats=${REPEATS:-2}
sizes=${SIZES:-32768}
backend=${BACKEND:-cuda}

gpu_info

if [ "${GATE:-1}" = 1 ]; then
  log "matrixd_core_test generator and layout"
  run_gtest 300 "${out}/core_test.txt" "${bin}/matrixd_core_test" --gtest_brief=1 \
    --gtest_filter='*MatrixGeneratorTest*:GeneratorEntry.*:RowCyclicLayout.*:DistributedOnHost*'
  log "matrixd_multi_gpu_test"
  run_gtest 400 "${out}/multi_gpu_test.txt" "${bin}/matrixd_multi_gpu_test" --gtest_brief=1 \
    --gtest_filter='DistributedResidentTest.*:MultiGpuLu.*:MultiGpuBackend.*'
  log "matrixd_server_test"
  run_gtest 200 "${out}/server_test.txt" "${bin}/matrixd_server_test" --gtest_brief=1 \
    --gtest_filter='Distributed*:GenerateRpc*:MultiDeviceAdmission.*'
fi

port=50064
log "matrixd --backend=${backend}"
start_matrixd "${port}" "${out}/matrixd.log" --backend="${backend}" --metrics=127.0.0.1:9474 \
  --resident_memory_limit=200G --max_matrix_elements=20000000000 || log "matrixd did not start"
ctl health >>"${out}/cli.txt" 2>&1

# timed LABEL ARGS...: one matrixctl call, its output in cli.txt.
timed() {
  local label=$1
  shift
  echo "### ${label}: matrixctl $*" >>"${out}/cli.txt"
  local t0
  t0=$(now)
  local reply rc
  reply=$(ctl "$@" 2>&1)
  rc=$?
  echo "${reply}" >>"${out}/cli.txt"
  # A determinant's value, so that the single and distributed answers sit side by side.
  log "  ${label}: exit ${rc}, round trip $(since "${t0}") s $(echo "${reply}" | grep -m1 -E '^  det ' | tr -s ' ')"
}
same() { cmp -s "$1" "$2" && echo "identical" || echo "DIFFERENT"; }

log "round trip n=${n}"
single=$(generate "single ${n}" random "${n}" --seed=7)
spread=$(generate "distributed ${n}" random "${n}" --seed=7 --layout=distributed)
ctl ls >>"${out}/cli.txt" 2>&1
timed "download single" download "@${single:0:8}" --output="${out}/single.npy"
timed "download distributed" download "@${spread:0:8}" --output="${out}/spread.npy"
log "  generated single vs distributed: $(same "${out}/single.npy" "${out}/spread.npy")"
for streams in 1 4; do
  up=$(ctl upload "${out}/single.npy" --layout=distributed --streams="${streams}" 2>>"${out}/cli.txt")
  log "  upload --layout=distributed --streams=${streams}: handle ${up:0:8}"
  timed "download uploaded" download "@${up:0:8}" --output="${out}/up${streams}.npy"
  log "  uploaded vs single: $(same "${out}/single.npy" "${out}/up${streams}.npy")"
  ctl rm "${up}" >/dev/null 2>&1
done
rm -f "${out}"/*.npy

log "determinants n=${n}"
for r in $(seq "${repeats}"); do
  timed "det single devices=1 run ${r}" det "@${single:0:8}" --devices=1
  timed "det distributed devices=2 run ${r}" det "@${spread:0:8}" --devices=2
done
timed "det distributed devices=1 (gathered)" det "@${spread:0:8}" --devices=1
timed "multiply distributed (gathered)" multiply "@${spread:0:8}" "@${single:0:8}"
ctl rm "${single}" "${spread}" >/dev/null 2>&1

for size in ${sizes}; do
  s=$(generate "single ${size}" random "${size}" --seed=9)
  d=$(generate "distributed ${size}" random "${size}" --seed=9 --layout=distributed)
  for r in $(seq "${repeats}"); do
    timed "det single ${size} devices=2 run ${r}" det "@${s:0:8}" --devices=2
    timed "det distributed ${size} devices=2 run ${r}" det "@${d:0:8}" --devices=2
  done
  ctl rm "${s}" "${d}" >/dev/null 2>&1
done

# Step 4: products. keep_only H...: removes every resident matrix but H... (the kept C's).
keep_only() {
  ctl ls 2>/dev/null | awk '$1 ~ /^[0-9a-f]+$/ && length($1) == 32 {print $1}' |
    while read -r h; do
      case " $* " in *" ${h} "*) ;; *) ctl rm "${h}" >/dev/null 2>&1 ;; esac
    done
}
product_n=${PRODUCT_N:-32768}
if [ "${product_n}" -gt 0 ]; then
  log "products n=${product_n} (multiply --keep; C removed after each)"
  sa=$(generate "single A ${product_n}" random "${product_n}" --seed=13)
  sb=$(generate "single B ${product_n}" random "${product_n}" --seed=14)
  da=$(generate "distributed A ${product_n}" random "${product_n}" --seed=13 --layout=distributed)
  db=$(generate "distributed B ${product_n}" random "${product_n}" --seed=14 --layout=distributed)
  ctl ls >>"${out}/cli.txt" 2>&1
  for r in $(seq "${repeats}"); do
    timed "multiply single ${product_n} devices=1 run ${r}" multiply "@${sa:0:8}" "@${sb:0:8}" --keep
    keep_only "${sa}" "${sb}" "${da}" "${db}"
    timed "multiply single ${product_n} devices=2 run ${r}" multiply "@${sa:0:8}" "@${sb:0:8}" \
      --keep --devices=2
    keep_only "${sa}" "${sb}" "${da}" "${db}"
    timed "multiply distributed ${product_n} devices=2 run ${r}" multiply "@${da:0:8}" "@${db:0:8}" \
      --keep --devices=2
    keep_only "${sa}" "${sb}" "${da}" "${db}"
  done
  # A small product of the distributed pair inline, against the single pair's (the same matrices).
  small=2001
  sa2=$(generate "single A ${small}" random "${small}" --seed=15)
  da2=$(generate "distributed A ${small}" random "${small}" --seed=15 --layout=distributed)
  ctl multiply "@${sa2:0:8}" "@${sa2:0:8}" --output="${out}/c-single.npy" >>"${out}/cli.txt" 2>&1
  ctl multiply "@${da2:0:8}" "@${da2:0:8}" --devices=2 --output="${out}/c-spread.npy" \
    >>"${out}/cli.txt" 2>&1
  if command -v python3 >/dev/null && python3 -c 'import numpy' 2>/dev/null; then
    log "  C of ${small} distributed (Cannon) vs single GPU: max |diff| $(python3 -c "
import numpy as np
a = np.load('${out}/c-single.npy'); b = np.load('${out}/c-spread.npy')
print(np.abs(a - b).max(), 'of max |c|', np.abs(a).max())" 2>&1)"
  else
    log "  C of ${small}: no numpy here; compare ${out}/c-*.npy by hand"
  fi
  rm -f "${out}"/c-*.npy
  keep_only
  grep -E '^### multiply|compute|cannon' "${out}/cli.txt" >"${out}/stats.txt" 2>/dev/null
fi

smallest=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | sort -n | head -1)
if [ "${big}" -gt 0 ] && [ "${smallest:-0}" -gt 100000 ]; then
  log "big n=${big} distributed (GPU memory ${smallest} MiB each)"
  h=$(generate "distributed ${big}" random "${big}" --seed=11 --layout=distributed)
  ctl ls >>"${out}/cli.txt" 2>&1
  nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv >>"${out}/summary.txt" 2>&1
  timed "det distributed ${big} devices=2" det "@${h:0:8}" --devices=2
  ctl rm "${h}" >/dev/null 2>&1
else
  log "big n=${big}: skipped (GPU memory ${smallest:-?} MiB)"
fi

kill "${pid}"
wait "${pid}" 2>/dev/null
log "done"
