// Dense-matrix helpers shared by the core tests: the dtype traits (Real<T>, Wide<T>, kComplex<T>,
// Eps<T>), a loop over the floating dtypes, seeded random inputs, and long double (uint64 for
// UINT32) reference arithmetic on row-major WideMatrix copies of a Matrix (products, conjugate
// transposes, Frobenius norms and distances), against which the backends' results are checked.
// Everything is deterministic: the same seed gives the same matrix on every run and platform
// that has std::mt19937_64.
#ifndef MATRIXD_TESTS_CORE_DENSE_TEST_SUPPORT_H_
#define MATRIXD_TESTS_CORE_DENSE_TEST_SUPPORT_H_

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "core/matrix.h"
#include "gtest/gtest.h"

namespace matrixd::testing {

// Real<T>: the real type of T; Wide<T>: the type the references compute in.
template <typename T>
struct Precision {
  using Real = T;
  using Wide = long double;
};
template <typename R>
struct Precision<std::complex<R>> {
  using Real = R;
  using Wide = std::complex<long double>;
};
template <>
struct Precision<uint32_t> {
  using Real = uint32_t;
  using Wide = uint64_t;
};
template <typename T>
using Real = typename Precision<T>::Real;
template <typename T>
using Wide = typename Precision<T>::Wide;
template <typename T>
inline constexpr bool kComplex = !std::is_same_v<T, Real<T>>;

// The unit roundoff scale of a floating T (of its real part for complex T).
template <typename T>
long double Eps() {
  return std::numeric_limits<Real<T>>::epsilon();
}

// Runs fn(std::type_identity<T>{}) for each floating dtype, with the dtype in failure messages.
template <typename Fn>
void ForEachFloatingType(Fn&& fn) {
  {
    SCOPED_TRACE("float32");
    fn(std::type_identity<float>{});
  }
  {
    SCOPED_TRACE("float64");
    fn(std::type_identity<double>{});
  }
  {
    SCOPED_TRACE("complex64");
    fn(std::type_identity<std::complex<float>>{});
  }
  {
    SCOPED_TRACE("complex128");
    fn(std::type_identity<std::complex<double>>{});
  }
}

// ---- Wide arithmetic ----

// Spelled out: std::complex<long double>'s operator* goes through the slow Annex G path.
template <typename W>
W Mul(const W& a, const W& b) {
  if constexpr (std::is_arithmetic_v<W>) {
    return a * b;
  } else {
    return W(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
  }
}
template <typename W>
W Conj(const W& a) {
  if constexpr (std::is_arithmetic_v<W>) {
    return a;
  } else {
    return std::conj(a);
  }
}
template <typename W>
long double Abs2(const W& a) {
  if constexpr (std::is_arithmetic_v<W>) {
    return a * a;
  } else {
    return a.real() * a.real() + a.imag() * a.imag();
  }
}

// A rows x cols matrix of W, row-major, zero-initialized.
template <typename W>
struct WideMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<W> v;

  WideMatrix(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c), W(0)) {}
  W& operator()(int64_t i, int64_t j) { return v[i * cols + j]; }
  const W& operator()(int64_t i, int64_t j) const { return v[i * cols + j]; }
};

// m (of dtype T) converted exactly to Wide<T>.
template <typename T>
WideMatrix<Wide<T>> Widen(const Matrix& m) {
  WideMatrix<Wide<T>> w(m.rows(), m.cols());
  const auto values = m.As<T>();
  for (size_t i = 0; i < values.size(); ++i) w.v[i] = Wide<T>(values[i]);
  return w;
}

// a b. REQUIRES: a.cols == b.rows.
template <typename W>
WideMatrix<W> Product(const WideMatrix<W>& a, const WideMatrix<W>& b) {
  WideMatrix<W> c(a.rows, b.cols);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t p = 0; p < a.cols; ++p) {
      const W x = a(i, p);
      for (int64_t j = 0; j < b.cols; ++j) c(i, j) += Mul(x, b(p, j));
    }
  }
  return c;
}

// a^H (a^T for real W).
template <typename W>
WideMatrix<W> ConjugateTranspose(const WideMatrix<W>& a) {
  WideMatrix<W> t(a.cols, a.rows);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t j = 0; j < a.cols; ++j) t(j, i) = Conj(a(i, j));
  }
  return t;
}

// ||a||_F.
template <typename W>
long double Norm(const WideMatrix<W>& a) {
  long double sum = 0;
  for (const W& x : a.v) sum += Abs2(x);
  return std::sqrt(sum);
}

// ||a - b||_F. REQUIRES: a and b of one shape.
template <typename W>
long double DistanceNorm(const WideMatrix<W>& a, const WideMatrix<W>& b) {
  long double sum = 0;
  for (size_t i = 0; i < a.v.size(); ++i) sum += Abs2(a.v[i] - b.v[i]);
  return std::sqrt(sum);
}

// a^T, also for complex W.
template <typename W>
WideMatrix<W> Transpose(const WideMatrix<W>& a) {
  WideMatrix<W> t(a.cols, a.rows);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t j = 0; j < a.cols; ++j) t(j, i) = a(i, j);
  }
  return t;
}

