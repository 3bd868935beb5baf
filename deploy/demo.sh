#!/usr/bin/env bash
# The README's first command: installs dependencies, builds matrixd, starts the server on loopback
# (CUDA backend when a GPU is present, CPU otherwise), runs `matrixctl demo` against it (a
# determinant, an LU factorization with a solve, products and permanents on real matrices, with
# results and timings), then stops the server. Exit status is the demo's.
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target matrixd matrixctl

port=${MATRIXD_DEMO_PORT:-50051}
address=127.0.0.1:${port}
build/server/matrixd --listen="${address}" --backend="${MATRIXD_BACKEND:-auto}" --metrics= &
server_pid=$!
trap 'kill "${server_pid}" 2>/dev/null; wait "${server_pid}" 2>/dev/null || true' EXIT

for _ in $(seq 1 100); do
  if build/client/matrixctl --server="${address}" --deadline=1s health >/dev/null 2>&1; then break; fi
  if ! kill -0 "${server_pid}" 2>/dev/null; then
    echo "demo: matrixd exited before it was ready (is port ${port} free? set MATRIXD_DEMO_PORT)" >&2
    exit 1
  fi
  sleep 0.1
done
build/client/matrixctl --server="${address}" demo
