// Bit-identical repeats (docs/accuracy.md): the same call on the same backend object, twice, gives
// the same bytes, for the operations the docs promise it for. CUDA cases skip without a device.
#include <complex>
#include <cstdint>
#include <cstring>

#include "core/backend.h"
#include "core/freivalds.h"
#include "core/matrix.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"
#include "tests/core/dense_test_support.h"

namespace matrixd {
namespace {

using testing::RandomMatrix;

class RepeatabilityTest : public testing::BackendTest {};

void ExpectSameBytes(const Matrix& x, const Matrix& y) {
  ASSERT_EQ(x.byte_size(), y.byte_size());
  EXPECT_EQ(std::memcmp(x.bytes(), y.bytes(), x.byte_size()), 0);
}

TEST_P(RepeatabilityTest, ProductsRepeatBitForBit) {
  const Matrix a = RandomMatrix<double>(300, 257, 1);
  const Matrix b = RandomMatrix<double>(257, 190, 2);
  for (const int64_t block_size : {int64_t{0}, int64_t{64}}) {
    auto first = backend().Multiply(a.view(), b.view(), {.block_size = block_size}, nullptr);
    auto second = backend().Multiply(a.view(), b.view(), {.block_size = block_size}, nullptr);
    ASSERT_TRUE(first.ok() && second.ok());
    ExpectSameBytes(first->c, second->c);
  }
}

TEST_P(RepeatabilityTest, DeterminantsAndFactorizationsRepeatBitForBit) {
  const Matrix a = RandomMatrix<std::complex<double>>(200, 200, 3);
  auto first = backend().Determinant(a.view(), {}, nullptr);
  auto second = backend().Determinant(a.view(), {}, nullptr);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->value.mantissa(), second->value.mantissa());
  EXPECT_EQ(first->value.log_abs(), second->value.log_abs());
  const Matrix rhs = RandomMatrix<std::complex<double>>(200, 3, 4);
  const MatrixView rhs_view = rhs.view();
  auto lu = backend().Factorize(a.view(), {}, &rhs_view, nullptr);
  auto lu_again = backend().Factorize(a.view(), {}, &rhs_view, nullptr);
  ASSERT_TRUE(lu.ok() && lu_again.ok());
  ExpectSameBytes(lu->lu, lu_again->lu);
  ExpectSameBytes(*lu->solution, *lu_again->solution);
}

TEST_P(RepeatabilityTest, RefinedSolvesRepeatBitForBit) {
  const Matrix a = RandomMatrix<double>(150, 150, 6);
  const Matrix rhs = RandomMatrix<double>(150, 2, 7);
  const MatrixView rhs_view = rhs.view();
  for (const RefinePrecision precision : {RefinePrecision::kInput, RefinePrecision::kFloat32}) {
    const FactorizeOptions options{.refine = {.enabled = true, .factor_precision = precision}};
    auto first = backend().Factorize(a.view(), options, &rhs_view, nullptr);
    auto second = backend().Factorize(a.view(), options, &rhs_view, nullptr);
    ASSERT_TRUE(first.ok() && second.ok());
    ExpectSameBytes(*first->solution, *second->solution);
    EXPECT_EQ(first->refinement->iterations, second->refinement->iterations);
    EXPECT_EQ(first->refinement->backward_error, second->refinement->backward_error);
  }
}

TEST_P(RepeatabilityTest, DeterministicProductChecksUseTheFixedSeed) {
  const Matrix a = RandomMatrix<float>(120, 90, 8);
  const Matrix b = RandomMatrix<float>(90, 70, 9);
  const MultiplyOptions options{.verify = true, .deterministic = true};
  auto first = backend().Multiply(a.view(), b.view(), options, nullptr);
  auto second = backend().Multiply(a.view(), b.view(), options, nullptr);
  ASSERT_TRUE(first.ok() && second.ok());
  ExpectSameBytes(first->c, second->c);
  ASSERT_TRUE(first->check.has_value() && second->check.has_value());
  EXPECT_EQ(first->check->seed, kDeterministicFreivaldsSeed);
  EXPECT_EQ(second->check->seed, kDeterministicFreivaldsSeed);
  EXPECT_EQ(first->check->discrepancy, second->check->discrepancy);
  EXPECT_TRUE(first->check->passed);
}

TEST_P(RepeatabilityTest, FloatingPermanentsRepeatBitForBit) {
  const Matrix a = RandomMatrix<double>(16, 16, 5);
  auto first = backend().Permanent(a.view(), {}, nullptr);
  auto second = backend().Permanent(a.view(), {}, nullptr);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->value, second->value);
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(RepeatabilityTest);

}  // namespace
}  // namespace matrixd
