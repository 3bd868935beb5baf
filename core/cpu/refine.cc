#include "core/cpu/refine.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cpu/compensated_sum.h"
#include "core/cpu/lapack_types.h"
#include "core/refinement.h"
#include "core/status_macros.h"

namespace matrixd::cpu {
namespace {

template <typename T>
constexpr double kFlopScale = kIsComplex<T> ? 4.0 : 1.0;

// Adds a * x to `sum` exactly: the product's rounding error recovered by an FMA (TwoProd).
inline void AddProduct(CompensatedSum& sum, double a, double x) {
  const double p = a * x;
  sum.Add(p, std::fma(a, x, -p));
}

// Runs body(begin, end) over [0, rows) split into up to `threads` contiguous ranges. Each row's
// result depends on that row alone, so the split does not change any bit.
template <typename Body>
void ForRowRanges(int64_t rows, int threads, const Body& body) {
  const int64_t parts = std::clamp<int64_t>(threads, 1, std::max<int64_t>(rows / 64, 1));
  std::vector<std::thread> pool;
  for (int64_t p = 1; p < parts; ++p) {
    pool.emplace_back([&, p] { body(rows * p / parts, rows * (p + 1) / parts); });
  }
  body(0, rows / parts);
  for (std::thread& thread : pool) thread.join();
}

// r = B - A X, each entry summed in double-double from exact products and rounded once to T (r
// may be null). Returns ||B - A X||_inf of the double-double values (rounded to double).
template <typename T>
double Residual(const T* a, const T* x, const T* b, int64_t n, int64_t nrhs, T* r, int threads) {
  std::vector<double> row_norms(static_cast<size_t>(n), 0.0);
  ForRowRanges(n, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const T* a_i = a + i * n;
      double row_norm = 0.0;
      for (int64_t c = 0; c < nrhs; ++c) {
        if constexpr (kIsComplex<T>) {
          CompensatedSum re;
          CompensatedSum im;
          re.Add(static_cast<double>(b[i * nrhs + c].real()));
          im.Add(static_cast<double>(b[i * nrhs + c].imag()));
          for (int64_t j = 0; j < n; ++j) {
            const double ar = a_i[j].real(), ai = a_i[j].imag();
            const double xr = x[j * nrhs + c].real(), xi = x[j * nrhs + c].imag();
            AddProduct(re, -ar, xr);
            AddProduct(re, ai, xi);
            AddProduct(im, -ar, xi);
            AddProduct(im, -ai, xr);
          }
          const std::complex<double> value(re.value(), im.value());
          row_norm += std::abs(value);
          if (r != nullptr) r[i * nrhs + c] = T(value);
        } else {
          CompensatedSum sum;
          sum.Add(static_cast<double>(b[i * nrhs + c]));
          for (int64_t j = 0; j < n; ++j) {
            AddProduct(sum, -static_cast<double>(a_i[j]), static_cast<double>(x[j * nrhs + c]));
          }
          row_norm += std::abs(sum.value());
          if (r != nullptr) r[i * nrhs + c] = static_cast<T>(sum.value());
        }
      }
      row_norms[static_cast<size_t>(i)] = row_norm;
    }
  });
  return row_norms.empty() ? 0.0 : *std::max_element(row_norms.begin(), row_norms.end());
}

// ||M||_inf: the largest sum of |entries| of a row (rows x cols, row-major), in double.
template <typename T>
double InfNorm(const T* m, int64_t rows, int64_t cols) {
  double norm = 0.0;
  for (int64_t i = 0; i < rows; ++i) {
    double row = 0.0;
    for (int64_t j = 0; j < cols; ++j) row += std::abs(m[i * cols + j]);
    norm = std::max(norm, row);
  }
  return norm;
}

template <typename T>
double BackwardErrorTyped(const T* a, const T* x, const T* b, int64_t n, int64_t nrhs,
                          int threads) {
  const double residual = Residual(a, x, b, n, nrhs, static_cast<T*>(nullptr), threads);
  return BackwardError(residual, InfNorm(a, n, n), InfNorm(x, n, nrhs), InfNorm(b, n, nrhs));
}

std::vector<int64_t> PermutationOf(const std::vector<lapack_int>& ipiv) {
  std::vector<int64_t> permutation(ipiv.size());
  std::iota(permutation.begin(), permutation.end(), int64_t{0});
  for (size_t r = 0; r < ipiv.size(); ++r) std::swap(permutation[r], permutation[ipiv[r] - 1]);
  return permutation;
}

absl::Status Singular(lapack_int info) {
  const int64_t k = info - 1;
  return absl::FailedPreconditionError(
      absl::StrCat("matrix is singular: U[", k, ",", k, "] = 0 at column ", k, "; cannot solve"));
}

double LuFlops(double n) { return 2.0 * n * n * n / 3.0; }

