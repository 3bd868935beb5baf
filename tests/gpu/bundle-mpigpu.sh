#!/usr/bin/env bash
# bundle-mpigpu.sh OUTDIR BUILD_DIR: what tests/gpu/mpigpu-run.sh needs, as one archive
# OUTDIR/mpigpu.tar.xz (about 32 MB; unpacked, 82 MB would pass a device call's 64 MiB):
#   bin/matrixd, bin/matrixctl, bin/libmatrixd_mp_grid.so (the grid's GPU engine, loaded from the
#   binary's folder), lib/ what ../shared/gpu/bundle.sh takes for them (gRPC, Abseil, protobuf,
#   ScaLAPACK, ...; not MPI: the GPU machine's OpenMPI 4.1 libmpi.so.40 is used with its own
#   mpirun), and lib/libcublasmp.so.0 and lib/libcusolverMp.so.0 (bundle.sh's skip list leaves
#   them out). NCCL >= 2.29.2 does not travel here: see split-nccl.sh and mpigpu-run.sh.
# Build first (-DCMAKE_CUDA_ARCHITECTURES=90, with the wheels in /opt/matrixd/pydeps):
#   cmake --build build -j2 --target matrixd matrixctl matrixd_mp_grid
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 OUTDIR BUILD_DIR" >&2; exit 2; }
out=$1
build=$2
bundle=${BUNDLE:-../shared/gpu/bundle.sh}  # from the repository root, as the docs run it
plugin=$build/server/libmatrixd_mp_grid.so
[[ -f $plugin ]] || { echo "bundle-mpigpu: no $plugin (built without the cuBLASMp wheels?)" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
"$bundle" "$stage" "$build/server/matrixd" "$build/client/matrixctl" "$plugin" >/dev/null
ldd "$plugin" | awk '/libcublasmp|libcusolverMp/ { print $3 }' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
mkdir -p "$out"
XZ_OPT=${XZ_OPT:--6 -T2} tar -C "$stage" -cJf "$out/mpigpu.tar.xz" bin lib
tar -tJf "$out/mpigpu.tar.xz" | grep -E 'bin/|cublasmp|cusolverMp'
ls -la "$out/mpigpu.tar.xz"
