#!/usr/bin/env bash
# cuBLASMp 0.10 needs NCCL >= 2.29.2; the lent GPU machines have 2.28 (system and PyTorch's wheel),
# and the 2.29.7 wheel's libnccl.so.2 (236 MB) is more than one device call carries (64 MiB).
# This splits it into .nccl1 .. .nccl4 (60 MB each; ignore them: `echo '/.nccl*/' >>
# .git/info/exclude`). Then, on one warm machine, four quick calls, each carrying one part:
#   carry [".ncclK"]: mkdir -p /tmp/ncl && cp .ncclK/part /tmp/ncl/pK-1
# and the run itself (its .gpu carried in an earlier call on the same machine stays there):
#   cat /tmp/ncl/p0 /tmp/ncl/p1 /tmp/ncl/p2 /tmp/ncl/p3 > /tmp/nccl229/libnccl.so.2 &&
#   LD_LIBRARY_PATH=/tmp/nccl229 OPS=mp tests/gpu/scaling-run.sh
# (a part carried in one call is removed from the machine's checkout by the next: copy it out).
set -euo pipefail
cd "$(dirname "$0")/../.."
lib=${1:-${MATRIXD_PYDEPS_PREFIX:-/opt/matrixd/pydeps}/nvidia/nccl/lib/libnccl.so.2}
tmp=$(mktemp -d)
split -b 60000000 -d -a 1 "${lib}" "${tmp}/part."
for i in 0 1 2 3; do
  mkdir -p ".nccl$((i + 1))"
  mv "${tmp}/part.${i}" ".nccl$((i + 1))/part"
done
rmdir "${tmp}"
md5sum "${lib}"