// Factors in T and refines with double-double residuals (Higham, Accuracy and Stability of
// Numerical Algorithms, 2nd ed., ch. 12: with residuals in extra precision, X converges to the
// rounded exact solution while cond(A) u stays well below 1).
template <typename T>
absl::StatusOr<FactorizeResult> SamePrecision(const MatrixView& a, const MatrixView& b,
                                              const RefineOptions& options, int threads) {
  const lapack_int n = static_cast<lapack_int>(a.rows);
  const lapack_int nrhs = static_cast<lapack_int>(b.cols);
  const T* a_data = a.As<T>().data();
  const T* b_data = b.As<T>().data();
  FactorizeResult result;
  result.kind = FactorizationKind::kLu;
  result.lu = Matrix::CopyOf(a);
  std::vector<lapack_int> ipiv(static_cast<size_t>(n));
  T* lu = result.lu.As<T>().data();
  const lapack_int info = Lapack<T>::getrf(LAPACK_ROW_MAJOR, n, n, lu, n, ipiv.data());
  if (info < 0) return absl::InternalError(absl::StrCat("getrf rejected argument ", -info));
  if (info > 0) return Singular(info);
  result.permutation = PermutationOf(ipiv);

  Matrix x = Matrix::CopyOf(b);
  T* x_data = x.As<T>().data();
  const auto solve = [&](T* rhs) {
    return Lapack<T>::getrs(LAPACK_ROW_MAJOR, 'N', n, nrhs, lu, n, ipiv.data(), rhs, nrhs);
  };
  if (const lapack_int s = solve(x_data); s != 0) {
    return absl::InternalError(absl::StrCat("getrs rejected argument ", -s));
  }
  const double a_norm = InfNorm(a_data, n, n);
  const double b_norm = InfNorm(b_data, n, nrhs);
  const double threshold = RefineThreshold(a.dtype, n, RefinePrecision::kInput);
  RefineStoppingRule rule(threshold, UnitRoundoff(a.dtype),
                          RefineIterations(options.max_iterations));
  Matrix r(n, nrhs, a.dtype);
  T* r_data = r.As<T>().data();
  // The X of the smallest backward error, returned if the loop ends above the threshold with a
  // worse one (a diverging or rounding-dominated last step).
  Matrix best_x;
  double best = std::numeric_limits<double>::infinity();
  double backward_error = best;
  while (true) {
    const double residual = Residual(a_data, x_data, b_data, n, nrhs, r_data, threads);
    const double x_norm = InfNorm(x_data, n, nrhs);
    backward_error = BackwardError(residual, a_norm, x_norm, b_norm);
    if (backward_error < best) {
      best = backward_error;
      best_x = Matrix::CopyOf(x.view());
    }
    if (rule.Done(backward_error, x_norm)) break;
    if (const lapack_int s = solve(r_data); s != 0) {
      return absl::InternalError(absl::StrCat("getrs rejected argument ", -s));
    }
    rule.Stepped(InfNorm(r_data, n, nrhs));
    for (int64_t e = 0; e < int64_t{n} * nrhs; ++e) x_data[e] += r_data[e];
  }
  if (backward_error > threshold && best < backward_error) {
    x = std::move(best_x);
    backward_error = best;
  }
  const int steps = rule.steps();
  result.refinement =
      Refinement{.iterations = steps,
                 .backward_error = backward_error,
                 .converged = backward_error <= threshold,
                 .threshold = threshold,
                 .factor_precision = RefinePrecisionName(RefinePrecision::kInput, a.dtype),
                 .fell_back = false};
  result.solution = std::move(x);
  // getrf, one solve per step plus the first, one residual (counted as a plain product) per X.
  const double nd = n;
  result.stats.flops = kFlopScale<T> * (LuFlops(nd) + (steps + 1) * 4.0 * nd * nd * nrhs);
  result.stats.bytes_moved = 2 * a.byte_size() + (steps + 1) * (a.byte_size() + 3 * b.byte_size());
  return result;
}

