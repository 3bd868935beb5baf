#include "core/cpu/small_lu_condition.h"

#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <optional>

// std::complex for LAPACK's complex types (as core/cpu/lu_determinant.cc).
#define LAPACK_COMPLEX_CUSTOM
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapack.h>

namespace matrixd::cpu {
namespace {

double Conjugate(double x) { return x; }
std::complex<double> Conjugate(std::complex<double> z) { return std::conj(z); }

bool IsFinite(double x) { return std::isfinite(x); }
bool IsFinite(std::complex<double> z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); }

// x := U^-1 L^-1 x (kase 1 of ?lacn2) or L^-H U^-H x (kase 2), the factors column-major with
// leading dimension n and `reciprocals` the 1 / U(j, j). Every triangle in column form: once x_j
// is known, it is taken from the entries it touches (an axpy down a column for kase 1, along a
// row of the factors for kase 2), so no sum is a chain of dependent multiply-adds; the two
// divisions a row of ?trsv takes are multiplications by the reciprocals.
template <typename T>
void SolveWithFactors(int64_t n, const T* lu, const T* reciprocals, int kase, T* x) {
  const auto at = [lu, n](int64_t row, int64_t col) { return lu[row + col * n]; };
  if (kase == 1) {
    for (int64_t j = 0; j < n; ++j) {  // L, unit lower
      const T xj = x[j];
      for (int64_t i = j + 1; i < n; ++i) x[i] -= at(i, j) * xj;
    }
    for (int64_t j = n - 1; j >= 0; --j) {  // U
      x[j] *= reciprocals[j];
      const T xj = x[j];
      for (int64_t i = 0; i < j; ++i) x[i] -= at(i, j) * xj;
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {  // U^H, lower: column i of U^H is row i of U, conjugated
    x[i] *= Conjugate(reciprocals[i]);
    const T xi = x[i];
    for (int64_t k = i + 1; k < n; ++k) x[k] -= Conjugate(at(i, k)) * xi;
  }
  for (int64_t i = n - 1; i >= 0; --i) {  // L^H, unit upper: column i of L^H is row i of L
    const T xi = x[i];
    for (int64_t k = 0; k < i; ++k) x[k] -= Conjugate(at(i, k)) * xi;
  }
}

// One step of ?lacn2's reverse communication: est, kase and isave as LAPACK keeps them.
void Lacn2(lapack_int n, double* v, double* x, lapack_int* sign, double* est, lapack_int* kase,
           lapack_int* isave) {
  LAPACK_dlacn2(&n, v, x, sign, est, kase, isave);
}
void Lacn2(lapack_int n, std::complex<double>* v, std::complex<double>* x, lapack_int* /*sign*/,
           double* est, lapack_int* kase, lapack_int* isave) {
  LAPACK_zlacn2(&n, v, x, est, kase, isave);
}

template <typename T>
std::optional<double> Estimate(int64_t n, const T* lu, double one_norm, int* solves) {
  std::array<T, kSmallConditionMaxOrder> x{};
  std::array<T, kSmallConditionMaxOrder> v{};
  std::array<lapack_int, kSmallConditionMaxOrder> sign{};
  std::array<lapack_int, 3> isave{};
  std::array<T, kSmallConditionMaxOrder> reciprocals{};
  for (int64_t j = 0; j < n; ++j) reciprocals[j] = T(1.0) / lu[j + j * n];
  double inverse_norm = 0.0;
  lapack_int kase = 0;
  const auto order = static_cast<lapack_int>(n);
  while (true) {
    Lacn2(order, v.data(), x.data(), sign.data(), &inverse_norm, &kase, isave.data());
    if (kase == 0) break;
    SolveWithFactors(n, lu, reciprocals.data(), kase, x.data());
    if (solves != nullptr) ++*solves;
    for (int64_t i = 0; i < n; ++i) {
      if (!IsFinite(x[i])) return std::nullopt;
    }
  }
  if (!(inverse_norm > 0.0) || !std::isfinite(inverse_norm)) return std::nullopt;
  return (1.0 / inverse_norm) / one_norm;
}

}  // namespace

std::optional<double> SmallLuReciprocalCondition(int64_t n, const double* lu, double one_norm,
                                                 int* solves) {
  return Estimate(n, lu, one_norm, solves);
}
std::optional<double> SmallLuReciprocalCondition(int64_t n, const std::complex<double>* lu,
                                                 double one_norm, int* solves) {
  return Estimate(n, lu, one_norm, solves);
}

}  // namespace matrixd::cpu
