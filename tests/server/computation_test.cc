// Every RPC end to end, through matrixd::Client, on real matrices with independently known
// answers; and the stats every response carries.
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/crc32c.h"
#include "core/freivalds.h"
#include "gmock/gmock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::DoubleEq;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointwise;

using Complex = std::complex<double>;

void ExpectCpuStats(const v1::ComputeStats& stats) {
  EXPECT_EQ(stats.backend(), "cpu");
  EXPECT_FALSE(stats.device().empty());
  EXPECT_GE(stats.seconds(), 0.0);
  EXPECT_GT(stats.flops(), 0.0);
}

// det mod p by Gaussian elimination over Z/p with 128-bit products: the test's own reference.
uint64_t ReferenceDetModP(std::vector<int64_t> a, int n, uint64_t p) {
  std::vector<uint64_t> m(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const int64_t r = a[i] % static_cast<int64_t>(p);
    m[i] = static_cast<uint64_t>(r < 0 ? r + static_cast<int64_t>(p) : r);
  }
  __extension__ using Uint128 = unsigned __int128;
  auto mul = [p](uint64_t x, uint64_t y) {
    return static_cast<uint64_t>(static_cast<Uint128>(x) * y % p);
  };
  auto inv = [&](uint64_t x) {  // Fermat: x^(p-2)
    uint64_t result = 1, base = x, e = p - 2;
    for (; e > 0; e >>= 1, base = mul(base, base)) {
      if (e & 1) result = mul(result, base);
    }
    return result;
  };
  uint64_t det = 1;
  for (int k = 0; k < n; ++k) {
    int pivot = k;
    while (pivot < n && m[pivot * n + k] == 0) ++pivot;
    if (pivot == n) return 0;
    if (pivot != k) {
      for (int j = 0; j < n; ++j) std::swap(m[k * n + j], m[pivot * n + j]);
      det = det == 0 ? 0 : p - det;
    }
    det = mul(det, m[k * n + k]);
    const uint64_t pivot_inverse = inv(m[k * n + k]);
    for (int i = k + 1; i < n; ++i) {
      const uint64_t factor = mul(m[i * n + k], pivot_inverse);
      for (int j = k; j < n; ++j) {
        m[i * n + j] = (m[i * n + j] + p - mul(factor, m[k * n + j])) % p;
      }
    }
  }
  return det;
}

class ComputationTest : public ServerTest {};

