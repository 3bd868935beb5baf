// The permanent bench's matrices: entries k / 2^20 with k uniform below 2^20 (the matrices of
// SUperman's comparison in issue 13), of either sign, optionally sparse, with the integer matrix
// k whose exact permanent the INT64 walk gives.
#ifndef MATRIXD_TESTS_BENCH_PERMANENT_INPUTS_H_
#define MATRIXD_TESTS_BENCH_PERMANENT_INPUTS_H_

#include <cstdint>

#include "core/matrix.h"

namespace matrixd::bench {

inline constexpr int kPermanentGridBits = 20;

struct GridMatrix {
  Matrix integers;  // INT64 k
  Matrix values;    // FLOAT64 k / 2^kPermanentGridBits
};

// n x n, each entry non-zero with probability `density` (then |k| uniform in [1, 2^20), negative
// with probability 1/2 when `mixed_sign`).
GridMatrix RandomGridMatrix(int n, bool mixed_sign, double density, uint64_t seed);

}  // namespace matrixd::bench

#endif  // MATRIXD_TESTS_BENCH_PERMANENT_INPUTS_H_
