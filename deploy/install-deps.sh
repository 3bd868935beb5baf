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
  packages+=(libntl-dev prometheus python3-numpy python3-grpcio python3-grpc-tools
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

# NVIDIA's distributed libraries (cuBLASMp, cuSOLVERMp and NVSHMEM beneath them) ship only as pip
# wheels. They go into a prefix of their own, where CMake looks (MATRIXD_PYDEPS_PREFIX); without
# them matrixd builds and its cuBLASMp/cuSOLVERMp methods answer UNIMPLEMENTED. Optional: a
# machine without a package index (or without pip) skips the step and says so.
pydeps_prefix="${MATRIXD_PYDEPS_PREFIX:-/opt/matrixd/pydeps}"
pydeps=(nvidia-cublasmp-cu13 nvidia-cusolvermp-cu13 nvidia-nvshmem-cu13)
if [[ "${MATRIXD_SKIP_PYDEPS:-0}" == 1 ]]; then
  echo "install-deps: MATRIXD_SKIP_PYDEPS=1, not fetching ${pydeps[*]}"
elif [[ -d "$pydeps_prefix/nvidia" ]]; then
  echo "install-deps: ${pydeps[*]} present in $pydeps_prefix"
elif /usr/bin/python3 -m pip --version >/dev/null 2>&1 && [[ $(id -u) -eq 0 || -w "$(dirname "$pydeps_prefix")" ]]; then
  mkdir -p "$pydeps_prefix"
  if ! timeout 600 /usr/bin/python3 -m pip install --quiet --disable-pip-version-check \
      --no-deps --target "$pydeps_prefix" "${pydeps[@]}"; then
    echo "install-deps: could not fetch ${pydeps[*]} (no package index?); building without" \
         "cuBLASMp/cuSOLVERMp (those methods answer UNIMPLEMENTED)" >&2
  fi
else
  echo "install-deps: no pip for /usr/bin/python3; building without cuBLASMp/cuSOLVERMp" >&2
fi
