#!/usr/bin/env bash
# End to end on the real binaries: matrixctl --shm on every operation (det, permanent, multiply,
# factorize with and without a right-hand side, solve with a kept factorization; generated and
# file inputs) prints the same answers and writes the same .npy bytes as the inline path; it says
# on stderr what it copied into shared memory; its regions are gone afterwards (shm list, /dev/shm);
# --shm with --keep or submit is a usage error.
#   tests/e2e/matrixctl_shm_test.sh build/server/matrixd build/client/matrixctl
set -euo pipefail
matrixd=$1
matrixctl=$2
source "$(dirname "$0")/e2e_lib.sh"
start_matrixd "$matrixd" --backend=cpu
ctl() { "$matrixctl" --server="127.0.0.1:$port" "$@"; }

# The answer lines of an output: without the operand line (it says where the input was) and the
# timings.
answers() {
  # The provenance's result crc32c covers what the response carries inline, so it differs when
  # the result went to shared memory instead.
  grep -v -E '^(determinant of|permanent of|product of|factorization of|solve )|  (server|client|provenance): ' "$1"
}

# Runs `ctl ARGS` inline and with --shm (name.inline.out, name.shm.out / .err) and compares the
# answers.
both() {
  local name=$1
  shift
  ctl "$@" >"$dir/$name.inline.out" 2>"$dir/$name.inline.err" || fail "$name inline: $*"
  ctl "$@" --shm >"$dir/$name.shm.out" 2>"$dir/$name.shm.err" || fail "$name --shm: $*"
  grep -q "^shared memory: " "$dir/$name.shm.err" || fail "$name --shm did not say what it copied"
  grep -q "in shared memory matrixctl-" "$dir/$name.shm.out" || fail "$name --shm operand not named"
  diff <(answers "$dir/$name.inline.out") <(answers "$dir/$name.shm.out") >"$dir/$name.diff.out" ||
    fail "$name: answers differ between inline and --shm"
}

both det det --random 64 --seed 3
grep -q "copied matrix (64 x 64 float64)" "$dir/det.shm.err" || fail "det --shm stderr"
both permanent permanent --random 8 --seed 4
both multiply multiply --random 48 --seed 5 --output "$dir/c.npy"
mv "$dir/c.npy" "$dir/c_inline.npy"
ctl multiply --random 48 --seed 5 --output "$dir/c.npy" --shm >"$dir/c.out" 2>&1 ||
  fail "multiply --shm --output"
cmp "$dir/c_inline.npy" "$dir/c.npy" || fail "multiply: the product via --shm is not bit for bit"
grep -q "1 result(s) come back there" "$dir/c.out" || fail "multiply --shm: result not announced"

# A file input (the product above), copied into the region.
both det_file det "$dir/c.npy"
grep -q "copied matrix (48 x 48 float64)" "$dir/det_file.shm.err" || fail "det FILE --shm stderr"

# LU with a right-hand side: the solution, and the factor check still runs on the region's copy.
ctl factorize --random 40 --seed 6 --rhs_random 3 --output "$dir/x_inline.npy" \
  >"$dir/lu.inline.out" 2>&1 || fail "factorize inline"
ctl factorize --random 40 --seed 6 --rhs_random 3 --output "$dir/x.npy" --shm \
  >"$dir/lu.shm.out" 2>&1 || fail "factorize --shm"
cmp "$dir/x_inline.npy" "$dir/x.npy" || fail "factorize: X via --shm is not bit for bit"
grep -q "factor error ||A - factors||" "$dir/lu.shm.out" || fail "factorize --shm: no factor check"
grep -q "solution residual" "$dir/lu.shm.out" || fail "factorize --shm: no residual check"
# QR: both factors (q and r) come back through the region.
ctl factorize --random 30 --seed 7 --kind qr --output "$dir/q_inline.npy" >/dev/null 2>&1 ||
  fail "qr inline"
ctl factorize --random 30 --seed 7 --kind qr --output "$dir/q.npy" --shm >"$dir/qr.out" 2>&1 ||
  fail "qr --shm"
cmp "$dir/q_inline.npy" "$dir/q.npy" && cmp "$dir/q_inline_r.npy" "$dir/q_r.npy" ||
  fail "qr: Q or R via --shm is not bit for bit"

# Solve with a kept factorization: B into the region, X back from it.
ctl factorize --random 32 --seed 8 --keep >"$dir/keep.out" || fail "factorize --keep"
handle=$(sed -n 's/^  kept factorization: \([^ ]*\) .*/\1/p' "$dir/keep.out")
[[ -n "$handle" ]] || fail "no kept factorization"
ctl solve "@$handle" --rhs_random 2 --output "$dir/s_inline.npy" >/dev/null || fail "solve inline"
ctl solve "@$handle" --rhs_random 2 --output "$dir/s.npy" --shm >"$dir/solve.out" 2>&1 ||
  fail "solve --shm"
cmp "$dir/s_inline.npy" "$dir/s.npy" || fail "solve: X via --shm is not bit for bit"
ctl solve "@$handle" --rhs_random 2 --transpose transpose --output "$dir/st_inline.npy" \
  >/dev/null || fail "solve --transpose inline"
ctl solve "@$handle" --rhs_random 2 --transpose transpose --output "$dir/st.npy" --shm \
  >/dev/null 2>&1 || fail "solve --transpose --shm"
cmp "$dir/st_inline.npy" "$dir/st.npy" || fail "solve --transpose: X via --shm is not bit for bit"

# Nothing left behind: no registered region, no object in /dev/shm.
ctl shm list >"$dir/list.out" || fail "shm list"
grep -q "^0 shared-memory region(s)" "$dir/list.out" || fail "regions left registered"
if compgen -G "/dev/shm/matrixd_matrixctl-*" >/dev/null; then
  ls -l /dev/shm >"$dir/devshm.out"
  fail "shared-memory objects left in /dev/shm"
fi

# Usage errors exit 2.
rc=0; ctl multiply --random 8 --shm --keep >"$dir/usage1.out" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "--shm --keep exited $rc, want 2"
rc=0; ctl submit det --random 8 --shm >"$dir/usage2.out" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "submit --shm exited $rc, want 2"
rc=0; ctl shm remove >"$dir/usage3.out" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "shm remove exited $rc, want 2"
echo "PASS: --shm det/permanent/multiply/factorize/qr/solve equal inline bit for bit, regions removed, usage errors"
