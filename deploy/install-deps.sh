#!/usr/bin/env bash
# Installs what matrixd needs to build and run on Debian 12, from Debian's packages only.
# Idempotent: running it again changes nothing. Run as root.
#   deploy/install-deps.sh          build + run dependencies
#   deploy/install-deps.sh --test   also what the test suite needs
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev prometheus-cpp-dev libcpp-httplib-dev libssl-dev
  libopenblas-dev liblapacke-dev libgmp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin libscalapack-openmpi-dev
)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(libntl-dev libflint-dev prometheus python3-numpy python3-grpcio python3-grpc-tools
             python3-pytest python3-setuptools python3-crc32c python3-venv
             clang libfuzzer-14-dev openssl)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-deps: missing packages ${missing[*]}; run this script as root" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "install-deps: all ${#packages[@]} packages present"

# NVIDIA's distributed libraries (cuBLASMp, cuSOLVERMp, and the NCCL they were built against) ship
# only as pip wheels. They go into a prefix of their own, where CMake looks (MATRIXD_PYDEPS_PREFIX);
# without them matrixd builds and its cuBLASMp/cuSOLVERMp methods answer UNIMPLEMENTED. cuBLASMp
# 0.10 calls NCCL 2.29's device API (ncclWaitSignal, ncclGetLsaDevicePointer, ...), which CUDA
# 13.0's own NCCL 2.28 lacks, hence nvidia-nccl-cu13; the wheels' RPATHs find it beside them
# (nvidia/nccl/lib). NVSHMEM is no longer loaded by cuBLASMp 0.10 and is not fetched. Optional: a
# machine without a package index (or without pip) skips the step and says so.
pydeps_prefix="${MATRIXD_PYDEPS_PREFIX:-/opt/matrixd/pydeps}"
pydeps=(nvidia-cublasmp-cu13==0.10.0.3695 nvidia-cusolvermp-cu13==0.9.1.9318.post1
        nvidia-nccl-cu13==2.29.7)
missing_pydeps=()
for p in "${pydeps[@]}"; do
  dist="${p%%==*}"
  compgen -G "$pydeps_prefix/${dist//-/_}-*.dist-info" >/dev/null || missing_pydeps+=("$p")
done
if [[ "${MATRIXD_SKIP_PYDEPS:-0}" == 1 ]]; then
  echo "install-deps: MATRIXD_SKIP_PYDEPS=1, not fetching ${pydeps[*]}"
elif ((${#missing_pydeps[@]} == 0)); then
  echo "install-deps: ${pydeps[*]} present in $pydeps_prefix"
elif /usr/bin/python3 -m pip --version >/dev/null 2>&1 && [[ $(id -u) -eq 0 || -w "$(dirname "$pydeps_prefix")" ]]; then
  mkdir -p "$pydeps_prefix"
  # --no-deps: their other needs (cuBLAS, cuSOLVER, the CUDA runtime) are the toolkit's. Into a
  # scratch folder first, then merged: pip --target will not add to an existing nvidia/ folder.
  scratch=$(mktemp -d)
  if timeout 600 /usr/bin/python3 -m pip install --quiet --disable-pip-version-check \
      --no-deps --target "$scratch" "${missing_pydeps[@]}"; then
    cp -a "$scratch"/. "$pydeps_prefix"/
    echo "install-deps: ${missing_pydeps[*]} installed in $pydeps_prefix"
  else
    echo "install-deps: could not fetch ${missing_pydeps[*]} (no package index?); building without" \
         "cuBLASMp/cuSOLVERMp (those methods answer UNIMPLEMENTED)" >&2
  fi
  rm -rf "$scratch"
else
  echo "install-deps: no pip for /usr/bin/python3; building without cuBLASMp/cuSOLVERMp" >&2
fi
