#include "tests/bench/permanent_inputs.h"

#include <cmath>
#include <random>
#include <vector>

namespace matrixd::bench {

GridMatrix RandomGridMatrix(int n, bool mixed_sign, double density, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> magnitude(1, (int64_t{1} << kPermanentGridBits) - 1);
  std::bernoulli_distribution keep(density);
  std::bernoulli_distribution negative(0.5);
  const size_t count = static_cast<size_t>(n) * n;
  std::vector<int64_t> k(count, 0);
  std::vector<double> values(count, 0.0);
  for (size_t q = 0; q < count; ++q) {
    if (!keep(rng)) continue;
    k[q] = magnitude(rng);
    if (mixed_sign && negative(rng)) k[q] = -k[q];
    values[q] = std::ldexp(static_cast<double>(k[q]), -kPermanentGridBits);
  }
  return {Matrix::FromValues<int64_t>(n, n, k), Matrix::FromValues<double>(n, n, values)};
}

}  // namespace matrixd::bench
