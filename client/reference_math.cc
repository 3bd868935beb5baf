#include "client/reference_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace matrixd {
namespace {

using Complex = std::complex<long double>;

// std::complex's operator* guards against NaN/inf (a libgcc call per product); the inputs here
// are finite, and the plain formula keeps the O(n^3) loops fast.
inline Complex Mul(Complex x, Complex y) {
  return {x.real() * y.real() - x.imag() * y.imag(), x.real() * y.imag() + x.imag() * y.real()};
}

inline long double Norm2(Complex x) { return x.real() * x.real() + x.imag() * x.imag(); }

Complex Widen(std::complex<double> x) { return {x.real(), x.imag()}; }

long double FrobeniusSquared(const ComplexValues& a) {
  long double sum = 0;
  for (const auto& x : a) sum += Norm2(Widen(x));
  return sum;
}

double RelativeTo(long double error_squared, long double reference_squared) {
  if (reference_squared == 0) return static_cast<double>(std::sqrt(error_squared));
  return static_cast<double>(std::sqrt(error_squared / reference_squared));
}

__extension__ typedef unsigned __int128 Uint128;
__extension__ typedef __int128 Int128;

uint64_t MulMod(uint64_t x, uint64_t y, uint64_t p) {
  return static_cast<uint64_t>(static_cast<Uint128>(x) * y % p);
}

uint64_t PowMod(uint64_t base, uint64_t exponent, uint64_t p) {
  uint64_t result = 1 % p;
  while (exponent > 0) {
    if (exponent & 1) result = MulMod(result, base, p);
    base = MulMod(base, base, p);
    exponent >>= 1;
  }
  return result;
}

}  // namespace

double RelativeResidual(const ComplexValues& a, int64_t m, int64_t n, const ComplexValues& x,
                        int64_t k, const ComplexValues& b) {
  long double error = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      Complex sum = -Widen(b[i * k + j]);
      for (int64_t t = 0; t < n; ++t) sum += Mul(Widen(a[i * n + t]), Widen(x[t * k + j]));
      error += Norm2(sum);
    }
  }
  return RelativeTo(error, FrobeniusSquared(b));
}

ReferenceDeterminant DeterminantReference(const ComplexValues& a, int64_t n) {
  std::vector<Complex> w(a.size());
  for (size_t k = 0; k < a.size(); ++k) w[k] = Widen(a[k]);
  ReferenceDeterminant det{0.0L, Complex(1.0L, 0.0L)};
  for (int64_t col = 0; col < n; ++col) {
    int64_t pivot = col;
    for (int64_t i = col + 1; i < n; ++i) {
      if (Norm2(w[i * n + col]) > Norm2(w[pivot * n + col])) pivot = i;
    }
    const Complex p = w[pivot * n + col];
    if (p == Complex(0, 0)) return {-std::numeric_limits<long double>::infinity(), Complex(0, 0)};
    if (pivot != col) {
      for (int64_t j = 0; j < n; ++j) std::swap(w[pivot * n + j], w[col * n + j]);
      det.phase = -det.phase;
    }
    const long double magnitude = std::abs(p);
    det.log_abs += std::log(magnitude);
    det.phase = Mul(det.phase, p / magnitude);
    const Complex inverse = Complex(1.0L, 0.0L) / p;
    for (int64_t i = col + 1; i < n; ++i) {
      const Complex factor = Mul(w[i * n + col], inverse);
      if (factor == Complex(0, 0)) continue;
      for (int64_t j = col + 1; j < n; ++j) w[i * n + j] -= Mul(factor, w[col * n + j]);
    }
  }
  det.phase /= std::abs(det.phase);  // keep it on the unit circle despite rounding
  return det;
}

uint64_t DeterminantModP(const std::vector<int64_t>& a, int64_t n, uint64_t p) {
  std::vector<uint64_t> w(a.size());
  const auto sp = static_cast<Int128>(p);
  for (size_t k = 0; k < a.size(); ++k) {
    w[k] = static_cast<uint64_t>(((static_cast<Int128>(a[k]) % sp) + sp) % sp);
  }
  uint64_t det = 1 % p;
  for (int64_t col = 0; col < n; ++col) {
    int64_t pivot = col;
    while (pivot < n && w[pivot * n + col] == 0) ++pivot;
    if (pivot == n) return 0;
    if (pivot != col) {
      for (int64_t j = 0; j < n; ++j) std::swap(w[pivot * n + j], w[col * n + j]);
      det = (p - det) % p;
    }
    const uint64_t pivot_value = w[col * n + col];
    det = MulMod(det, pivot_value, p);
    const uint64_t inverse = PowMod(pivot_value, p - 2, p);  // Fermat: p is prime
    for (int64_t i = col + 1; i < n; ++i) {
      const uint64_t factor = MulMod(w[i * n + col], inverse, p);
      if (factor == 0) continue;
      for (int64_t j = col; j < n; ++j) {
        const uint64_t product = MulMod(factor, w[col * n + j], p);
        w[i * n + j] =
            w[i * n + j] >= product ? w[i * n + j] - product : w[i * n + j] + (p - product);
      }
    }
  }
  return det;
}

