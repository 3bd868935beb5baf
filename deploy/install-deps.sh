#!/usr/bin/env bash
# Installs what matrixd needs to build and run on Debian 12, from Debian's packages only.
# Idempotent: running it again changes nothing. Run as root.
#   deploy/install-deps.sh          build + run dependencies
#   deploy/install-deps.sh --test   also what the test suite needs
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev prometheus-cpp-dev libcpp-httplib-dev
  libopenblas-dev liblapacke-dev libgmp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(libntl-dev prometheus python3-numpy python3-grpcio python3-grpc-tools
             python3-pytest python3-setuptools python3-crc32c python3-venv
             clang libfuzzer-14-dev)
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