TEST_F(ComputationTest, DeterminantOfThreeByThreeIsMinusThree) {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(3, 3, {1, 2, 3, 4, 5, 6, 7, 8, 10});
  absl::StatusOr<v1::DeterminantResponse> response = client().Determinant(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_NEAR(response->value(), -3.0, 1e-13);
  EXPECT_EQ(response->value_imag(), 0.0);
  EXPECT_EQ(response->sign(), -1.0);
  EXPECT_EQ(response->phase_re(), -1.0);
  EXPECT_EQ(response->phase_im(), 0.0);
  EXPECT_NEAR(response->log_abs(), std::log(3.0), 1e-13);
  EXPECT_NEAR(response->mantissa(), -3.0, 1e-13);
  EXPECT_EQ(response->exponent10(), 0);
  EXPECT_FALSE(response->singular());
  EXPECT_TRUE(response->exact().empty());
  EXPECT_NE(response->method_used(), v1::DETERMINANT_METHOD_AUTO);
  ExpectCpuStats(response->stats());
  // A well-conditioned 3 x 3: rcond well above zero, most digits meaningful.
  ASSERT_TRUE(response->has_accuracy());
  EXPECT_GT(response->accuracy().rcond(), 1e-3);
  EXPECT_LT(response->accuracy().relative_error_bound(), 1e-12);
  EXPECT_GT(response->accuracy().meaningful_digits(), 12.0);
  EXPECT_FALSE(response->accuracy().ill_conditioned());
}

TEST_F(ComputationTest, DeterminantByCondensationMatchesLu) {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(3, 3, {1, 2, 3, 4, 5, 6, 7, 8, 10});
  request.set_method(v1::DETERMINANT_METHOD_CONDENSATION);
  absl::StatusOr<v1::DeterminantResponse> response = client().Determinant(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_NEAR(response->value(), -3.0, 1e-12);
  EXPECT_EQ(response->method_used(), v1::DETERMINANT_METHOD_CONDENSATION);
}

TEST_F(ComputationTest, DeterminantBeyondDoubleRangeKeepsMantissaAndExponent) {
  // diag(-1e10, ..., -1e10) of order 201: det = -1e2010, far beyond double.
  constexpr int kN = 201;
  std::vector<double> values(kN * kN, 0.0);
  for (int i = 0; i < kN; ++i) values[i * kN + i] = -1e10;
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(kN, kN, values);
  absl::StatusOr<v1::DeterminantResponse> response = client().Determinant(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->sign(), -1.0);
  // The product of 201 rounded binary mantissas may land just below 1e2010 (9.99...e2009).
  ASSERT_TRUE(response->exponent10() == 2009 || response->exponent10() == 2010)
      << response->exponent10();
  EXPECT_NEAR(response->mantissa() * std::pow(10.0, response->exponent10() - 2010), -1.0, 1e-12);
  EXPECT_NEAR(response->log_abs(), 2010 * std::log(10.0), 1e-9);
  EXPECT_TRUE(std::isinf(response->value()) && response->value() < 0);
}

TEST_F(ComputationTest, SingularDeterminantIsZeroWithMinusInfiniteLog) {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(2, 2, {1, 2, 2, 4});
  absl::StatusOr<v1::DeterminantResponse> response = client().Determinant(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_TRUE(response->singular());
  EXPECT_EQ(response->sign(), 0.0);
  EXPECT_EQ(response->value(), 0.0);
  EXPECT_TRUE(std::isinf(response->log_abs()) && response->log_abs() < 0);
}

TEST_F(ComputationTest, ComplexDeterminantHasPhase) {
  // det diag(1+i, 2i) = (1+i)(2i) = -2 + 2i.
  v1::DeterminantRequest request;
  *request.mutable_matrix() =
      MakeMatrix<Complex>(2, 2, std::vector<Complex>{{1, 1}, {0, 0}, {0, 0}, {0, 2}});
  absl::StatusOr<v1::DeterminantResponse> response = client().Determinant(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_NEAR(response->value(), -2.0, 1e-14);
  EXPECT_NEAR(response->value_imag(), 2.0, 1e-14);
  EXPECT_NEAR(response->phase_re(), -std::numbers::sqrt2 / 2, 1e-14);
  EXPECT_NEAR(response->phase_im(), std::numbers::sqrt2 / 2, 1e-14);
  EXPECT_NEAR(response->log_abs(), std::log(std::sqrt(8.0)), 1e-14);
  EXPECT_NEAR(response->mantissa(), -2.0, 1e-14);
  EXPECT_NEAR(response->mantissa_imag(), 2.0, 1e-14);
  EXPECT_EQ(response->exponent10(), 0);
}

TEST_F(ComputationTest, Int64DeterminantIsExact) {
  // det [[1e18, 1], [1, 1e18]] = 1e36 - 1: needs more than 64 bits.
  constexpr int64_t kE18 = 1000000000000000000;
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<int64_t>(2, 2, {kE18, 1, 1, kE18});
  absl::StatusOr<v1::DeterminantResponse> response = client().Determinant(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->exact(), "999999999999999999999999999999999999");
  EXPECT_FALSE(response->singular());
  EXPECT_NEAR(response->log_abs(), 36 * std::log(10.0), 1e-9);
}

TEST_F(ComputationTest, ExactDeterminantCarriesItsCertificateAndResiduesOnRequest) {
  constexpr int64_t kE18 = 1000000000000000000;
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<int64_t>(2, 2, {kE18, 1, 1, kE18});
  absl::StatusOr<v1::DeterminantResponse> response = client().Determinant(request);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_TRUE(response->has_certificate());
  const v1::ExactCertificate& plain = response->certificate();
  EXPECT_EQ(plain.primes_size(), 2);  // Hadamard: 2^119.6 needs two primes of ~62 bits
  EXPECT_EQ(plain.residues_size(), 0);
  EXPECT_GT(plain.covered_bits(), plain.bound_bits());
  EXPECT_NEAR(plain.bound_bits(), std::log2(1e36 + 1), 1e-6);
  EXPECT_FALSE(plain.early_stop());

  request.set_return_residues(true);
  response = client().Determinant(request);
  ASSERT_TRUE(response.ok()) << response.status();
  const v1::ExactCertificate& full = response->certificate();
  ASSERT_EQ(full.residues_size(), full.primes_size());
  // det = 1e36 - 1 = (1e18 - 1)(1e18 + 1), so each residue is that product mod the prime.
  __extension__ using Uint128 = unsigned __int128;
  for (int i = 0; i < full.primes_size(); ++i) {
    const Uint128 p = full.primes(i);
    const Uint128 x =
        (static_cast<Uint128>(kE18 - 1) % p) * (static_cast<Uint128>(kE18 + 1) % p) % p;
    EXPECT_EQ(full.residues(i), static_cast<uint64_t>(x));
  }
}

TEST_F(ComputationTest, DeterminantModPrimeMatchesReference) {
  constexpr uint64_t kLargestPrimeBelow2To62 = (uint64_t{1} << 62) - 57;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> entry(-1000000000000, 1000000000000);
  constexpr int kN = 9;
  std::vector<int64_t> values(kN * kN);
  for (int64_t& v : values) v = entry(rng);
  for (uint64_t p : {uint64_t{2}, uint64_t{1000000007}, kLargestPrimeBelow2To62}) {
    v1::DeterminantRequest request;
    *request.mutable_matrix() = MakeMatrix<int64_t>(kN, kN, values);
    request.set_modulus(p);
    absl::StatusOr<v1::DeterminantResponse> response = client().Determinant(request);
    ASSERT_TRUE(response.ok()) << "p = " << p << ": " << response.status();
    const uint64_t want = ReferenceDetModP(values, kN, p);
    EXPECT_EQ(response->residue(), want) << "p = " << p;
    EXPECT_EQ(response->singular(), want == 0) << "p = " << p;
    ExpectCpuStats(response->stats());
  }
}

TEST_F(ComputationTest, DeterminantModPrimeOfNegativeEntriesIsCanonical) {
  // det [[1,2,3],[4,5,6],[7,8,10]] = -3 = p - 3 mod p.
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<int64_t>(3, 3, {1, 2, 3, 4, 5, 6, 7, 8, 10});
  request.set_modulus(1000000007);
  absl::StatusOr<v1::DeterminantResponse> response = client().Determinant(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->residue(), 1000000007 - 3);
  EXPECT_FALSE(response->singular());
}

// (L U)[i, :] from LAPACK's packed n x n factors.
std::vector<double> UnpackLuProduct(const std::vector<double>& lu, int n) {
  std::vector<double> product(n * n, 0.0);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int k = 0; k <= std::min(i, j); ++k) {
        const double l = k == i ? 1.0 : lu[i * n + k];
        sum += l * lu[k * n + j];
      }
      product[i * n + j] = sum;
    }
  }
  return product;
}

TEST_F(ComputationTest, LuReconstructsPermutedMatrixAndSolves) {
  // A zero leading entry forces a row exchange.
  const std::vector<double> a = {0, 2, 1, 4, 1, -2, 2, -3, 5};
  const std::vector<double> x = {1, -2, 3, 0.5, 4, -1};  // 3 x 2
  std::vector<double> b(6, 0.0);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < 3; ++k) b[i * 2 + j] += a[i * 3 + k] * x[k * 2 + j];
    }
  }
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  *request.mutable_matrix() = MakeMatrix<double>(3, 3, a);
  *request.mutable_rhs() = MakeMatrix<double>(3, 2, b);
  absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->kind(), v1::FACTORIZATION_KIND_LU);
  EXPECT_FALSE(response->singular());
  ASSERT_EQ(response->permutation_size(), 3);
  absl::StatusOr<std::vector<double>> lu = ReadMatrix<double>(response->lu());
  ASSERT_TRUE(lu.ok()) << lu.status();
  const std::vector<double> product = UnpackLuProduct(*lu, 3);
  for (int i = 0; i < 3; ++i) {
    const int64_t row = response->permutation(i);
    ASSERT_GE(row, 0);
    ASSERT_LT(row, 3);
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(product[i * 3 + j], a[row * 3 + j], 1e-14);
  }
  absl::StatusOr<std::vector<double>> solution = ReadMatrix<double>(response->solution());
  ASSERT_TRUE(solution.ok()) << solution.status();
  EXPECT_EQ(response->solution().rows(), 3);
  EXPECT_EQ(response->solution().cols(), 2);
  EXPECT_THAT(*solution, Pointwise(DoubleNear(1e-13), x));
  ExpectCpuStats(response->stats());
}

