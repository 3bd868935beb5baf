#include "core/cpu/condensation.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/cpu/shoup_multiplier.h"
#include "core/modular_arithmetic.h"

namespace matrixd::cpu {
namespace {

bool IsFinite(double x) { return std::isfinite(x); }
bool IsFinite(std::complex<double> z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); }

double RealFlops(double) { return 1.0; }
// A complex multiply-subtract costs 8 real operations, a complex division about 11.
double RealFlops(std::complex<double>) { return 4.0; }

// (rows x cols row-major) -> column-major, as the paper stores alpha: a_ij at alpha[i + j n].
template <typename T>
std::vector<T> ColumnMajorCopy(std::span<const T> a, int64_t n) {
  std::vector<T> alpha(a.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) alpha[i + j * n] = a[i * n + j];
  }
  return alpha;
}

double WorkLeft(int64_t m, int64_t n) {
  const double left = static_cast<double>(m) / static_cast<double>(n);
  return left * left * left;
}

absl::Status Overflowed() {
  return absl::OutOfRangeError(
      "determinant: element growth during condensation overflowed the double range; use method "
      "LU");
}

// The floating-point condensation of section 4.1. With pivot p = a_{0,l} and its column divided
// by p, subtracting a_{0,c} times column l from every column c != l leaves e_l as the first row,
// without changing the determinant. Expanding along that row gives (-1)^l times the minor of
// (0, l); the sign is absorbed by negating the l columns left of l, so that
//   b_{i,j} = a_{i+1,j+1} - a'_{i+1,l} a_{0,j+1}      for j >= l,
//   b_{i,j} = a'_{i+1,l} a_{0,j} - a_{i+1,j}          for j <  l,
// and det(A) = p det(B). With the paper's first-non-zero pivot a_{0,j} = 0 for j < l and the
// second line is the original -a_{i+1,j}; with the closest-to-1 pivot those entries may be
// non-zero and must be kept.
template <typename T>
absl::StatusOr<ScaledNumber> Condense(std::span<const T> a, int64_t n,
                                      const ProgressRange& progress, ComputeStats* stats) {
  std::vector<T> alpha = ColumnMajorCopy(a, n);
  std::vector<T> beta(static_cast<size_t>((n - 1) * (n - 1)));
  // The pivots multiply into det one after another. The paper orders that product with
  // MulSuccPivot (its Algorithm 1) so that partial products stay in the double range when the
  // final one does. A ScaledNumber carries an int64 binary exponent, so no partial product can
  // overflow or underflow whatever the order, and even a determinant far outside the double range
  // comes out: strictly stronger than Algorithm 1, which needs the result itself to be a double.
  ScaledNumber det;
  for (int64_t m = n; m > 1; --m) {
    if (progress.cancelled()) return absl::CancelledError("determinant cancelled");
    // Pivot: the non-zero first-row entry closest to 1 (section 4.1), so that its column is
    // scaled as little as possible.
    int64_t l = -1;
    double best = std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < m; ++j) {
      const T x = alpha[j * m];
      if (!IsFinite(x)) return Overflowed();
      const double distance = std::abs(x - T(1.0));
      if (x != T(0.0) && distance < best) {
        best = distance;
        l = j;
      }
    }
    if (l < 0) return ScaledNumber::Zero();  // a zero first row
    const T pivot = alpha[l * m];
    det *= pivot;
    T* const pivot_column = &alpha[l * m];
    for (int64_t i = 1; i < m; ++i) pivot_column[i] /= pivot;
    const T* const multipliers = pivot_column + 1;
    const int64_t order = m - 1;
    for (int64_t j = 0; j < order; ++j) {
      T* const out = &beta[j * order];
      if (j >= l) {
        const T* const source = &alpha[(j + 1) * m];
        const T top = source[0];
        for (int64_t i = 0; i < order; ++i) out[i] = source[i + 1] - multipliers[i] * top;
      } else {
        const T* const source = &alpha[j * m];
        const T top = source[0];
        for (int64_t i = 0; i < order; ++i) out[i] = multipliers[i] * top - source[i + 1];
      }
    }
    std::swap(alpha, beta);
    stats->flops += RealFlops(T()) *
                    (2.0 * static_cast<double>(order) * static_cast<double>(order) + 3.0 * order);
    // A is read once (its pivot column stays in cache), B written once.
    stats->bytes_moved += sizeof(T) * static_cast<uint64_t>(m * m + order * order);
    progress.Report(1.0 - WorkLeft(order, n));
  }
  if (!IsFinite(alpha[0])) return Overflowed();
  det *= alpha[0];
  progress.Report(1.0);
  return det;
}

}  // namespace

absl::StatusOr<ScaledNumber> CondensationDeterminant(std::span<const double> a, int64_t n,
                                                     const ProgressRange& progress,
                                                     ComputeStats* stats) {
  return Condense(a, n, progress, stats);
}

absl::StatusOr<ScaledNumber> CondensationDeterminant(std::span<const std::complex<double>> a,
                                                     int64_t n, const ProgressRange& progress,
                                                     ComputeStats* stats) {
  return Condense(a, n, progress, stats);
}

// Section 2.1 over Z/p, with the pivot's column multiplied by the pivot's inverse so that, as in
// the floating-point variant, det(A) = det(B) * pivot and no power of the pivot is needed.
absl::StatusOr<uint64_t> ModularCondensationDeterminant(std::span<const uint64_t> a, int64_t n,
                                                        uint64_t p, const ProgressRange& progress,
                                                        ComputeStats* stats) {
  std::vector<uint64_t> alpha = ColumnMajorCopy(a, n);
  std::vector<uint64_t> beta(static_cast<size_t>((n - 1) * (n - 1)));
  uint64_t det = 1;
  for (int64_t m = n; m > 1; --m) {
    if (progress.cancelled()) return absl::CancelledError("determinant cancelled");
    int64_t l = 0;
    while (l < m && alpha[l * m] == 0) ++l;
    if (l == m) return uint64_t{0};  // a zero first row
    const uint64_t pivot = alpha[l * m];
    det = MulMod(det, pivot, p);
    uint64_t* const pivot_column = &alpha[l * m];
    const ShoupMultiplier by_inverse(InvMod(pivot, p), p);
    for (int64_t i = 1; i < m; ++i) pivot_column[i] = by_inverse.Times(pivot_column[i]);
    const uint64_t* const multipliers = pivot_column + 1;
    const int64_t order = m - 1;
    for (int64_t j = 0; j < order; ++j) {
      uint64_t* const out = &beta[j * order];
      if (j < l) {
        // a_{0,j} = 0 left of the first non-zero: the column is only negated.
        const uint64_t* const source = &alpha[j * m + 1];
        for (int64_t i = 0; i < order; ++i) out[i] = source[i] == 0 ? 0 : p - source[i];
        continue;
      }
      const uint64_t* const source = &alpha[(j + 1) * m];
      const ShoupMultiplier by_top(source[0], p);
      for (int64_t i = 0; i < order; ++i) {
        out[i] = SubMod(source[i + 1], by_top.Times(multipliers[i]), p);
      }
    }
    std::swap(alpha, beta);
    stats->flops += 2.0 * static_cast<double>(order) * static_cast<double>(order) + order;
    stats->bytes_moved += sizeof(uint64_t) * static_cast<uint64_t>(m * m + order * order);
    progress.Report(1.0 - WorkLeft(order, n));
  }
  det = MulMod(det, alpha[0], p);
  progress.Report(1.0);
  return det;
}

}  // namespace matrixd::cpu
