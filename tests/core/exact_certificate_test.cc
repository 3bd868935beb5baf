// Certificates of exact answers (core/exact_certificate.h) on both backends: a determinant mod p
// names its prime and residue; an exact integer determinant or permanent lists primes whose
// product covers the a-priori bound, and residues from which the answer reconstructs.
#include "core/exact_certificate.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/cpu/exact_determinant.h"
#include "core/cpu/multimodular.h"
#include "core/hadamard_bound.h"
#include "core/matrix.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"

namespace matrixd {
namespace {

class ExactCertificateTest : public testing::BackendTest {};

// x mod p in [0, p) for a signed x.
uint64_t Mod(int64_t x, uint64_t p) {
  const int64_t r = x % static_cast<int64_t>(p);
  return static_cast<uint64_t>(r < 0 ? r + static_cast<int64_t>(p) : r);
}

Matrix Int64Matrix(int64_t n, const std::vector<int64_t>& values) {
  return Matrix::FromValues<int64_t>(n, n, values);
}

// Checks what every multimodular certificate must hold, and that its residues give `exact`.
void ExpectCoversAndReconstructs(const ExactCertificate& c, const std::string& exact) {
  ASSERT_FALSE(c.primes.empty());
  ASSERT_EQ(c.residues.size(), c.primes.size());
  for (size_t i = 0; i < c.primes.size(); ++i) EXPECT_LT(c.residues[i], c.primes[i]);
  EXPECT_GT(c.covered_bits, c.bound_bits);
  EXPECT_FALSE(c.early_stop);
  EXPECT_EQ(c.error_probability, 0.0);
  EXPECT_EQ(cpu::ReconstructSigned(c.residues, c.primes), exact);
}

TEST_P(ExactCertificateTest, DeterminantModPNamesItsPrimeAndResidue) {
  const Matrix a = Int64Matrix(3, {2, -1, 7, 4, 5, -3, 1, 0, 6});  // det = 52
  const uint64_t p = 1000003;
  for (const DeterminantMethod method :
       {DeterminantMethod::kLu, DeterminantMethod::kCondensation}) {
    auto result = backend().Determinant(a.view(), {.method = method, .modulus = p}, nullptr);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->certificate.has_value());
    EXPECT_EQ(result->certificate->primes, std::vector<uint64_t>{p});
    EXPECT_EQ(result->certificate->residues, std::vector<uint64_t>{result->residue});
    EXPECT_EQ(result->residue, 52u);
    EXPECT_NE(result->certificate->method.find("mod p"), std::string::npos)
        << result->certificate->method;
  }
}

// Entries near 2^40: Hadamard's bound needs several primes of 62 bits for n = 4.
Matrix NearTwoToTheFortyMatrix() {
  const int64_t big = int64_t{1} << 40;
  return Int64Matrix(4,
                     {big, 3, -5, 7, 11, -big, 13, 17, 19, 23, big - 1, -29, 31, 37, 41, big + 3});
}

TEST_P(ExactCertificateTest, ExactDeterminantCoversHadamardsBound) {
  const Matrix a = NearTwoToTheFortyMatrix();
  auto result = backend().Determinant(a.view(), {}, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_FALSE(result->exact.empty());
  ASSERT_TRUE(result->certificate.has_value());
  const ExactCertificate& c = *result->certificate;
  EXPECT_GE(c.primes.size(), 3u);
  EXPECT_NEAR(c.bound_bits, HadamardBoundBits(a.As<int64_t>(), 4), 1e-9);
  EXPECT_GT(c.bound_bits, 160.0);
  EXPECT_NE(c.method.find("multimodular"), std::string::npos) << c.method;
  ExpectCoversAndReconstructs(c, result->exact);
}

TEST_P(ExactCertificateTest, AGivenHadamardBoundIsUsedNotRecomputed) {
  // A caller's bound (the server's validation computes it once) is the one the primes cover and
  // the certificate names; a looser one than A's own still recovers the same determinant.
  const Matrix a = NearTwoToTheFortyMatrix();
  auto own = backend().Determinant(a.view(), {}, nullptr);
  ASSERT_TRUE(own.ok()) << own.status();
  const double given = HadamardBoundBits(a.As<int64_t>(), 4) + 70.0;
  auto result = backend().Determinant(a.view(), {.hadamard_bound_bits = given}, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->certificate.has_value());
  EXPECT_EQ(result->certificate->bound_bits, given);
  EXPECT_EQ(result->exact, own->exact);
  ExpectCoversAndReconstructs(*result->certificate, result->exact);
}

TEST_P(ExactCertificateTest, ZeroRowNeedsNoPrime) {
  const Matrix a = Int64Matrix(2, {0, 0, 3, 4});
  auto result = backend().Determinant(a.view(), {}, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exact, "0");
  ASSERT_TRUE(result->certificate.has_value());
  EXPECT_EQ(result->certificate->method, "zero row");
  EXPECT_TRUE(result->certificate->primes.empty());
}

TEST_P(ExactCertificateTest, FloatingDeterminantHasNoCertificate) {
  const Matrix a = Matrix::FromValues<double>(2, 2, std::vector<double>{1, 2, 3, 4});
  auto result = backend().Determinant(a.view(), {}, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->certificate.has_value());
}

TEST_P(ExactCertificateTest, ExactPermanentCoversItsBoundAndReconstructs) {
  const Matrix a = Int64Matrix(4, {3, -1, 4, 1, 5, 9, -2, 6, 5, 3, 5, -8, 9, 7, 9, 3});
  for (const PermanentMethod method : {PermanentMethod::kRyser, PermanentMethod::kGlynn}) {
    auto result = backend().Permanent(a.view(), {.method = method}, nullptr);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_FALSE(result->exact.empty());
    ASSERT_TRUE(result->certificate.has_value());
    const ExactCertificate& c = *result->certificate;
    // prod_i sum_j |a_ij| = 9 * 22 * 21 * 28.
    EXPECT_NEAR(c.bound_bits, std::log2(9.0 * 22 * 21 * 28), 1e-9);
    EXPECT_NE(c.method.find(method == PermanentMethod::kRyser ? "Ryser" : "Glynn"),
              std::string::npos)
        << c.method;
    ExpectCoversAndReconstructs(c, result->exact);
    for (size_t i = 0; i < c.primes.size(); ++i) {
      EXPECT_EQ(c.residues[i], Mod(std::stoll(result->exact), c.primes[i]));
    }
  }
}

TEST(ExactCertificate, CoveredBitsAreTheProductOfThePrimesLessTheSign) {
  const ExactCertificate c = MultimodularCertificate("m", {7, 11}, {1, 2}, 3.0);
  EXPECT_NEAR(c.covered_bits, std::log2(77.0) - 1.0, 1e-12);
  EXPECT_EQ(c.bound_bits, 3.0);
  EXPECT_FALSE(c.early_stop);
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(ExactCertificateTest);

}  // namespace
}  // namespace matrixd
