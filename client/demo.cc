#include "client/demo.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/commands.h"
#include "client/matrix_generators.h"
#include "client/matrix_values.h"
#include "client/reference_math.h"
#include "client/result_format.h"

namespace matrixd {
namespace {

// 2^61 - 1, a Mersenne prime below the 2^62 limit of the modular determinant.
constexpr uint64_t kDemoPrime = (uint64_t{1} << 61) - 1;

struct Step {
  std::string name;
  std::function<absl::Status(std::ostream&)> run;
};

// Prints one check and turns a failed one into an error naming it.
absl::Status Check(std::ostream& out, bool ok, absl::string_view what) {
  out << "  check: " << what << (ok ? "  [ok]" : "  [WRONG]") << "\n";
  if (!ok) return absl::InternalError(absl::StrCat("check failed: ", what));
  return absl::OkStatus();
}

#define DEMO_RETURN_IF_ERROR(expr)                      \
  do {                                                  \
    if (absl::Status status_ = (expr); !status_.ok()) { \
      return status_;                                   \
    }                                                   \
  } while (false)

absl::StatusOr<ComplexValues> Values(const v1::Matrix& matrix) {
  return ToComplex128Values(matrix);
}

absl::Status HilbertDeterminant(Client& client, std::ostream& out, v1::DeterminantMethod method) {
  constexpr int64_t kN = 12;
  absl::StatusOr<v1::Matrix> hilbert = HilbertMatrix(kN, v1::DTYPE_FLOAT64);
  if (!hilbert.ok()) return hilbert.status();
  v1::DeterminantRequest request;
  *request.mutable_matrix() = *std::move(hilbert);
  request.set_method(method);
  absl::StatusOr<v1::DeterminantResponse> response = RunDeterminant(client, request, out);
  if (!response.ok()) return response.status();
  // cond(H_12) ~ 1.7e16: in double the determinant keeps only its leading digit or so, which is
  // still far from the rounding of a wrong algorithm (or of an overflow).
  const double exact_log = static_cast<double>(HilbertLogDeterminant(kN));
  const double log_error = std::fabs(response->log_abs() - exact_log);
  out << absl::StrFormat("  exact: det(H_12) = %.10g (log %.10f)\n", std::exp(exact_log),
                         exact_log);
  DEMO_RETURN_IF_ERROR(Check(out, response->sign() == 1 && !response->singular(), "sign is +1"));
  DEMO_RETURN_IF_ERROR(
      Check(out, log_error < 0.2, absl::StrFormat("|log|det| - exact| = %.3g < 0.2", log_error)));
  return Check(out, response->method_used() == method, "the requested method was used");
}

absl::Status RandomDeterminant(Client& client, std::ostream& out, uint64_t seed) {
  constexpr int64_t kN = 300;
  v1::DeterminantRequest request;
  *request.mutable_matrix() = RandomMatrix(kN, kN, v1::DTYPE_FLOAT64, seed);
  absl::StatusOr<v1::DeterminantResponse> response = RunDeterminant(client, request, out);
  if (!response.ok()) return response.status();
  absl::StatusOr<ComplexValues> a = Values(request.matrix());
  if (!a.ok()) return a.status();
  const ReferenceDeterminant reference = DeterminantReference(*a, kN);
  const double reference_log = static_cast<double>(reference.log_abs);
  const double reference_sign = reference.phase.real() > 0 ? 1 : -1;
  out << absl::StrFormat("  reference (long double LU): sign %+.0f, log|det| = %.15g\n",
                         reference_sign, reference_log);
  DEMO_RETURN_IF_ERROR(Check(out, response->sign() == reference_sign, "sign matches"));
  const double error = std::fabs(response->log_abs() - reference_log);
  return Check(out, error < 1e-8 * std::max(1.0, std::fabs(reference_log)),
               absl::StrFormat("|log|det| - reference| = %.3g", error));
}

absl::Status ModularDeterminant(Client& client, std::ostream& out, uint64_t seed) {
  constexpr int64_t kN = 100;
  v1::DeterminantRequest request;
  *request.mutable_matrix() = RandomMatrix(kN, kN, v1::DTYPE_INT64, seed);
  request.set_modulus(kDemoPrime);
  absl::StatusOr<v1::DeterminantResponse> response = RunDeterminant(client, request, out);
  if (!response.ok()) return response.status();
  absl::StatusOr<std::vector<int64_t>> a = ReadMatrix<int64_t>(request.matrix());
  if (!a.ok()) return a.status();
  const uint64_t reference = DeterminantModP(*a, kN, kDemoPrime);
  return Check(
      out, response->residue() == reference,
      absl::StrCat("residue equals the client's Gaussian elimination mod p (", reference, ")"));
}

absl::Status LuSolve(Client& client, std::ostream& out, uint64_t seed) {
  constexpr int64_t kN = 500;
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  *request.mutable_matrix() = RandomMatrix(kN, kN, v1::DTYPE_FLOAT64, seed);
  *request.mutable_rhs() = RandomMatrix(kN, 1, v1::DTYPE_FLOAT64, seed + 1);
  absl::StatusOr<FactorizeReport> report = RunFactorize(client, request, out);
  if (!report.ok()) return report.status();
  DEMO_RETURN_IF_ERROR(Check(out, !report->response.singular(), "not singular"));
  DEMO_RETURN_IF_ERROR(Check(out, report->factor_error && *report->factor_error < 1e-12,
                             "||PA - LU||/||A|| < 1e-12"));
  return Check(out, report->solution_residual && *report->solution_residual < 1e-10,
               "||AX - B||/||B|| < 1e-10");
}

absl::Status Cholesky(Client& client, std::ostream& out, uint64_t seed) {
  // S = B B^T + n I is symmetric positive definite.
  constexpr int64_t kN = 200;
  absl::StatusOr<ComplexValues> b = Values(RandomMatrix(kN, kN, v1::DTYPE_FLOAT64, seed));
  if (!b.ok()) return b.status();
  std::vector<double> s(kN * kN);
  for (int64_t i = 0; i < kN; ++i) {
    for (int64_t j = 0; j < kN; ++j) {
      double sum = i == j ? kN : 0.0;
      for (int64_t t = 0; t < kN; ++t) sum += (*b)[i * kN + t].real() * (*b)[j * kN + t].real();
      s[i * kN + j] = sum;
    }
  }
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_CHOLESKY);
  *request.mutable_matrix() = MakeMatrix<double>(kN, kN, s);
  absl::StatusOr<FactorizeReport> report = RunFactorize(client, request, out);
  if (!report.ok()) return report.status();
  return Check(out, report->factor_error && *report->factor_error < 1e-12,
               "||A - L L^T||/||A|| < 1e-12");
}

absl::Status Qr(Client& client, std::ostream& out, uint64_t seed) {
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_QR);
  *request.mutable_matrix() = RandomMatrix(300, 200, v1::DTYPE_FLOAT64, seed);
  absl::StatusOr<FactorizeReport> report = RunFactorize(client, request, out);
  if (!report.ok()) return report.status();
  return Check(out, report->factor_error && *report->factor_error < 1e-12,
               "||A - QR||/||A|| < 1e-12");
}

