#include "core/hadamard_bound.h"

#include <cmath>
#include <limits>

namespace matrixd {

double HadamardBoundBits(std::span<const int64_t> a, int64_t n) {
  // long double: squared entries reach 2^126 and the sums keep a 64-bit mantissa; the rounding
  // left is far below the slack of the prime counts (61 bits counted per prime of ~62, 23 per
  // prime of 24 bits).
  long double bound_bits = 0.0L;
  for (int64_t i = 0; i < n; ++i) {
    long double norm_squared = 0.0L;
    for (int64_t j = 0; j < n; ++j) {
      const long double x = static_cast<long double>(a[i * n + j]);
      norm_squared += x * x;
    }
    if (norm_squared == 0.0L) return -std::numeric_limits<double>::infinity();
    bound_bits += 0.5L * std::log2(norm_squared);
  }
  return static_cast<double>(bound_bits);
}

double HadamardBoundBits(const MatrixView& a, const DeterminantOptions& options) {
  if (options.hadamard_bound_bits.has_value()) return *options.hadamard_bound_bits;
  return HadamardBoundBits(a.As<int64_t>(), a.rows);
}

}  // namespace matrixd
