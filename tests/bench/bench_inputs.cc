#include "tests/bench/bench_inputs.h"

#include <algorithm>
#include <cstdint>
#include <span>

namespace matrixd::bench {

Matrix RandomMatrix(int64_t rows, int64_t cols, DType dtype, uint64_t seed) {
  Matrix m(rows, cols, dtype);
  Random random(seed);
  if (dtype == DType::kFloat32) {
    for (float& x : m.As<float>()) x = static_cast<float>(random.Uniform());
  } else {
    for (double& x : m.As<double>()) x = random.Uniform();
  }
  return m;
}

Matrix SpdMatrix(int64_t n, uint64_t seed) {
  Matrix m = RandomMatrix(n, n, DType::kFloat64, seed);
  std::span<double> a = m.As<double>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < i; ++j) a[j * n + i] = a[i * n + j];
    a[i * n + i] = static_cast<double>(n);
  }
  return m;
}

Matrix RandomBatch(int n, int count, uint64_t seed) {
  return RandomMatrix(int64_t{count} * n, n, DType::kFloat64, seed);
}

Matrix RandomInt64Matrix(int64_t n, int64_t bound, uint64_t seed) {
  Matrix m(n, n, DType::kInt64);
  Random random(seed);
  const uint64_t span = 2 * static_cast<uint64_t>(bound) + 1;
  for (int64_t& x : m.As<int64_t>()) x = static_cast<int64_t>(random.Next() % span) - bound;
  return m;
}

BlockSparseMatrix RandomBlockSparse(int64_t n, int64_t block, double density, uint64_t seed) {
  BlockSparseMatrix result{Matrix(n, n, DType::kFloat64)};
  std::span<double> a = result.matrix.As<double>();
  Random random(seed);
  for (int64_t row0 = 0; row0 < n; row0 += block) {
    for (int64_t col0 = 0; col0 < n; col0 += block) {
      ++result.blocks;
      if (random.Unit() >= density) continue;
      ++result.non_zero_blocks;
      for (int64_t i = row0; i < std::min(n, row0 + block); ++i) {
        for (int64_t j = col0; j < std::min(n, col0 + block); ++j) a[i * n + j] = random.Uniform();
      }
    }
  }
  return result;
}

}  // namespace matrixd::bench
