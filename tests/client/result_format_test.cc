#include "client/result_format.h"

#include <vector>

#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(FormatBytes, PicksAUnit) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(uint64_t{3} << 30), "3.00 GiB");
}

TEST(FormatSeconds, PicksAUnit) {
  EXPECT_EQ(FormatSeconds(0), "0 ns");
  EXPECT_EQ(FormatSeconds(12.3e-6), "12.3 us");
  EXPECT_EQ(FormatSeconds(0.00456), "4.56 ms");
  EXPECT_EQ(FormatSeconds(1.2345), "1.234 s");
}

TEST(FormatMatrixCorner, CutsLargeMatricesAndPrintsIntegersExactly) {
  std::vector<int64_t> values(36);
  for (int k = 0; k < 36; ++k) values[k] = k == 0 ? (int64_t{1} << 62) + 1 : k;
  const std::string text = FormatMatrixCorner(MakeMatrix<int64_t>(6, 6, values), 2, 3);
  EXPECT_EQ(text,
            "6 x 6 int64\n    [4611686018427387905, 1, 2, ...]\n    [6, 7, 8, ...]\n    ...\n");
}

TEST(FormatMatrixCorner, ComplexAndMalformed) {
  const v1::Matrix m =
      MakeMatrix<std::complex<double>>(1, 1, std::vector<std::complex<double>>{{1.5, -2}});
  EXPECT_THAT(FormatMatrixCorner(m), HasSubstr("[1.5-2i]"));
  v1::Matrix bad = m;
  bad.set_rows(3);
  EXPECT_THAT(FormatMatrixCorner(bad), HasSubstr("malformed"));
}

TEST(FormatDeterminant, RealShowsSignMantissaAndExponent) {
  v1::DeterminantResponse r;
  r.set_sign(1);
  r.set_mantissa(2.637781);
  r.set_exponent10(-78);
  r.set_log_abs(-178.63);
  r.set_value(2.637781e-78);
  r.set_method_used(v1::DETERMINANT_METHOD_CONDENSATION);
  const std::string text = FormatDeterminant(r, false, 0);
  EXPECT_THAT(text, HasSubstr("2.637781 x 10^-78"));
  EXPECT_THAT(text, HasSubstr("sign     = +1"));
  EXPECT_THAT(text, HasSubstr("log|det| = -178.63"));
  EXPECT_THAT(text, HasSubstr("method   = condensation"));
  EXPECT_THAT(text, Not(HasSubstr("rcond")));
}

TEST(FormatDeterminant, AccuracyShowsRcondBoundAndFlag) {
  v1::DeterminantResponse r;
  r.set_sign(1);
  r.set_mantissa(1.5);
  r.mutable_accuracy()->set_rcond(2.5e-12);
  r.mutable_accuracy()->set_relative_error_bound(1.1e-3);
  r.mutable_accuracy()->set_meaningful_digits(2.96);
  r.mutable_accuracy()->set_ill_conditioned(true);
  const std::string text = FormatDeterminant(r, false, 0);
  EXPECT_THAT(text, HasSubstr("rcond    = 2.5e-12  (relative error <= 0.0011, 3.0 digits, "
                              "ILL-CONDITIONED)"));
}

TEST(FormatDeterminant, ModularShowsOnlyTheResidue) {
  v1::DeterminantResponse r;
  r.set_residue(5);
  const std::string text = FormatDeterminant(r, false, 7);
  EXPECT_THAT(text, HasSubstr("det mod 7 = 5"));
  EXPECT_THAT(text, Not(HasSubstr("log|det|")));
}

TEST(FormatDeterminant, SingularSaysSo) {
  v1::DeterminantResponse r;
  r.set_singular(true);
  EXPECT_THAT(FormatDeterminant(r, true, 0), HasSubstr("0 (singular)"));
}

TEST(FormatStats, ShowsTheRateAndTheRoundTrip) {
  v1::ComputeStats stats;
  stats.set_backend("cuda");
  stats.set_device("NVIDIA H100");
  stats.set_seconds(0.002);
  stats.set_flops(1e9);
  stats.set_bytes_moved(2048);
  const std::string text = FormatStats(stats, absl::Milliseconds(3));
  EXPECT_THAT(text, HasSubstr("backend cuda, device NVIDIA H100, compute 2.00 ms"));
  EXPECT_THAT(text, HasSubstr("500.00 GFLOP/s"));
  EXPECT_THAT(text, HasSubstr("2.00 KiB moved"));
  EXPECT_THAT(text, HasSubstr("round trip 3.00 ms"));
}

