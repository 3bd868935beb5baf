#include "core/cpu/determinant.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/accuracy.h"
#include "core/cpu/condensation.h"
#include "core/cpu/exact_determinant.h"
#include "core/cpu/lu_determinant.h"
#include "core/cpu/modular_elimination.h"
#include "core/cpu/progress_range.h"
#include "core/hadamard_bound.h"
#include "core/modular_arithmetic.h"
#include "core/status_macros.h"

namespace matrixd::cpu {
namespace {

// Progress weight of one prime of the exact determinant against the floating-point part: modular
// elimination does a third of LU's multiply-adds but each costs several times more.
constexpr double kPrimeWeight = 4.0;

// The matrix in double or complex<double> with each row scaled by a power of two so that its
// largest entry has magnitude in [1, 2): exact (only entries 2^1022 times below their row's largest
// can lose bits to underflow, far below any elimination's own error), and it keeps both LU and
// condensation away from overflow and underflow whatever the input's range, e.g. entries of 1e-300
// or 1e300. det(A) = det(values) * 2^exponent2.
template <typename T>
struct RowScaled {
  std::vector<T> values;
  int64_t exponent2 = 0;
};

double Magnitude(double x) { return std::abs(x); }
double Magnitude(std::complex<double> z) {
  return std::max(std::abs(z.real()), std::abs(z.imag()));
}

double Ldexp(double x, int e) { return std::ldexp(x, e); }
std::complex<double> Ldexp(std::complex<double> z, int e) {
  return {std::ldexp(z.real(), e), std::ldexp(z.imag(), e)};
}

template <typename T, typename Source>
RowScaled<T> ScaleRows(const MatrixView& a, ComputeStats* stats) {
  const std::span<const Source> source = a.As<Source>();
  const int64_t n = a.rows;
  RowScaled<T> scaled;
  scaled.values.resize(source.size());
  for (int64_t i = 0; i < n; ++i) {
    T* const row = &scaled.values[i * n];
    double largest = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      row[j] = T(source[i * n + j]);
      largest = std::max(largest, Magnitude(row[j]));
    }
    if (largest == 0.0) continue;
    int e = 0;
    std::frexp(largest, &e);  // largest in [2^(e-1), 2^e)
    const int shift = 1 - e;
    scaled.exponent2 -= shift;
    if (std::abs(shift) <= 1000) {
      const double factor = std::ldexp(1.0, shift);  // a normal double: the product is exact
      for (int64_t j = 0; j < n; ++j) row[j] *= factor;
    } else {
      for (int64_t j = 0; j < n; ++j) row[j] = Ldexp(row[j], shift);
    }
  }
  stats->bytes_moved += a.byte_size() + 2 * scaled.values.size() * sizeof(T);
  return scaled;
}

void MultiplyByPowerOfTwo(ScaledNumber& x, int64_t exponent2) {
  while (exponent2 != 0) {
    const int64_t step = std::clamp<int64_t>(exponent2, -1000, 1000);
    x *= std::ldexp(1.0, static_cast<int>(step));
    exponent2 -= step;
  }
}

// The determinant and, for LU, its accuracy. The condition is that of the row-scaled matrix D A
// that LU factorizes: det(D A) = det(D) det(A) with D exact powers of two, so its relative error
// is det(A)'s.
struct FloatingValue {
  ScaledNumber det;
  std::optional<Accuracy> accuracy;
};

template <typename T>
absl::StatusOr<FloatingValue> FloatingDeterminant(RowScaled<T> scaled, int64_t n,
                                                  DeterminantMethod method,
                                                  const ProgressRange& progress,
                                                  ComputeStats* stats) {
  const int64_t exponent2 = scaled.exponent2;
  FloatingValue value;
  if (method == DeterminantMethod::kCondensation) {
    MATRIXD_ASSIGN_OR_RETURN(
        value.det, CondensationDeterminant(std::span<const T>(scaled.values), n, progress, stats));
  } else {
    MATRIXD_ASSIGN_OR_RETURN(LuDeterminantResult lu,
                             LuDeterminant(std::move(scaled.values), n, progress, stats));
    value.det = lu.det;
    value.accuracy = DeterminantAccuracy(lu.rcond, n);
  }
  MultiplyByPowerOfTwo(value.det, exponent2);
  return value;
}

absl::StatusOr<DeterminantResult> ModularDeterminant(const MatrixView& a,
                                                     const DeterminantOptions& options, int threads,
                                                     const ProgressRange& progress) {
  const uint64_t p = options.modulus;
  if (a.dtype != DType::kInt64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matrix.dtype is ", std::string(DTypeName(a.dtype)), "; want int64 when modulus > 0"));
  }
  if (p < 2 || p >= kModulusLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("modulus ", p, " must be 0 or a prime below 2^62"));
  }
  const std::span<const int64_t> entries = a.As<int64_t>();
  std::vector<uint64_t> residues(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) residues[i] = ReduceSigned(entries[i], p);
  DeterminantResult result;
  result.stats.bytes_moved += 2 * a.byte_size();
  absl::StatusOr<uint64_t> residue;
  if (options.method == DeterminantMethod::kCondensation) {
    result.method_used = DeterminantMethod::kCondensation;
    residue = ModularCondensationDeterminant(residues, a.rows, p, progress, &result.stats);
  } else {
    result.method_used = DeterminantMethod::kLu;
    residue = ModularEliminationDeterminant(std::move(residues), a.rows, p, threads, progress,
                                            &result.stats);
  }
  MATRIXD_ASSIGN_OR_RETURN(result.residue, std::move(residue));
  result.certificate = ResidueCertificate(result.method_used == DeterminantMethod::kCondensation
                                              ? "condensation mod p"
                                              : "elimination mod p",
                                          p, result.residue);
  return result;
}

}  // namespace

absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                              const DeterminantOptions& options, int threads,
                                              JobControl* control) {
  if (a.rows != a.cols || a.rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix has shape ", a.rows, "x", a.cols, "; want square and non-empty"));
  }
  const ProgressRange progress(control);
  if (progress.cancelled()) return absl::CancelledError("determinant cancelled");
  const int64_t n = a.rows;

  if (options.modulus > 0) {
    absl::StatusOr<DeterminantResult> result = ModularDeterminant(a, options, threads, progress);
    if (result.ok()) progress.Report(1.0);
    return result;
  }

  DeterminantResult result;
  // AUTO is LU: backward stable with partial pivoting, and BLAS-3 fast.
  result.method_used = options.method == DeterminantMethod::kCondensation
                           ? DeterminantMethod::kCondensation
                           : DeterminantMethod::kLu;
  // For INT64 the exact determinant follows when affordable; split the progress by cost.
  int primes = 0;
  double bound_bits = 0.0;
  bool exact_affordable = false;
  if (a.dtype == DType::kInt64) {
    bound_bits = HadamardBoundBits(a, options);
    primes = PrimeCountForBound(bound_bits);
    const double cube = static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    exact_affordable = primes * cube <= kExactDeterminantBudget;
  }
  const double value_share =
      exact_affordable && primes > 0 ? 1.0 / (1.0 + kPrimeWeight * primes) : 1.0;
  const ProgressRange value_progress = progress.Part(0.0, value_share);

  absl::StatusOr<FloatingValue> value;
  switch (a.dtype) {
    case DType::kFloat32:
      value = FloatingDeterminant(ScaleRows<double, float>(a, &result.stats), n, result.method_used,
                                  value_progress, &result.stats);
      break;
    case DType::kFloat64:
      value = FloatingDeterminant(ScaleRows<double, double>(a, &result.stats), n,
                                  result.method_used, value_progress, &result.stats);
      break;
    case DType::kInt64:
      value = FloatingDeterminant(ScaleRows<double, int64_t>(a, &result.stats), n,
                                  result.method_used, value_progress, &result.stats);
      break;
    case DType::kComplex64:
      value = FloatingDeterminant(
          ScaleRows<std::complex<double>, std::complex<float>>(a, &result.stats), n,
          result.method_used, value_progress, &result.stats);
      break;
    case DType::kComplex128:
      value = FloatingDeterminant(
          ScaleRows<std::complex<double>, std::complex<double>>(a, &result.stats), n,
          result.method_used, value_progress, &result.stats);
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "matrix.dtype is ", std::string(DTypeName(a.dtype)),
          "; want float32, float64, complex64, complex128 or int64 for a determinant"));
  }
  MATRIXD_ASSIGN_OR_RETURN(FloatingValue floating, std::move(value));
  result.value = floating.det;
  result.accuracy = floating.accuracy;

  if (a.dtype == DType::kInt64) {
    if (primes == 0) {
      result.exact = std::string("0");  // a zero row (plain = "0" trips GCC 12 -Wrestrict)
      result.value = ScaledNumber::Zero();
      result.certificate = ZeroRowCertificate();
    } else if (exact_affordable) {
      const auto exact_start = std::chrono::steady_clock::now();
      const double flops_before = result.stats.flops;
      const uint64_t bytes_before = result.stats.bytes_moved;
      MATRIXD_ASSIGN_OR_RETURN(
          ExactDeterminant exact,
          ExactIntegerDeterminant(a.As<int64_t>(), n, primes, bound_bits, threads,
                                  progress.Part(value_share, 1.0), &result.stats));
      // The LU value recorded its kernels (lu, condition_estimate); this part gets its own, so
      // that the records still cover the operation.
      if (!result.stats.kernels.empty()) {
        result.stats.kernels.push_back(
            {.kernel = "exact_determinant",
             .seconds =
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - exact_start)
                     .count(),
             .bytes = result.stats.bytes_moved - bytes_before,
             .flops = result.stats.flops - flops_before});
      }
      result.exact = std::move(exact.decimal);
      result.certificate = std::move(exact.certificate);
      // The exact integer, rounded, is never worse than the floating-point value and is zero
      // exactly when A is singular; its only error is that rounding.
      result.value = exact.rounded;
      if (result.accuracy.has_value()) {
        result.accuracy = ExactlyRoundedAccuracy(result.accuracy->rcond);
      }
    }
  }
  progress.Report(1.0);
  return result;
}

}  // namespace matrixd::cpu