// Compares a spread of entries of the server's product with the client's.
absl::Status CheckProductSample(std::ostream& out, const v1::MultiplyRequest& request,
                                const v1::MultiplyResponse& response) {
  const int64_t m = request.transpose_a() ? request.a().cols() : request.a().rows();
  const int64_t n = request.transpose_b() ? request.b().rows() : request.b().cols();
  DEMO_RETURN_IF_ERROR(Check(out, response.c().rows() == m && response.c().cols() == n,
                             absl::StrCat("product is ", m, " x ", n)));
  absl::StatusOr<ComplexValues> a = Values(request.a());
  if (!a.ok()) return a.status();
  absl::StatusOr<ComplexValues> b = Values(request.b());
  if (!b.ok()) return b.status();
  absl::StatusOr<ComplexValues> c = Values(response.c());
  if (!c.ok()) return c.status();
  double worst = 0;
  constexpr int kSamples = 16;
  for (int s = 0; s < kSamples; ++s) {
    for (int t = 0; t < kSamples; ++t) {
      const int64_t i = s * (m - 1) / (kSamples - 1);
      const int64_t j = t * (n - 1) / (kSamples - 1);
      const std::complex<double> reference =
          ProductEntry(*a, request.a().rows(), request.a().cols(), request.transpose_a(), *b,
                       request.b().rows(), request.b().cols(), request.transpose_b(), i, j);
      worst = std::max(worst, std::abs((*c)[i * n + j] - reference));
    }
  }
  return Check(out, worst < 1e-10,
               absl::StrFormat("%d sampled entries match the client's, max error %.3g",
                               kSamples * kSamples, worst));
}

