#include "tests/soak/checked_requests.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "client/matrix_generators.h"
#include "client/matrix_values.h"
#include "client/reference_math.h"

namespace matrixd::soak {
namespace {

int64_t Uniform(std::mt19937_64& rng, int64_t low, int64_t high) {
  return std::uniform_int_distribution<int64_t>(low, high)(rng);
}
bool Coin(std::mt19937_64& rng) { return Uniform(rng, 0, 1) == 1; }

// A random n x n FLOAT64 matrix with a known small condition number: R + 2 sqrt(n) I has
// singular values in [0.85 sqrt(n), 3.2 sqrt(n)] (||R||_2 ~ 1.15 sqrt(n) for entries in [-1, 1)),
// so the server's answer must agree with the reference to near working precision. Permuting the
// rows and negating one keeps the condition number and makes pivoting and the sign matter.
v1::Matrix WellConditionedMatrix(int64_t n, std::mt19937_64& rng) {
  std::vector<double> r = *ReadMatrix<double>(RandomMatrix(n, n, v1::DTYPE_FLOAT64, rng()));
  for (int64_t i = 0; i < n; ++i) r[i * n + i] += 2.0 * std::sqrt(static_cast<double>(n));
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<double> a(r.size());
  for (int64_t i = 0; i < n; ++i) {
    std::copy_n(r.begin() + order[i] * n, n, a.begin() + i * n);
  }
  if (Coin(rng)) {
    const int64_t row = Uniform(rng, 0, n - 1);
    for (int64_t j = 0; j < n; ++j) a[row * n + j] = -a[row * n + j];
  }
  return MakeMatrix<double>(n, n, a);
}

ComplexValues Values(const v1::Matrix& matrix) { return *ToComplex128Values(matrix); }

absl::Status Wrong(absl::string_view what) {
  return absl::InternalError(absl::StrCat("wrong result: ", what));
}

// The decimal string `exact` mod p (p < 2^63), negative values into [0, p).
absl::StatusOr<uint64_t> DecimalModP(const std::string& exact, uint64_t p) {
  size_t begin = 0;
  const bool negative = !exact.empty() && exact[0] == '-';
  if (negative) begin = 1;
  if (begin >= exact.size()) return Wrong(absl::StrCat("exact value \"", exact, "\""));
  absl::uint128 value = 0;
  for (size_t i = begin; i < exact.size(); ++i) {
    if (exact[i] < '0' || exact[i] > '9') {
      return Wrong(absl::StrCat("exact value \"", exact, "\""));
    }
    value = (value * 10 + static_cast<uint64_t>(exact[i] - '0')) % p;
  }
  const uint64_t residue = absl::Uint128Low64(value);
  return negative && residue != 0 ? p - residue : residue;
}

// per(A) of a small integer matrix by Ryser's formula in 128-bit integers: with n <= 12 and
// |a_ij| <= 9 every row sum is at most 108 and every term below 108^12 < 2^82, the sum of 2^12
// terms below 2^94.
absl::int128 ExactPermanent(const std::vector<int64_t>& a, int64_t n) {
  absl::int128 total = 0;
  for (uint64_t subset = 1; subset < (uint64_t{1} << n); ++subset) {
    absl::int128 product = 1;
    for (int64_t i = 0; i < n && product != 0; ++i) {
      int64_t row_sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        if ((subset >> j) & 1) row_sum += a[i * n + j];
      }
      product *= row_sum;
    }
    const int size = std::popcount(subset);
    total += ((n - size) % 2 == 0) ? product : -product;
  }
  return total;
}

// Primes below 2^63 for checking an exact determinant: a wrong value passes all three with
// probability below 2^-90.
constexpr uint64_t kCheckPrimes[] = {1000000007, 998244353, 2305843009213693951};

absl::Status CheckDeterminant(const v1::DeterminantRequest& request,
                              const v1::DeterminantResponse& response) {
  const v1::Matrix& a = request.matrix();
  const int64_t n = a.rows();
  if (a.dtype() == v1::DTYPE_INT64) {
    const std::vector<int64_t> values = *ReadMatrix<int64_t>(a);
    for (uint64_t p : kCheckPrimes) {
      absl::StatusOr<uint64_t> got = DecimalModP(response.exact(), p);
      if (!got.ok()) return got.status();
      const uint64_t want = DeterminantModP(values, n, p);
      if (*got != want) {
        return Wrong(absl::StrCat("det of an INT64 ", n, "x", n, " matrix is ", response.exact(),
                                  ", which is ", *got, " mod ", p, ", want ", want));
      }
    }
    return absl::OkStatus();
  }
  const ReferenceDeterminant want = DeterminantReference(Values(a), n);
  const double want_sign = want.phase.real() < 0 ? -1.0 : 1.0;
  const double error = std::abs(response.log_abs() - static_cast<double>(want.log_abs));
  if (response.sign() != want_sign || !(error <= 1e-9)) {
    return Wrong(absl::StrCat("det of a FLOAT64 ", n, "x", n, " matrix: sign ", response.sign(),
                              " log|det| ", response.log_abs(), ", want sign ", want_sign,
                              " log|det| ", static_cast<double>(want.log_abs)));
  }
  return absl::OkStatus();
}

absl::Status CheckFactorize(const v1::FactorizeRequest& request,
                            const v1::FactorizeResponse& response) {
  const v1::Matrix& a = request.matrix();
  const int64_t n = a.rows();
  const ComplexValues a_values = Values(a);
  absl::StatusOr<ComplexValues> lu = ToComplex128Values(response.lu());
  const std::vector<int64_t> permutation(response.permutation().begin(),
                                         response.permutation().end());
  if (!lu.ok() || response.lu().rows() != n || response.lu().cols() != n ||
      static_cast<int64_t>(permutation.size()) != n) {
    return Wrong(absl::StrCat("LU of a ", n, "x", n, " matrix has factors ", response.lu().rows(),
                              "x", response.lu().cols(), " and ", permutation.size(),
                              " permutation entries"));
  }
  for (int64_t p : permutation) {
    if (p < 0 || p >= n) return Wrong(absl::StrCat("LU permutation entry ", p, " of ", n));
  }
  const double reconstruction = LuReconstructionError(a_values, n, n, *lu, permutation);
  if (!(reconstruction <= 1e-11)) {
    return Wrong(absl::StrCat("LU of a ", n, "x", n, " matrix reproduces it to ", reconstruction,
                              " (relative), want <= 1e-11"));
  }
  return CheckSolution(a, request.rhs(), response.solution());
}

absl::Status CheckMultiply(const v1::MultiplyRequest& request,
                           const v1::MultiplyResponse& response) {
  const v1::Matrix& a = request.a();
  const v1::Matrix& b = request.b();
  const int64_t m = request.transpose_a() ? a.cols() : a.rows();
  const int64_t k = request.transpose_a() ? a.rows() : a.cols();
  const int64_t n = request.transpose_b() ? b.rows() : b.cols();
  const v1::Matrix& c = response.c();
  if (c.rows() != m || c.cols() != n || c.dtype() != a.dtype()) {
    return Wrong(absl::StrCat("product of ", m, "x", k, " and ", k, "x", n, " is ", c.rows(), "x",
                              c.cols(), " of ", v1::DType_Name(c.dtype())));
  }
  if (a.dtype() == v1::DTYPE_UINT32) {
    const std::vector<uint32_t> av = *ReadMatrix<uint32_t>(a);
    const std::vector<uint32_t> bv = *ReadMatrix<uint32_t>(b);
    absl::StatusOr<std::vector<uint32_t>> cv = ReadMatrix<uint32_t>(c);
    if (!cv.ok()) return Wrong(cv.status().message());
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        uint32_t want = 0;  // wraps around mod 2^32, as the server's UINT32 product does
        for (int64_t l = 0; l < k; ++l) want += av[i * k + l] * bv[l * n + j];
        if ((*cv)[i * n + j] != want) {
          return Wrong(absl::StrCat("UINT32 product entry (", i, ", ", j, ") of ", m, "x", k,
                                    " times ", k, "x", n, " is ", (*cv)[i * n + j], ", want ",
                                    want));
        }
      }
    }
    return absl::OkStatus();
  }
  const ComplexValues av = Values(a);
  const ComplexValues bv = Values(b);
  absl::StatusOr<ComplexValues> cv = ToComplex128Values(c);
  if (!cv.ok()) return Wrong(cv.status().message());
  // Entries of A and B lie in [-1, 1): |c_ij| < k, and a sum of k products is off by at most
  // about k u sum |a_il b_lj| < k^2 u.
  const double tolerance = static_cast<double>(k * k) * 1e-15;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const std::complex<double> want =
          ProductEntry(av, a.rows(), a.cols(), request.transpose_a(), bv, b.rows(), b.cols(),
                       request.transpose_b(), i, j);
      if (!(std::abs((*cv)[i * n + j] - want) <= tolerance)) {
        return Wrong(absl::StrCat("FLOAT64 product entry (", i, ", ", j, ") of ", m, "x", k,
                                  " times ", k, "x", n, " is ", (*cv)[i * n + j].real(), ", want ",
                                  want.real()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPermanent(const v1::PermanentRequest& request,
                            const v1::PermanentResponse& response) {
  const v1::Matrix& a = request.matrix();
  const int64_t n = a.rows();
  if (a.dtype() == v1::DTYPE_INT64) {
    std::ostringstream decimal;
    decimal << ExactPermanent(*ReadMatrix<int64_t>(a), n);
    const std::string want = decimal.str();
    if (response.exact() != want) {
      return Wrong(absl::StrCat("permanent of an INT64 ", n, "x", n, " matrix is \"",
                                response.exact(), "\", want ", want));
    }
    return absl::OkStatus();
  }
  ComplexValues values = Values(a);
  const long double want = PermanentReference(values, n).real();
  for (std::complex<double>& value : values) value = std::abs(value);
  // The walk's rounding errors scale with the terms, whose sum is per(|A|), not with per(A),
  // which may cancel to near zero.
  const double scale = static_cast<double>(PermanentReference(values, n).real());
  const double error = std::abs(static_cast<double>(response.value() - want));
  if (!(error <= 1e-12 * scale + 1e-300)) {
    return Wrong(absl::StrCat("permanent of a FLOAT64 ", n, "x", n, " matrix is ", response.value(),
                              ", want ", static_cast<double>(want), " (per(|A|) = ", scale, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view SoakOpName(SoakOp op) {
  switch (op) {
    case SoakOp::kDeterminant:
      return "determinant";
    case SoakOp::kFactorize:
      return "factorize";
    case SoakOp::kMultiply:
      return "multiply";
    case SoakOp::kPermanent:
      return "permanent";
  }
  return "?";
}

v1::JobRequest MakeCheckedRequest(SoakOp op, const SoakSizes& sizes, std::mt19937_64& rng) {
  v1::JobRequest job;
  const int64_t n = Uniform(rng, 1, sizes.max_n);
  switch (op) {
    case SoakOp::kDeterminant:
      *job.mutable_determinant()->mutable_matrix() =
          Coin(rng) ? WellConditionedMatrix(n, rng) : RandomMatrix(n, n, v1::DTYPE_INT64, rng());
      break;
    case SoakOp::kFactorize: {
      v1::FactorizeRequest& request = *job.mutable_factorize();
      request.set_kind(v1::FACTORIZATION_KIND_LU);
      *request.mutable_matrix() = WellConditionedMatrix(n, rng);
      *request.mutable_rhs() = RandomMatrix(n, Uniform(rng, 1, 4), v1::DTYPE_FLOAT64, rng());
      break;
    }
    case SoakOp::kMultiply: {
      v1::MultiplyRequest& request = *job.mutable_multiply();
      const int64_t k = Uniform(rng, 1, sizes.max_n);
      const int64_t cols = Uniform(rng, 1, sizes.max_n);
      if (Coin(rng)) {
        *request.mutable_a() = RandomMatrix(n, k, v1::DTYPE_UINT32, rng());
        *request.mutable_b() = RandomMatrix(k, cols, v1::DTYPE_UINT32, rng());
        break;
      }
      request.set_transpose_a(Coin(rng));
      request.set_transpose_b(Coin(rng));
      *request.mutable_a() = request.transpose_a() ? RandomMatrix(k, n, v1::DTYPE_FLOAT64, rng())
                                                   : RandomMatrix(n, k, v1::DTYPE_FLOAT64, rng());
      *request.mutable_b() = request.transpose_b()
                                 ? RandomMatrix(cols, k, v1::DTYPE_FLOAT64, rng())
                                 : RandomMatrix(k, cols, v1::DTYPE_FLOAT64, rng());
      break;
    }
    case SoakOp::kPermanent: {
      const int64_t pn = Uniform(rng, 1, sizes.max_permanent_n);
      *job.mutable_permanent()->mutable_matrix() =
          RandomMatrix(pn, pn, Coin(rng) ? v1::DTYPE_INT64 : v1::DTYPE_FLOAT64, rng());
      break;
    }
  }
  return job;
}

absl::Status CheckSolution(const v1::Matrix& a, const v1::Matrix& b, const v1::Matrix& x) {
  const int64_t n = a.rows();
  absl::StatusOr<ComplexValues> x_values = ToComplex128Values(x);
  if (!x_values.ok() || x.rows() != n || x.cols() != b.cols()) {
    return Wrong(absl::StrCat("solution of a ", n, "x", n, " system with ", b.cols(),
                              " right-hand sides is ", x.rows(), "x", x.cols()));
  }
  const double residual = RelativeResidual(Values(a), n, n, *x_values, b.cols(), Values(b));
  if (!(residual <= 1e-11)) {
    return Wrong(absl::StrCat("solution of a ", n, "x", n, " system has relative residual ",
                              residual, ", want <= 1e-11"));
  }
  return absl::OkStatus();
}

absl::Status CheckJobResult(const v1::JobRequest& request, const v1::JobUpdate& result) {
  switch (request.request_case()) {
    case v1::JobRequest::kDeterminant:
      if (!result.has_determinant()) break;
      return CheckDeterminant(request.determinant(), result.determinant());
    case v1::JobRequest::kFactorize:
      if (!result.has_factorize()) break;
      return CheckFactorize(request.factorize(), result.factorize());
    case v1::JobRequest::kMultiply:
      if (!result.has_multiply()) break;
      return CheckMultiply(request.multiply(), result.multiply());
    case v1::JobRequest::kPermanent:
      if (!result.has_permanent()) break;
      return CheckPermanent(request.permanent(), result.permanent());
    case v1::JobRequest::kSolve:
    case v1::JobRequest::REQUEST_NOT_SET:
      break;
  }
  return Wrong(absl::StrCat("a succeeded job's result is ", result.result_case(),
                            " for a request of kind ", request.request_case()));
}

}  // namespace matrixd::soak
