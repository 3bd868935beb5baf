#!/usr/bin/env bash
# bundle-mp.sh OUTDIR BUILD_DIR: what tests/gpu/scaling-run.sh needs in OUTDIR (normally .gpu):
# ../shared/gpu/bundle.sh for the scaling binaries, then the cuBLASMp and cuSOLVERMp libraries,
# which bundle.sh leaves out (its skip list takes libcublasmp* and libcusolverMp* for the CUDA
# toolkit's libcublas and libcusolver). NCCL is not bundled (236 MB, more than a device call
# carries): the script finds an NCCL >= 2.29.2 on the GPU machine (see scaling-run.sh).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 OUTDIR BUILD_DIR" >&2; exit 2; }
out=$1
build=$2

bundle=${BUNDLE:-../shared/gpu/bundle.sh}  # from the repository root, as the docs run it
binaries=()
for b in tests/matrixd_multi_gpu_test tests/matrixd_cannon_bench tests/matrixd_mp_bench; do
  [[ -x $build/$b ]] && binaries+=("$build/$b")
done
"$bundle" "$out" "${binaries[@]}"
if [[ -x $build/tests/matrixd_mp_bench ]]; then
  ldd "$build/tests/matrixd_mp_bench" | awk '/libcublasmp|libcusolverMp/ { print $3 }' |
    while read -r lib; do cp -L "$lib" "$out/lib/"; done
fi
ls -la "$out/lib" | grep -E 'cublasmp|cusolverMp' || echo "bundle-mp: no cuBLASMp build (MATRIXD_HAVE_NVIDIA_MP off)"
du -sh "$out"