absl::Status DenseProduct(Client& client, std::ostream& out, uint64_t seed) {
  constexpr int64_t kN = 512;
  v1::MultiplyRequest request;
  *request.mutable_a() = RandomMatrix(kN, kN, v1::DTYPE_FLOAT64, seed);
  *request.mutable_b() = RandomMatrix(kN, kN, v1::DTYPE_FLOAT64, seed + 1);
  absl::StatusOr<v1::MultiplyResponse> response = RunMultiply(client, request, out);
  if (!response.ok()) return response.status();
  return CheckProductSample(out, request, *response);
}

// Which blocks of a row-major matrix hold a non-zero entry.
std::vector<bool> NonZeroBlocks(const ComplexValues& values, int64_t rows, int64_t cols,
                                int64_t block) {
  const int64_t block_cols = (cols + block - 1) / block;
  std::vector<bool> nonzero(((rows + block - 1) / block) * block_cols);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      if (values[i * cols + j] != 0.0) nonzero[(i / block) * block_cols + j / block] = true;
    }
  }
  return nonzero;
}

absl::Status BlockSparseProduct(Client& client, std::ostream& out, uint64_t seed) {
  constexpr int64_t kN = 1024;
  constexpr int64_t kBlock = 128;
  constexpr double kDensity = 0.3;
  v1::MultiplyRequest request;
  *request.mutable_a() = RandomBlockSparseMatrix(kN, kN, v1::DTYPE_FLOAT64, seed, kBlock, kDensity);
  *request.mutable_b() = RandomBlockSparseMatrix(kN, kN, v1::DTYPE_FLOAT64, seed + 1, kBlock, kDensity);
  request.set_block_size(kBlock);
  absl::StatusOr<v1::MultiplyResponse> response = RunMultiply(client, request, out);
  if (!response.ok()) return response.status();

  absl::StatusOr<ComplexValues> a = Values(request.a());
  if (!a.ok()) return a.status();
  absl::StatusOr<ComplexValues> b = Values(request.b());
  if (!b.ok()) return b.status();
  constexpr int64_t kGrid = kN / kBlock;
  const std::vector<bool> a_blocks = NonZeroBlocks(*a, kN, kN, kBlock);
  const std::vector<bool> b_blocks = NonZeroBlocks(*b, kN, kN, kBlock);
  int64_t expected = 0;
  for (int64_t i = 0; i < kGrid; ++i) {
    for (int64_t k = 0; k < kGrid; ++k) {
      for (int64_t j = 0; j < kGrid; ++j)
        expected += a_blocks[i * kGrid + k] && b_blocks[k * kGrid + j];
    }
  }
  DEMO_RETURN_IF_ERROR(
      Check(out, response->block_products_total() == kGrid * kGrid * kGrid,
            absl::StrCat("dense blocked product: ", kGrid * kGrid * kGrid, " block products")));
  DEMO_RETURN_IF_ERROR(
      Check(out, response->block_products() == expected,
            absl::StrCat("pairs of non-zero blocks: ", expected, " block products")));
  return CheckProductSample(out, request, *response);
}