TEST_F(ComputationTest, LuOfSingularMatrixReportsFirstZeroColumn) {
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  *request.mutable_matrix() = MakeMatrix<double>(2, 2, {1, 2, 2, 4});
  absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_TRUE(response->singular());
  EXPECT_EQ(response->singular_column(), 1);
  EXPECT_FALSE(response->has_solution());
}

TEST_F(ComputationTest, EstimateConditionFillsTheFactorizationsAccuracy) {
  // A = [[4, 2], [2, 3]]: ||A||_1 = 6, A^-1 = [[3, -2], [-2, 4]] / 8, ||A^-1||_1 = 3 / 4, so
  // rcond = 2 / 9 exactly; the estimate is never below it (never above ||A^-1||_1) and within 3x.
  for (const v1::FactorizationKind kind :
       {v1::FACTORIZATION_KIND_LU, v1::FACTORIZATION_KIND_CHOLESKY}) {
    SCOPED_TRACE(v1::FactorizationKind_Name(kind));
    v1::FactorizeRequest request;
    request.set_kind(kind);
    request.set_estimate_condition(true);
    *request.mutable_matrix() = MakeMatrix<double>(2, 2, {4, 2, 2, 3});
    absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(request);
    ASSERT_TRUE(response.ok()) << response.status();
    ASSERT_TRUE(response->has_accuracy());
    EXPECT_GE(response->accuracy().rcond(), 2.0 / 9.0 * (1 - 1e-12));
    EXPECT_LE(response->accuracy().rcond(), 3 * 2.0 / 9.0);
    EXPECT_LT(response->accuracy().relative_error_bound(), 1e-14);
    EXPECT_GT(response->accuracy().meaningful_digits(), 14.0);
    EXPECT_FALSE(response->accuracy().ill_conditioned());
  }
  // Without the flag: no accuracy.
  v1::FactorizeRequest plain;
  plain.set_kind(v1::FACTORIZATION_KIND_QR);
  *plain.mutable_matrix() = MakeMatrix<double>(2, 2, {4, 2, 2, 3});
  absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(plain);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_FALSE(response->has_accuracy());
}

