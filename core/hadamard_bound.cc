#include "core/hadamard_bound.h"

#include <cmath>
#include <limits>

namespace matrixd {

double HadamardBoundBits(std::span<const int64_t> a, int64_t n) {
  // Sums of squares in double (a long double loop took 1.9 ms at n = 1000, a noticeable part of
  // an exact determinant on the GPU). Each entry rounds to double within a relative 2^-53, so its
  // square within (1 + 2^-53)^3 of x^2, and a sum of n such squares within a relative
  // (n + 2) 2^-53 of the exact one (no term is negative: no cancellation); log2 is within an ulp
  // (below 2^-45 for results under 2^8). `row_margin` covers both; the rows' logarithms are
  // summed in long double with a margin for that sum's rounding, and the double returned is
  // rounded up. So the result is never below the exact bound and above it by about n 2^-53 bits
  // a row, far inside the prime counts' slack (61 bits counted per prime of ~62, 23 per 24-bit
  // one). Squares reach 2^126 and sums 2^157: far from overflow.
  const double row_margin = 0.5 * std::log2(1.0 + static_cast<double>(n + 8) * 0x1p-52) + 0x1p-44;
  long double bound_bits = 0.0L;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* row = a.data() + i * n;
    // Four partial sums, so that the additions do not wait on each other (any order keeps the
    // error bound above).
    double partial[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      for (int k = 0; k < 4; ++k) {
        const auto x = static_cast<double>(row[j + k]);
        partial[k] += x * x;
      }
    }
    for (; j < n; ++j) {
      const auto x = static_cast<double>(row[j]);
      partial[0] += x * x;
    }
    const double norm_squared = (partial[0] + partial[1]) + (partial[2] + partial[3]);
    if (norm_squared == 0.0) return -std::numeric_limits<double>::infinity();
    bound_bits += static_cast<long double>(0.5 * std::log2(norm_squared) + row_margin);
  }
  // Each of the n additions rounded by at most 2^-64 of the sum so far.
  bound_bits += bound_bits * static_cast<long double>(n) * 0x1p-63L;
  return std::nextafter(static_cast<double>(bound_bits), std::numeric_limits<double>::infinity());
}

double HadamardBoundBits(const MatrixView& a, const DeterminantOptions& options) {
  if (options.hadamard_bound_bits.has_value()) return *options.hadamard_bound_bits;
  return HadamardBoundBits(a.As<int64_t>(), a.rows);
}

}  // namespace matrixd