absl::Status RandomPermanent(Client& client, std::ostream& out, uint64_t seed) {
  constexpr int64_t kN = 20;
  v1::PermanentRequest request;
  *request.mutable_matrix() = RandomMatrix(kN, kN, v1::DTYPE_FLOAT64, seed);
  absl::StatusOr<v1::PermanentResponse> response = RunPermanent(client, request, out);
  if (!response.ok()) return response.status();
  absl::StatusOr<ComplexValues> a = Values(request.matrix());
  if (!a.ok()) return a.status();
  const double reference = static_cast<double>(PermanentReference(*a, kN).real());
  const double error = std::fabs(response->value() - reference);
  out << absl::StrFormat("  reference (long double Ryser): %.15g\n", reference);
  // Ryser and Glynn in double land within ~1e-9 relative of the long double value on random
  // matrices; the absolute floor covers a permanent that cancels to nearly zero.
  return Check(out, error <= 1e-7 * std::fabs(reference) + 1e-5,
               absl::StrFormat("|per - reference| = %.3g <= 1e-7 |reference| + 1e-5", error));
}

absl::Status OnesPermanent(Client& client, std::ostream& out) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = OnesMatrix(12, 12, v1::DTYPE_INT64);
  absl::StatusOr<v1::PermanentResponse> response = RunPermanent(client, request, out);
  if (!response.ok()) return response.status();
  DEMO_RETURN_IF_ERROR(Check(out, response->exact() == "479001600", "exact = 12! = 479001600"));
  return Check(out, response->value() == 479001600.0, "value = 479001600");
}

}  // namespace

absl::Status RunDemo(Client& client, std::ostream& out, uint64_t seed) {
  const std::vector<Step> steps = {
      {"determinant of the Hilbert matrix H_12 by LU",
       [&](std::ostream& o) { return HilbertDeterminant(client, o, v1::DETERMINANT_METHOD_LU); }},
      {"determinant of H_12 by condensation",
       [&](std::ostream& o) { return HilbertDeterminant(client, o, v1::DETERMINANT_METHOD_CONDENSATION); }},
      {"log|det| of a random 300 x 300",
       [&](std::ostream& o) { return RandomDeterminant(client, o, seed); }},
      {"determinant mod 2^61-1 of a random 100 x 100 int64",
       [&](std::ostream& o) { return ModularDeterminant(client, o, seed + 10); }},
      {"LU factorization and solve, random 500 x 500",
       [&](std::ostream& o) { return LuSolve(client, o, seed + 20); }},
      {"Cholesky factorization, 200 x 200 SPD",
       [&](std::ostream& o) { return Cholesky(client, o, seed + 30); }},
      {"QR factorization, 300 x 200", [&](std::ostream& o) { return Qr(client, o, seed + 40); }},
      {"dense product, 512 x 512",
       [&](std::ostream& o) { return DenseProduct(client, o, seed + 50); }},
      {"block-sparse product, 1024 x 1024 in 128 x 128 blocks, 30% non-zero",
       [&](std::ostream& o) { return BlockSparseProduct(client, o, seed + 60); }},
      {"permanent of a random 20 x 20",
       [&](std::ostream& o) { return RandomPermanent(client, o, seed + 70); }},
      {"permanent of the 12 x 12 all-ones int64 matrix",
       [&](std::ostream& o) { return OnesPermanent(client, o); }},
  };
  std::vector<std::string> failed;
  absl::Status first_failure;
  const absl::Time demo_start = absl::Now();
  for (size_t k = 0; k < steps.size(); ++k) {
    out << "\n== [" << k + 1 << "/" << steps.size() << "] " << steps[k].name << "\n";
    const absl::Time start = absl::Now();
    absl::Status status = steps[k].run(out);
    const std::string took = FormatSeconds(absl::ToDoubleSeconds(absl::Now() - start));
    if (status.ok()) {
      out << "  -> PASS (" << took << " with client-side checks)\n";
    } else {
      out << "  -> FAIL after " << took << ": " << absl::StatusCodeToString(status.code()) << ": "
          << status.message() << "\n";
      failed.push_back(steps[k].name);
      if (first_failure.ok()) first_failure = status;
    }
  }
  out << "\ndemo: " << steps.size() - failed.size() << " of " << steps.size() << " steps passed in "
      << FormatSeconds(absl::ToDoubleSeconds(absl::Now() - demo_start)) << "\n";
  if (failed.empty()) return absl::OkStatus();
  return absl::Status(
      first_failure.code(),
      absl::StrCat(failed.size(), " demo step(s) failed: ", absl::StrJoin(failed, "; "),
                   " (first: ", first_failure.message(), ")"));
}

}  // namespace matrixd
