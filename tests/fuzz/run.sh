#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -DMATRIXD_FUZZ=ON, in build-fuzz/) and runs each for N
# seconds (default 60) starting from tests/fuzz/corpus/NAME. New interesting inputs go to
# build-fuzz/corpus/NAME; crashes to build-fuzz/crashes/. A crash fails the script: copy the input
# into tests/fuzz/corpus/NAME (a regression test from then on) and fix the code.
#   tests/fuzz/run.sh [seconds] [target...]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
shift || true
build=${MATRIXD_FUZZ_BUILD:-build-fuzz}
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMATRIXD_FUZZ=ON \
  -DMATRIXD_WITH_CUDA=OFF >/dev/null
targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in tests/fuzz/*_fuzzer.cc; do targets+=("$(basename "$f" .cc)"); done
fi
cmake --build "$build" -j"${JOBS:-2}" --target "${targets[@]}" >/dev/null
mkdir -p "$build/crashes"
for t in "${targets[@]}"; do
  name=${t%_fuzzer}
  mkdir -p "$build/corpus/$name"
  echo "fuzz: $t for ${seconds}s"
  status=0
  # The readers accept a dense matrix of up to 2 GiB by design (kMaxDenseBytes), which a few
  # bytes of header can ask for: allow that much (plus ASan's overhead) before calling it an OOM.
  "$build/tests/fuzz/$t" -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=3072 \
    -artifact_prefix="$build/crashes/${name}-" "$build/corpus/$name" "tests/fuzz/corpus/$name" \
    >"$build/$name.log" 2>&1 || status=$?
  grep -E "^(stat::number_of_executed_units|stat::new_units_added|SUMMARY|Done)|ERROR" \
    "$build/$name.log" || true
  if ((status != 0)); then
    echo "fuzz: $t failed (exit $status); see $build/$name.log and $build/crashes/" >&2
    exit 1
  fi
done