// X with G X = H by Gaussian elimination with partial pivoting, in long double.
template <typename W>
WideMatrix<W> SolveWide(WideMatrix<W> g, WideMatrix<W> h) {
  const int64_t n = g.rows;
  for (int64_t j = 0; j < n; ++j) {
    int64_t pivot = j;
    for (int64_t i = j + 1; i < n; ++i) {
      if (Abs2(g(i, j)) > Abs2(g(pivot, j))) pivot = i;
    }
    for (int64_t c = 0; c < n; ++c) std::swap(g(j, c), g(pivot, c));
    for (int64_t c = 0; c < h.cols; ++c) std::swap(h(j, c), h(pivot, c));
    for (int64_t i = j + 1; i < n; ++i) {
      const W l = g(i, j) / g(j, j);
      for (int64_t c = j; c < n; ++c) g(i, c) -= Mul(l, g(j, c));
      for (int64_t c = 0; c < h.cols; ++c) h(i, c) -= Mul(l, h(j, c));
    }
  }
  WideMatrix<W> x(n, h.cols);
  for (int64_t i = n - 1; i >= 0; --i) {
    for (int64_t c = 0; c < h.cols; ++c) {
      W sum = h(i, c);
      for (int64_t p = i + 1; p < n; ++p) sum -= Mul(g(i, p), x(p, c));
      x(i, c) = sum / g(i, i);
    }
  }
  return x;
}

// ---- Inputs ----

// A floating T with entries uniform in [-scale, scale] (real and imaginary parts alike), drawn
// from std::mt19937_64(seed) in row-major order, the real part first.
template <typename T>
Matrix RandomMatrix(int64_t rows, int64_t cols, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-scale, scale);
  std::vector<T> values(static_cast<size_t>(rows * cols));
  for (T& x : values) {
    if constexpr (kComplex<T>) {
      const double re = uniform(rng);
      x = T(static_cast<Real<T>>(re), static_cast<Real<T>>(uniform(rng)));
    } else {
      x = static_cast<T>(uniform(rng));
    }
  }
  return Matrix::FromValues<T>(rows, cols, values);
}

// scale * (M M^H + n I) with M = RandomMatrix<T>(n, n, seed), exactly Hermitian after rounding to
// T (so the lower triangle LAPACK reads is the matrix).
template <typename T>
Matrix HermitianPositiveDefinite(int64_t n, uint64_t seed, double scale = 1.0) {
  const auto m = Widen<T>(RandomMatrix<T>(n, n, seed));
  const auto a = Product(m, ConjugateTranspose(m));
  std::vector<T> values(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) {
      Wide<T> x = a(i, j) * static_cast<long double>(scale);
      if (i == j) x = Wide<T>(std::real(x) + n * static_cast<long double>(scale));
      values[i * n + j] = static_cast<T>(x);
      values[j * n + i] = static_cast<T>(Conj(x));
    }
  }
  return Matrix::FromValues<T>(n, n, values);
}

// ---- Checks ----

// ||A X - B|| <= slack * n * eps ||A|| ||X||, the backward error of a stable solve of A X = B.
template <typename T>
void ExpectSolves(const Matrix& a, const Matrix& b, const Matrix& x, long double slack) {
  ASSERT_EQ(x.rows(), a.cols());
  ASSERT_EQ(x.cols(), b.cols());
  ASSERT_EQ(x.dtype(), a.dtype());
  const auto wide_a = Widen<T>(a);
  const auto wide_x = Widen<T>(x);
  const long double residual = DistanceNorm(Product(wide_a, wide_x), Widen<T>(b));
  EXPECT_LE(residual, slack * a.rows() * Eps<T>() * Norm(wide_a) * Norm(wide_x));
}

// Q R = A with R upper triangular (exact zeros below the diagonal) and Q^H Q = I, both within
// slack * size * eps. REQUIRES: q is m x min(m, n) and r is min(m, n) x n for an m x n a.
template <typename T>
void ExpectQrOf(const Matrix& a, const Matrix& q, const Matrix& r, long double slack) {
  const int64_t m = a.rows();
  const int64_t n = a.cols();
  const int64_t k = std::min(m, n);
  const auto wide_q = Widen<T>(q);
  const auto wide_r = Widen<T>(r);
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < i; ++j) EXPECT_EQ(wide_r(i, j), Wide<T>(0)) << i << "," << j;
  }
  WideMatrix<Wide<T>> identity(k, k);
  for (int64_t i = 0; i < k; ++i) identity(i, i) = 1;
  EXPECT_LE(DistanceNorm(Product(ConjugateTranspose(wide_q), wide_q), identity),
            slack * m * Eps<T>());
  const auto wide_a = Widen<T>(a);
  EXPECT_LE(DistanceNorm(Product(wide_q, wide_r), wide_a) / Norm(wide_a),
            slack * std::max(m, n) * Eps<T>());
}

}  // namespace matrixd::testing

#endif  // MATRIXD_TESTS_CORE_DENSE_TEST_SUPPORT_H_
