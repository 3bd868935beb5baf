// Helpers of the condition-estimate tests on column-major n x n arrays of double or
// std::complex<double>: seeded random entries and the 1-norm.
#ifndef MATRIXD_TESTS_CORE_COLUMN_MAJOR_SUPPORT_H_
#define MATRIXD_TESTS_CORE_COLUMN_MAJOR_SUPPORT_H_

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

namespace matrixd::testing {

// n x n entries uniform in [-1, 1] (both parts of a complex one).
template <typename W>
std::vector<W> RandomSquare(int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<W> a(static_cast<size_t>(n * n));
  for (W& x : a) {
    if constexpr (std::is_same_v<W, std::complex<double>>) {
      x = std::complex<double>(uniform(rng), uniform(rng));
    } else {
      x = uniform(rng);
    }
  }
  return a;
}

// ||A||_1 of the column-major n x n A.
template <typename W>
double ColumnMajorOneNorm(int64_t n, const std::vector<W>& a) {
  double largest = 0;
  for (int64_t j = 0; j < n; ++j) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += std::abs(a[i + j * n]);
    largest = std::max(largest, sum);
  }
  return largest;
}

}  // namespace matrixd::testing

#endif  // MATRIXD_TESTS_CORE_COLUMN_MAJOR_SUPPORT_H_