TEST_F(ComputationTest, EstimateConditionOnABatchIsRefusedNamingTheField) {
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  request.set_estimate_condition(true);
  request.set_batch_count(2);
  *request.mutable_matrix() = MakeMatrix<double>(4, 2, {4, 2, 2, 3, 1, 0, 0, 1});
  absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(response.status().message()), HasSubstr("estimate_condition"));
}

TEST_F(ComputationTest, CholeskyGivesKnownLowerFactor) {
  // [[4, 2], [2, 3]] = L L^T with L = [[2, 0], [1, sqrt 2]].
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_CHOLESKY);
  *request.mutable_matrix() = MakeMatrix<double>(2, 2, {4, 2, 2, 3});
  absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->kind(), v1::FACTORIZATION_KIND_CHOLESKY);
  absl::StatusOr<std::vector<double>> l = ReadMatrix<double>(response->l());
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_THAT(*l, Pointwise(DoubleNear(1e-15), std::vector<double>{2, 0, 1, std::sqrt(2.0)}));
  ExpectCpuStats(response->stats());
}

TEST_F(ComputationTest, QrHasOrthonormalQAndReconstructs) {
  const std::vector<double> a = {1, 2, 3, 4, 5, 6, 7, 8, 10, -1, 0, 2};  // 4 x 3
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_QR);
  *request.mutable_matrix() = MakeMatrix<double>(4, 3, a);
  absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->q().rows(), 4);
  ASSERT_EQ(response->q().cols(), 3);
  ASSERT_EQ(response->r().rows(), 3);
  ASSERT_EQ(response->r().cols(), 3);
  absl::StatusOr<std::vector<double>> q = ReadMatrix<double>(response->q());
  absl::StatusOr<std::vector<double>> r = ReadMatrix<double>(response->r());
  ASSERT_TRUE(q.ok() && r.ok());
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      double qtq = 0.0;
      for (int k = 0; k < 4; ++k) qtq += (*q)[k * 3 + i] * (*q)[k * 3 + j];
      EXPECT_NEAR(qtq, i == j ? 1.0 : 0.0, 1e-14);
      if (i > j) {
        EXPECT_EQ((*r)[i * 3 + j], 0.0);
      }
    }
  }
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      double qr = 0.0;
      for (int k = 0; k < 3; ++k) qr += (*q)[i * 3 + k] * (*r)[k * 3 + j];
      EXPECT_NEAR(qr, a[i * 3 + j], 1e-13);
    }
  }
  ExpectCpuStats(response->stats());
}

