// The matrices matrixd_bench feeds the operations: random, reproducible from a seed, and quick to
// make at the sizes of the tables (2^28 entries in about a second).
#ifndef MATRIXD_TESTS_BENCH_BENCH_INPUTS_H_
#define MATRIXD_TESTS_BENCH_BENCH_INPUTS_H_

#include <cstdint>

#include "core/matrix.h"

namespace matrixd::bench {

// splitmix64.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-52 - 1.0; }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// Entries uniform in [-1, 1). REQUIRES: dtype FLOAT32 or FLOAT64.
Matrix RandomMatrix(int64_t rows, int64_t cols, DType dtype, uint64_t seed);

// Symmetric with a dominant diagonal, hence positive definite (Gershgorin); float64.
Matrix SpdMatrix(int64_t n, uint64_t seed);

// `count` random n x n float64 matrices stacked, as a batched Factorize takes them.
Matrix RandomBatch(int n, int count, uint64_t seed);

// n x n INT64 with entries uniform in [-bound, bound].
Matrix RandomInt64Matrix(int64_t n, int64_t bound, uint64_t seed);

// An n x n float64 matrix cut into block x block blocks (the last ones smaller when block does
// not divide n), each non-zero with probability `density` and then filled with entries uniform in
// [-1, 1); the others zero.
struct BlockSparseMatrix {
  Matrix matrix;
  int64_t non_zero_blocks = 0;
  int64_t blocks = 0;
};
BlockSparseMatrix RandomBlockSparse(int64_t n, int64_t block, double density, uint64_t seed);

}  // namespace matrixd::bench

#endif  // MATRIXD_TESTS_BENCH_BENCH_INPUTS_H_