long double HilbertLogDeterminant(int64_t n) {
  // log c_m = sum_{i=1}^{m-1} log(i!) = sum_{i=1}^{m-1} lgamma(i + 1).
  auto log_c = [](int64_t m) {
    long double sum = 0;
    for (int64_t i = 1; i < m; ++i) sum += std::lgamma(static_cast<long double>(i + 1));
    return sum;
  };
  return 4 * log_c(n) - log_c(2 * n);
}

std::complex<long double> PermanentReference(const ComplexValues& a, int64_t n) {
  // Ryser: per(A) = (-1)^n sum_{S subset of columns} (-1)^|S| prod_i sum_{j in S} a_ij, visiting
  // the subsets in Gray-code order so each step adds or removes one column from the row sums.
  if (n == 0) return 1.0L;
  std::vector<Complex> row_sums(static_cast<size_t>(n), Complex(0, 0));
  Complex total(0, 0);
  const uint64_t subsets = uint64_t{1} << n;
  uint64_t gray = 0;
  for (uint64_t step = 1; step < subsets; ++step) {
    const int column = std::countr_zero(step);
    gray ^= uint64_t{1} << column;
    const long double sign_of_change = (gray >> column) & 1 ? 1.0L : -1.0L;
    Complex product(1.0L, 0.0L);
    for (int64_t i = 0; i < n; ++i) {
      row_sums[i] += sign_of_change * Widen(a[i * n + column]);
      product = Mul(product, row_sums[i]);
    }
    const bool odd_size = std::popcount(gray) % 2 == 1;
    total += odd_size ? -product : product;
  }
  return n % 2 == 1 ? -total : total;
}

std::complex<double> ProductEntry(const ComplexValues& a, int64_t a_rows, int64_t a_cols,
                                  bool transpose_a, const ComplexValues& b, int64_t b_rows,
                                  int64_t b_cols, bool transpose_b, int64_t i, int64_t j) {
  const int64_t inner = transpose_a ? a_rows : a_cols;
  (void)b_rows;
  Complex sum(0, 0);
  for (int64_t t = 0; t < inner; ++t) {
    const auto& x = transpose_a ? a[t * a_cols + i] : a[i * a_cols + t];
    const auto& y = transpose_b ? b[j * b_cols + t] : b[t * b_cols + j];
    sum += Mul(Widen(x), Widen(y));
  }
  return {static_cast<double>(sum.real()), static_cast<double>(sum.imag())};
}

double LuReconstructionError(const ComplexValues& a, int64_t m, int64_t n, const ComplexValues& lu,
                             const std::vector<int64_t>& permutation) {
  const int64_t k = std::min(m, n);
  long double error = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      // (L U)[i][j] = sum_{t <= min(i, j, k-1)} L[i][t] U[t][j], L's diagonal being ones.
      Complex sum(0, 0);
      const int64_t last = std::min({i, j, k - 1});
      for (int64_t t = 0; t <= last; ++t) {
        const Complex l = t == i ? Complex(1, 0) : Widen(lu[i * n + t]);
        sum += Mul(l, Widen(lu[t * n + j]));
      }
      error += Norm2(Widen(a[permutation[i] * n + j]) - sum);
    }
  }
  return RelativeTo(error, FrobeniusSquared(a));
}

double CholeskyReconstructionError(const ComplexValues& a, int64_t n, const ComplexValues& l) {
  long double error = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      Complex sum(0, 0);
      for (int64_t t = 0; t <= std::min(i, j); ++t) {
        sum += Mul(Widen(l[i * n + t]), std::conj(Widen(l[j * n + t])));
      }
      error += Norm2(Widen(a[i * n + j]) - sum);
    }
  }
  return RelativeTo(error, FrobeniusSquared(a));
}

double QrReconstructionError(const ComplexValues& a, int64_t m, int64_t n, const ComplexValues& q,
                             const ComplexValues& r) {
  const int64_t k = std::min(m, n);
  long double error = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      Complex sum(0, 0);
      for (int64_t t = 0; t < k; ++t) sum += Mul(Widen(q[i * k + t]), Widen(r[t * n + j]));
      error += Norm2(Widen(a[i * n + j]) - sum);
    }
  }
  return RelativeTo(error, FrobeniusSquared(a));
}

}  // namespace matrixd