TEST_F(ComputationTest, QrSolveFindsExactLeastSquaresSolution) {
  // A consistent overdetermined system: the least-squares solution is the exact one.
  const std::vector<double> a = {1, 0, 0, 1, 1, 1};  // 3 x 2
  const std::vector<double> rhs = {2, -1, 1};        // A [2, -1]^T
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_QR);
  *request.mutable_matrix() = MakeMatrix<double>(3, 2, a);
  *request.mutable_rhs() = MakeMatrix<double>(3, 1, rhs);
  absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  absl::StatusOr<std::vector<double>> x = ReadMatrix<double>(response->solution());
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_THAT(*x, Pointwise(DoubleNear(1e-14), std::vector<double>{2, -1}));
}

TEST_F(ComputationTest, AbsentRhsMeansNoSolve) {
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  *request.mutable_matrix() = MakeMatrix<double>(2, 2, {4, 2, 2, 3});
  request.mutable_rhs();  // present but empty: rows 0, cols 0, no data
  absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_FALSE(response->has_solution());
}

TEST_F(ComputationTest, MultiplyMatchesHandProduct) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<double>(2, 3, {1, 2, 3, 4, 5, 6});
  *request.mutable_b() = MakeMatrix<double>(3, 2, {7, 8, 9, 10, 11, 12});
  absl::StatusOr<v1::MultiplyResponse> response = client().Multiply(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->c().rows(), 2);
  EXPECT_EQ(response->c().cols(), 2);
  absl::StatusOr<std::vector<double>> c = ReadMatrix<double>(response->c());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, Pointwise(DoubleEq(), std::vector<double>{58, 64, 139, 154}));
  ExpectCpuStats(response->stats());
}

TEST_F(ComputationTest, VerifiedMultiplyReportsAPassedCheck) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<double>(2, 3, {1, 2, 3, 4, 5, 6});
  *request.mutable_b() = MakeMatrix<double>(3, 2, {7, 8, 9, 10, 11, 12});
  request.set_verify(true);
  absl::StatusOr<v1::MultiplyResponse> response = client().Multiply(request);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_TRUE(response->has_check());
  EXPECT_TRUE(response->check().passed());
  EXPECT_EQ(response->check().discrepancy(), 0.0);  // small integers: every product is exact
  EXPECT_GT(response->check().tolerance(), 0.0);
  EXPECT_EQ(response->check().vectors(), kFreivaldsVectors);
}

TEST_F(ComputationTest, StatsCarryProvenanceAndTheResultsCrc32c) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<double>(2, 3, {1, 2, 3, 4, 5, 6});
  *request.mutable_b() = MakeMatrix<double>(3, 2, {7, 8, 9, 10, 11, 12});
  request.set_verify(true);
  absl::StatusOr<v1::MultiplyResponse> response = client().Multiply(request);
  ASSERT_TRUE(response.ok()) << response.status();
  const v1::ComputeStats& stats = response->stats();
  EXPECT_EQ(stats.algorithm(), "gemm+freivalds");
  EXPECT_EQ(stats.precision(), "float64");
  ASSERT_TRUE(stats.versions().contains("openblas"));
  EXPECT_NE(stats.versions().at("openblas").find("OpenBLAS"), std::string::npos);
  // The caller's check: the response without its stats, serialized deterministically.
  v1::MultiplyResponse bare = *response;
  bare.clear_stats();
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    ASSERT_TRUE(bare.SerializeToCodedStream(&coded));
  }
  const uint32_t crc = Crc32c(
      0,
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
  EXPECT_EQ(stats.result_crc32c(), absl::StrFormat("%08x", crc));
}

TEST_F(ComputationTest, VerifyOfUint32IsRejectedNamingTheField) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<uint32_t>(1, 1, {2});
  *request.mutable_b() = MakeMatrix<uint32_t>(1, 1, {3});
  request.set_verify(true);
  absl::StatusOr<v1::MultiplyResponse> response = client().Multiply(request);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(response.status().message()), HasSubstr("verify"));
}

