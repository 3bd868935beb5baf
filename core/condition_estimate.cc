#include "core/condition_estimate.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "core/status_macros.h"

namespace matrixd {
namespace {

// LAPACK's ITMAX: at most this many sign-vector steps.
constexpr int kMaxIterations = 5;

template <typename T>
inline constexpr bool kComplex = false;
template <>
inline constexpr bool kComplex<std::complex<double>> = true;

double Magnitude(double x) { return std::abs(x); }
double Magnitude(std::complex<double> z) { return std::abs(z); }

// The sign of each entry: +-1 (dlacn2's SIGN(ONE, x)), or z / |z| for complex entries (1 where
// |z| is below the smallest normal, as zlacn2 does).
double UnitOf(double x) { return x >= 0.0 ? 1.0 : -1.0; }
std::complex<double> UnitOf(std::complex<double> z) {
  const double magnitude = std::abs(z);
  return magnitude > std::numeric_limits<double>::min() ? z / magnitude : 1.0;
}

template <typename T>
double OneNorm(const std::vector<T>& x) {
  double sum = 0.0;
  for (const T& v : x) sum += Magnitude(v);
  return sum;
}

// The first index of the entry of largest magnitude (NaN never wins).
template <typename T>
size_t LargestEntry(const std::vector<T>& x) {
  size_t best = 0;
  for (size_t i = 1; i < x.size(); ++i) {
    if (Magnitude(x[i]) > Magnitude(x[best])) best = i;
  }
  return best;
}

}  // namespace

// dlacn2 / zlacn2 written out as a loop instead of reverse communication. Every value taken is
// ||A^-1 v||_1 / ||v||_1 for some v, hence a lower bound of ||A^-1||_1; the largest is kept (LAPACK
// can end on a smaller one).
template <typename T>
absl::StatusOr<double> EstimateInverseOneNorm(int64_t n, InverseApply<T> apply) {
  const size_t size = static_cast<size_t>(n);
  std::vector<T> x(size, T(1.0 / static_cast<double>(n)));
  MATRIXD_RETURN_IF_ERROR(apply(false, x));
  if (n == 1) return Magnitude(x[0]);
  double estimate = OneNorm(x);
  if (!std::isfinite(estimate)) return estimate;

  // Hager's step: the gradient of ||A^-1 v||_1 at v is A^-H sign(A^-1 v); move to the unit
  // vector of its largest entry while that increases the norm.
  std::vector<T> signs(size);
  for (size_t i = 0; i < size; ++i) signs[i] = UnitOf(x[i]);
  x = signs;
  MATRIXD_RETURN_IF_ERROR(apply(true, x));
  size_t j = LargestEntry(x);
  for (int iteration = 2;; ++iteration) {
    std::fill(x.begin(), x.end(), T(0.0));
    x[j] = T(1.0);
    MATRIXD_RETURN_IF_ERROR(apply(false, x));
    const double previous = estimate;
    const double norm = OneNorm(x);
    if (!std::isfinite(norm)) return norm;
    estimate = std::max(estimate, norm);
    // Real case: a repeated sign vector means the next gradient would be the same (converged).
    bool repeated = !kComplex<T>;
    if constexpr (!kComplex<T>) {
      for (size_t i = 0; i < size && repeated; ++i) repeated = UnitOf(x[i]) == signs[i];
    }
    if (repeated || norm <= previous) break;
    for (size_t i = 0; i < size; ++i) signs[i] = UnitOf(x[i]);
    x = signs;
    MATRIXD_RETURN_IF_ERROR(apply(true, x));
    const size_t last = j;
    j = LargestEntry(x);
    if (Magnitude(x[last]) == Magnitude(x[j]) || iteration >= kMaxIterations) break;
  }

  // Higham's extra vector with alternating signs and growing entries: it catches the matrices on
  // which the iteration stalls at a poor local maximum (||x||_1 = 3n / 2 exactly).
  double sign = 1.0;
  for (size_t i = 0; i < size; ++i) {
    x[i] = T(sign * (1.0 + static_cast<double>(i) / static_cast<double>(n - 1)));
    sign = -sign;
  }
  MATRIXD_RETURN_IF_ERROR(apply(false, x));
  const double alternative = 2.0 * OneNorm(x) / (3.0 * static_cast<double>(n));
  if (!std::isfinite(alternative)) return alternative;
  return std::max(estimate, alternative);
}

template <typename T>
absl::StatusOr<double> EstimateReciprocalCondition(int64_t n, double one_norm,
                                                   InverseApply<T> apply) {
  if (!(one_norm > 0.0) || !std::isfinite(one_norm)) return 0.0;
  // Solving with s v instead of v, s = 2^floor(log2 ||A||_1) (exact), estimates s ||A^-1||_1, which
  // is about the condition number whatever A's scale: entries of 1e-300 do not overflow A^-1 v.
  const double scale = std::ldexp(1.0, std::ilogb(one_norm));
  auto scaled = [&](bool adjoint, std::span<T> x) {
    for (T& v : x) v *= scale;
    return apply(adjoint, x);
  };
  MATRIXD_ASSIGN_OR_RETURN(const double inverse_norm,
                           EstimateInverseOneNorm<T>(n, InverseApply<T>(scaled)));
  if (!std::isfinite(inverse_norm) || !(inverse_norm > 0.0)) return 0.0;
  return std::min(1.0, (scale / one_norm) / inverse_norm);
}

template absl::StatusOr<double> EstimateInverseOneNorm<double>(int64_t, InverseApply<double>);
template absl::StatusOr<double> EstimateInverseOneNorm<std::complex<double>>(
    int64_t, InverseApply<std::complex<double>>);
template absl::StatusOr<double> EstimateReciprocalCondition<double>(int64_t, double,
                                                                    InverseApply<double>);
template absl::StatusOr<double> EstimateReciprocalCondition<std::complex<double>>(
    int64_t, double, InverseApply<std::complex<double>>);

}  // namespace matrixd
