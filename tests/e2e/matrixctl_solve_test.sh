#!/usr/bin/env bash
# End to end on the real binaries: matrixctl factorize --keep --keep_input, then solve by the
# factorization's handle (inline and resident right-hand sides, a transpose, the residual, X kept
# and written), the same solve submitted as a job, and the usage errors of solve.
#   tests/e2e/matrixctl_solve_test.sh build/server/matrixd build/client/matrixctl
set -euo pipefail
matrixd=$1
matrixctl=$2
source "$(dirname "$0")/e2e_lib.sh"
start_matrixd "$matrixd" --backend=cpu
ctl() { "$matrixctl" --server="127.0.0.1:$port" "$@"; }

ctl factorize --random 64 --keep --keep_input >"$dir/factorize.out" || fail "factorize --keep"
handle=$(sed -n 's/^  kept factorization: \([^ ]*\) .*/\1/p' "$dir/factorize.out")
[[ -n "$handle" ]] || fail "no kept factorization in the factorize output"

# Inline right-hand side, residual asked for, X written.
ctl solve "@$handle" --rhs_random 3 --residual --output "$dir/x.npy" >"$dir/solve.out" ||
  fail "solve"
residual=$(sed -n 's/^  residual .* = \([0-9.e+-]*\)$/\1/p' "$dir/solve.out")
[[ -n "$residual" ]] || fail "solve printed no residual"
awk -v r="$residual" 'BEGIN { exit !(r < 1e-13) }' || fail "residual $residual is not < 1e-13"
grep -q "wrote 64 x 3 float64" "$dir/solve.out" || fail "X not written"

# A transpose, X kept on the server, then used as the next right-hand side by handle.
ctl solve "@${handle:0:8}" --rhs_random 1 --transpose transpose --residual --keep \
  >"$dir/solve_t.out" || fail "solve --transpose --keep"
x_handle=$(sed -n 's/^  kept solution: \([^ ]*\) .*/\1/p' "$dir/solve_t.out")
[[ -n "$x_handle" ]] || fail "no kept solution"
ctl solve "@$handle" --rhs "@$x_handle" >"$dir/solve_ref.out" || fail "solve --rhs @HANDLE"
grep -q "resident $x_handle" "$dir/solve_ref.out" || fail "the resident rhs is not named"

# The same as a job.
id=$(ctl submit solve "@$handle" --rhs_random 2) || fail "submit solve"
ctl watch "$id" >"$dir/watch.out" || fail "watch of the solve job"
grep -q "solved with a kept FACTORIZATION_KIND_LU" "$dir/watch.out" || fail "job result not shown"

# Usage errors exit 2; a plain matrix is not a factorization (the server says so, exit 1).
rc=0; ctl solve "@$handle" >"$dir/usage1.out" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "solve without a right-hand side exited $rc, want 2"
rc=0; ctl solve --rhs_random 1 >"$dir/usage2.out" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "solve without a handle exited $rc, want 2"
rc=0; ctl solve "@$handle" --rhs_random 1 --transpose sideways >"$dir/usage3.out" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "--transpose sideways exited $rc, want 2"
rc=0; ctl solve "@$x_handle" --rhs_random 1 >"$dir/plain.out" 2>&1 || rc=$?
[[ $rc -eq 1 ]] && grep -q "INVALID_ARGUMENT" "$dir/plain.out" ||
  fail "solving with a plain matrix: exit $rc, want 1 with INVALID_ARGUMENT"
echo "PASS: factorize --keep, solve inline/transposed/by handle, submit solve, usage errors"