// LAPACK's ?sgesv: factors in single precision and refines with residuals in double; falls back to
// a double-precision factorization by itself (iter < 0) when that does not converge in 30 steps.
template <typename T>
absl::StatusOr<FactorizeResult> Mixed(const MatrixView& a, const MatrixView& b,
                                      RefinePrecision precision, int threads) {
  const lapack_int n = static_cast<lapack_int>(a.rows);
  const lapack_int nrhs = static_cast<lapack_int>(b.cols);
  Matrix factors = Matrix::CopyOf(a);
  Matrix rhs = Matrix::CopyOf(b);
  Matrix x(n, nrhs, a.dtype);
  std::vector<lapack_int> ipiv(static_cast<size_t>(n));
  lapack_int iter = 0;
  lapack_int info = 0;
  if constexpr (kIsComplex<T>) {
    info = LAPACKE_zcgesv(LAPACK_ROW_MAJOR, n, nrhs, factors.As<T>().data(), n, ipiv.data(),
                          rhs.As<T>().data(), nrhs, x.As<T>().data(), nrhs, &iter);
  } else {
    info = LAPACKE_dsgesv(LAPACK_ROW_MAJOR, n, nrhs, factors.As<T>().data(), n, ipiv.data(),
                          rhs.As<T>().data(), nrhs, x.As<T>().data(), nrhs, &iter);
  }
  const char* routine = kIsComplex<T> ? "zcgesv" : "dsgesv";
  if (info < 0) return absl::InternalError(absl::StrCat(routine, " rejected argument ", -info));
  if (info > 0) return Singular(info);
  FactorizeResult result;
  result.kind = FactorizationKind::kLu;
  // No factors are returned, even after a fall-back (when `factors` holds them), so that both
  // backends answer alike: cuSOLVER's IRS solver does not return them.
  const bool fell_back = iter < 0;
  const double backward_error =
      BackwardErrorTyped(a.As<T>().data(), x.As<T>().data(), b.As<T>().data(), n, nrhs, threads);
  // kTf32 and kFloat16 have no CPU kernels: they ran as float32 and say so.
  const double threshold = RefineThreshold(a.dtype, n, precision);
  result.refinement = Refinement{
      .iterations = std::max<lapack_int>(iter, 0),
      .backward_error = backward_error,
      .converged = backward_error <= threshold,
      .threshold = threshold,
      .factor_precision = fell_back ? std::string(DTypeName(a.dtype))
                                    : RefinePrecisionName(RefinePrecision::kFloat32, a.dtype),
      .fell_back = fell_back};
  result.solution = std::move(x);
  const double nd = n;
  const double steps = std::max<lapack_int>(iter, 0) + 1;
  result.stats.flops =
      kFlopScale<T> * ((fell_back ? 2.0 : 1.0) * LuFlops(nd) + steps * 4.0 * nd * nd * nrhs);
  result.stats.bytes_moved = 2 * a.byte_size() + steps * (a.byte_size() + 3 * b.byte_size());
  if (!fell_back) result.stats.precision = result.refinement->factor_precision + " factors";
  return result;
}

}  // namespace

absl::StatusOr<FactorizeResult> RefinedLuSolve(const MatrixView& a, const MatrixView& b,
                                               const RefineOptions& options, int threads) {
  if (!IsFloating(a.dtype) || b.dtype != a.dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("refine needs matrix and rhs of one floating "
                     "dtype, got ",
                     DTypeName(a.dtype), " and ", DTypeName(b.dtype)));
  }
  constexpr int64_t kMaxDim = std::numeric_limits<lapack_int>::max();
  if (a.rows != a.cols || a.rows < 1 || a.rows > kMaxDim || b.rows != a.rows || b.cols < 1 ||
      b.cols > kMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("refine needs a square matrix and rhs with as "
                     "many rows, got ",
                     a.rows, "x", a.cols, " and ", b.rows, "x", b.cols));
  }
  const RefinePrecision precision = options.factor_precision;
  switch (a.dtype) {
    case DType::kFloat32:
      return SamePrecision<float>(a, b, options, threads);
    case DType::kComplex64:
      return SamePrecision<std::complex<float>>(a, b, options, threads);
    case DType::kFloat64:
      if (IsMixedPrecision(precision, a.dtype)) return Mixed<double>(a, b, precision, threads);
      return SamePrecision<double>(a, b, options, threads);
    case DType::kComplex128:
      if (IsMixedPrecision(precision, a.dtype)) {
        return Mixed<std::complex<double>>(a, b, precision, threads);
      }
      return SamePrecision<std::complex<double>>(a, b, options, threads);
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("matrix.dtype ", DTypeName(a.dtype), " cannot be refined"));
}

double RefinedBackwardError(const MatrixView& a, const MatrixView& x, const MatrixView& b,
                            int threads) {
  const int64_t n = a.rows;
  const int64_t nrhs = b.cols;
  switch (a.dtype) {
    case DType::kFloat32:
      return BackwardErrorTyped(a.As<float>().data(), x.As<float>().data(), b.As<float>().data(), n,
                                nrhs, threads);
    case DType::kFloat64:
      return BackwardErrorTyped(a.As<double>().data(), x.As<double>().data(), b.As<double>().data(),
                                n, nrhs, threads);
    case DType::kComplex64:
      return BackwardErrorTyped(a.As<std::complex<float>>().data(),
                                x.As<std::complex<float>>().data(),
                                b.As<std::complex<float>>().data(), n, nrhs, threads);
    case DType::kComplex128:
      return BackwardErrorTyped(a.As<std::complex<double>>().data(),
                                x.As<std::complex<double>>().data(),
                                b.As<std::complex<double>>().data(), n, nrhs, threads);
    default:
      break;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace matrixd::cpu