TEST(FormatStats, ZeroSecondsHasNoRate) {
  EXPECT_THAT(FormatStats(v1::ComputeStats(), absl::ZeroDuration()), HasSubstr("n/a"));
}

TEST(FormatProduct, ShowsBlockProducts) {
  v1::MultiplyResponse r;
  *r.mutable_c() = MakeMatrix<float>(1, 1, std::vector<float>{2});
  r.set_block_products(3);
  r.set_block_products_total(12);
  EXPECT_THAT(FormatProduct(r, 64), HasSubstr("block products: 3 of 12 (25.0%)"));
}

TEST(FormatProduct, ShowsTheFreivaldsVerdict) {
  v1::MultiplyResponse r;
  *r.mutable_c() = MakeMatrix<float>(1, 1, std::vector<float>{2});
  r.mutable_check()->set_passed(false);
  r.mutable_check()->set_discrepancy(0.25);
  r.mutable_check()->set_tolerance(1e-12);
  r.mutable_check()->set_vectors(8);
  r.mutable_check()->set_seed(0x2a);
  EXPECT_THAT(FormatProduct(r, 0), HasSubstr("freivalds: FAILED (discrepancy 0.25, tolerance "
                                             "1e-12, 8 vectors, seed 0x2a)"));
  EXPECT_THAT(FormatProduct(v1::MultiplyResponse(), 0), Not(HasSubstr("freivalds")));
}

TEST(FormatFactorization, ShowsTheRefinement) {
  v1::FactorizeResponse r;
  r.set_kind(v1::FACTORIZATION_KIND_LU);
  r.mutable_refinement()->set_iterations(3);
  r.mutable_refinement()->set_backward_error(1.5e-17);
  r.mutable_refinement()->set_threshold(4.4e-16);
  r.mutable_refinement()->set_converged(true);
  r.mutable_refinement()->set_factor_precision("float32");
  EXPECT_THAT(FormatFactorization(r),
              HasSubstr("refinement: converged after 3 steps (backward error 1.5e-17, threshold "
                        "4.4e-16, float32 factors)"));
  r.mutable_refinement()->set_fell_back(true);
  EXPECT_THAT(FormatFactorization(r), HasSubstr("fell back from the low precision"));
  EXPECT_THAT(FormatFactorization(v1::FactorizeResponse()), Not(HasSubstr("refinement")));
}

TEST(FormatStats, ShowsProvenanceWhenTheServerSendsIt) {
  v1::ComputeStats stats;
  stats.set_algorithm("cublas_gemm+freivalds");
  stats.set_precision("tf32");
  stats.set_result_crc32c("0badf00d");
  (*stats.mutable_versions())["driver"] = "12.8";
  (*stats.mutable_versions())["cublas"] = "13.0.0";
  const std::string text = FormatStats(stats, absl::ZeroDuration());
  EXPECT_THAT(text, HasSubstr("provenance: algorithm cublas_gemm+freivalds, precision tf32, "
                              "result crc32c 0badf00d"));
  EXPECT_THAT(text, HasSubstr("versions: cublas=13.0.0, driver=12.8"));
  EXPECT_THAT(FormatStats(v1::ComputeStats(), absl::ZeroDuration()), Not(HasSubstr("provenance")));
}

TEST(FormatDeterminant, ShowsTheCertificateAndResidues) {
  v1::DeterminantResponse r;
  r.set_residue(5);
  v1::ExactCertificate* c = r.mutable_certificate();
  c->set_method("elimination mod p");
  c->add_primes(7);
  c->add_residues(5);
  const std::string text = FormatDeterminant(r, false, 7);
  EXPECT_THAT(text, HasSubstr("certificate: elimination mod p, 1 prime, no early stop"));
  EXPECT_THAT(text, HasSubstr("residues: 5 mod 7"));
}

}  // namespace
}  // namespace matrixd