TEST_F(ComputationTest, RefinedSolveReportsTheRefinement) {
  // A = [[4, 1], [2, 3]], x = (1, -2): b = (2, -4).
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  *request.mutable_matrix() = MakeMatrix<double>(2, 2, {4, 1, 2, 3});
  *request.mutable_rhs() = MakeMatrix<double>(2, 1, {2, -4});
  request.set_refine(true);
  request.set_refine_factor_precision(v1::REFINE_PRECISION_FLOAT32);
  absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_TRUE(response->has_refinement());
  const v1::Refinement& refinement = response->refinement();
  EXPECT_TRUE(refinement.converged());
  EXPECT_FALSE(refinement.fell_back());
  EXPECT_EQ(refinement.factor_precision(), "float32");
  EXPECT_LE(refinement.backward_error(), refinement.threshold());
  EXPECT_EQ(refinement.threshold(), 4 * 0x1p-53);  // max(4, sqrt(2)) u
  EXPECT_FALSE(response->has_lu());                // float32 factors are not returned
  absl::StatusOr<std::vector<double>> x = ReadMatrix<double>(response->solution());
  ASSERT_TRUE(x.ok());
  EXPECT_THAT(*x, Pointwise(DoubleNear(1e-15), std::vector<double>{1, -2}));

  request.set_refine_factor_precision(v1::REFINE_PRECISION_UNSPECIFIED);
  response = client().Factorize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->refinement().factor_precision(), "float64");
  EXPECT_TRUE(response->has_lu());
}

TEST_F(ComputationTest, RefineIsRejectedNamingTheField) {
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  *request.mutable_matrix() = MakeMatrix<double>(2, 2, {4, 1, 2, 3});
  request.set_refine(true);
  absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(request);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(response.status().message()), HasSubstr("refine is set without rhs"));

  *request.mutable_rhs() = MakeMatrix<double>(2, 1, {2, -4});
  request.set_kind(v1::FACTORIZATION_KIND_QR);
  response = client().Factorize(request);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(response.status().message()), HasSubstr("refine"));

  request.set_kind(v1::FACTORIZATION_KIND_LU);
  request.set_refine_factor_precision(v1::REFINE_PRECISION_TF32);
  request.set_deterministic(true);
  response = client().Factorize(request);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(response.status().message()), HasSubstr("refine_factor_precision"));

  request.set_deterministic(false);
  request.set_refine_factor_precision(v1::REFINE_PRECISION_FLOAT32);
  request.mutable_result_options()->set_keep_result(true);
  response = client().Factorize(request);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(response.status().message()), HasSubstr("keep_result"));
}

TEST_F(ComputationTest, DeterministicProductRefusesAllowTf32NamingTheField) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<float>(1, 1, {2});
  *request.mutable_b() = MakeMatrix<float>(1, 1, {3});
  request.set_allow_tf32(true);
  request.set_deterministic(true);
  absl::StatusOr<v1::MultiplyResponse> response = client().Multiply(request);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(response.status().message()), HasSubstr("allow_tf32"));
}

// The response without its stats (which carry timings), serialized deterministically.
template <typename Response>
std::string ResultBytes(Response response) {
  response.clear_stats();
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  EXPECT_TRUE(response.SerializeToCodedStream(&coded));
  coded.Trim();
  return bytes;
}

TEST_F(ComputationTest, DeterministicRepeatsAreByteIdentical) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<double> a(64 * 64), b(64 * 64);
  for (double& v : a) v = uniform(rng);
  for (double& v : b) v = uniform(rng);
  v1::MultiplyRequest product;
  *product.mutable_a() = MakeMatrix<double>(64, 64, a);
  *product.mutable_b() = MakeMatrix<double>(64, 64, b);
  product.set_verify(true);
  product.set_deterministic(true);
  absl::StatusOr<v1::MultiplyResponse> first = client().Multiply(product);
  absl::StatusOr<v1::MultiplyResponse> second = client().Multiply(product);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->check().seed(), kDeterministicFreivaldsSeed);
  EXPECT_EQ(ResultBytes(*first), ResultBytes(*second));
  EXPECT_EQ(first->stats().result_crc32c(), second->stats().result_crc32c());

  v1::FactorizeRequest solve;
  solve.set_kind(v1::FACTORIZATION_KIND_LU);
  *solve.mutable_matrix() = MakeMatrix<double>(64, 64, a);
  *solve.mutable_rhs() = MakeMatrix<double>(64, 1, std::vector<double>(b.begin(), b.begin() + 64));
  solve.set_refine(true);
  solve.set_deterministic(true);
  absl::StatusOr<v1::FactorizeResponse> solved = client().Factorize(solve);
  absl::StatusOr<v1::FactorizeResponse> solved_again = client().Factorize(solve);
  ASSERT_TRUE(solved.ok() && solved_again.ok());
  EXPECT_EQ(ResultBytes(*solved), ResultBytes(*solved_again));
}

TEST_F(ComputationTest, MultiplyHonoursTransposes) {
  // A^T B^T with A 3x2 and B 2x3 stored as given: (A^T)(B^T) = (B A)^T.
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<double>(3, 2, {1, 4, 2, 5, 3, 6});  // A^T = [[1,2,3],[4,5,6]]
  *request.mutable_b() =
      MakeMatrix<double>(2, 3, {7, 9, 11, 8, 10, 12});  // B^T = [[7,8],[9,10],[11,12]]
  request.set_transpose_a(true);
  request.set_transpose_b(true);
  absl::StatusOr<v1::MultiplyResponse> response = client().Multiply(request);
  ASSERT_TRUE(response.ok()) << response.status();
  absl::StatusOr<std::vector<double>> c = ReadMatrix<double>(response->c());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, Pointwise(DoubleEq(), std::vector<double>{58, 64, 139, 154}));
}

TEST_F(ComputationTest, Uint32MultiplyWrapsModulo2To32) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<uint32_t>(1, 2, {0x80000000u, 3});
  *request.mutable_b() = MakeMatrix<uint32_t>(2, 1, {2, 0xFFFFFFFFu});
  absl::StatusOr<v1::MultiplyResponse> response = client().Multiply(request);
  ASSERT_TRUE(response.ok()) << response.status();
  absl::StatusOr<std::vector<uint32_t>> c = ReadMatrix<uint32_t>(response->c());
  ASSERT_TRUE(c.ok()) << c.status();
  // 2^31 * 2 + 3 * (2^32 - 1) = 2^32 + 3 * 2^32 - 3 = -3 mod 2^32.
  EXPECT_THAT(*c, ElementsAre(0xFFFFFFFDu));
}

TEST_F(ComputationTest, ComplexMultiplyMatchesHandProduct) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<Complex>(1, 2, std::vector<Complex>{{1, 1}, {0, 2}});
  *request.mutable_b() = MakeMatrix<Complex>(2, 1, std::vector<Complex>{{2, -1}, {3, 0}});
  absl::StatusOr<v1::MultiplyResponse> response = client().Multiply(request);
  ASSERT_TRUE(response.ok()) << response.status();
  absl::StatusOr<std::vector<Complex>> c = ReadMatrix<Complex>(response->c());
  ASSERT_TRUE(c.ok()) << c.status();
  // (1+i)(2-i) + 2i*3 = 3 + i + 6i.
  ASSERT_EQ(c->size(), 1u);
  EXPECT_NEAR((*c)[0].real(), 3.0, 1e-15);
  EXPECT_NEAR((*c)[0].imag(), 7.0, 1e-15);
}

TEST_F(ComputationTest, BlockSparseMultiplySkipsZeroBlocksAndMatchesDense) {
  // 6 x 6 block-diagonal operands with 3 x 3 blocks (2 x 2 grid): only the 2 diagonal pairs of
  // the 8 block products are non-zero.
  constexpr int kN = 6;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> small(-5, 5);
  std::vector<double> a(kN * kN, 0.0), b(kN * kN, 0.0);
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      if (i / 3 == j / 3) {
        a[i * kN + j] = small(rng);
        b[i * kN + j] = small(rng);
      }
    }
  }
  std::vector<double> want(kN * kN, 0.0);
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      for (int k = 0; k < kN; ++k) want[i * kN + j] += a[i * kN + k] * b[k * kN + j];
    }
  }
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<double>(kN, kN, a);
  *request.mutable_b() = MakeMatrix<double>(kN, kN, b);
  request.set_block_size(3);
  absl::StatusOr<v1::MultiplyResponse> response = client().Multiply(request);
  ASSERT_TRUE(response.ok()) << response.status();
  absl::StatusOr<std::vector<double>> c = ReadMatrix<double>(response->c());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, Pointwise(DoubleEq(), want));  // small integers: exact
  EXPECT_EQ(response->block_products(), 2);
  EXPECT_EQ(response->block_products_total(), 8);
  ExpectCpuStats(response->stats());
}

TEST_F(ComputationTest, PermanentOfTwoByTwo) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(2, 2, {1, 2, 3, 4});
  absl::StatusOr<v1::PermanentResponse> response = client().Permanent(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_NEAR(response->value(), 10.0, 1e-13);
  EXPECT_EQ(response->imag(), 0.0);
  EXPECT_TRUE(response->exact().empty());
  ExpectCpuStats(response->stats());
}

TEST_F(ComputationTest, PermanentOfAllOnesIsFactorialByBothMethods) {
  constexpr int kN = 9;
  for (v1::PermanentMethod method : {v1::PERMANENT_METHOD_RYSER, v1::PERMANENT_METHOD_GLYNN}) {
    v1::PermanentRequest request;
    *request.mutable_matrix() = MakeMatrix<double>(kN, kN, std::vector<double>(kN * kN, 1.0));
    request.set_method(method);
    absl::StatusOr<v1::PermanentResponse> response = client().Permanent(request);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_NEAR(response->value(), 362880.0, 1e-7) << v1::PermanentMethod_Name(method);
    EXPECT_EQ(response->method_used(), method);
  }
}

TEST_F(ComputationTest, PermanentReportsThePrecisionAndWalkThatRan) {
  constexpr int kN = 8;
  std::vector<double> values(kN * kN, 0.0);
  for (int i = 0; i < kN; ++i) {
    values[i * kN + i] = 2.0;
    values[i * kN + (i + 1) % kN] = 1.0;  // per = 2^8 + 1
  }
  v1::PermanentRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(kN, kN, values);
  request.set_precision(v1::PERMANENT_PRECISION_FAST);
  absl::StatusOr<v1::PermanentResponse> response = client().Permanent(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->value(), 257.0);
  EXPECT_EQ(response->precision_used(), v1::PERMANENT_PRECISION_FAST);
  EXPECT_EQ(response->walk_used(), v1::PERMANENT_WALK_SPARSE);  // 25 % non-zero: AUTO
  request.set_precision(v1::PERMANENT_PRECISION_DEFAULT);
  request.set_walk(v1::PERMANENT_WALK_DENSE);
  response = client().Permanent(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->value(), 257.0);
  EXPECT_EQ(response->precision_used(), v1::PERMANENT_PRECISION_EXTENDED);
  EXPECT_EQ(response->walk_used(), v1::PERMANENT_WALK_DENSE);
  *request.mutable_matrix() = MakeMatrix<int64_t>(2, 2, {1, 2, 3, 4});
  response = client().Permanent(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->precision_used(), v1::PERMANENT_PRECISION_EXACT);
}

TEST_F(ComputationTest, Int64PermanentIsExactBeyond64Bits) {
  // Products of 1e18 entries need more than 64 bits, and cancel exactly.
  constexpr int64_t kE18 = 1000000000000000000;
  v1::PermanentRequest request;
  *request.mutable_matrix() = MakeMatrix<int64_t>(2, 2, {kE18, kE18, kE18, -kE18});
  absl::StatusOr<v1::PermanentResponse> response = client().Permanent(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->exact(), "0");  // 1e18 * -1e18 + 1e18 * 1e18
  *request.mutable_matrix() = MakeMatrix<int64_t>(2, 2, {kE18, kE18, kE18, kE18});
  response = client().Permanent(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->exact(), "2000000000000000000000000000000000000");
  EXPECT_NEAR(response->value(), 2e36, 1e21);
}

TEST_F(ComputationTest, ComplexPermanentHasImaginaryPart) {
  // per [[i, 1], [1, i]] = i*i + 1*1 = 0; per [[i, 1], [2, 1]] = i + 2.
  v1::PermanentRequest request;
  *request.mutable_matrix() =
      MakeMatrix<Complex>(2, 2, std::vector<Complex>{{0, 1}, {1, 0}, {2, 0}, {1, 0}});
  absl::StatusOr<v1::PermanentResponse> response = client().Permanent(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_NEAR(response->value(), 2.0, 1e-15);
  EXPECT_NEAR(response->imag(), 1.0, 1e-15);
}

}  // namespace
}  // namespace matrixd::server::testing
