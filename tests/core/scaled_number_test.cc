#include "core/scaled_number.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace matrixd {
namespace {

TEST(ScaledNumber, ProductFarBeyondDoubleRangeKeepsLogAndSign) {
  ScaledNumber x;
  for (int i = 0; i < 1000; ++i) x *= -1e300;  // 10^300000, sign (+1) after an even count
  EXPECT_NEAR(x.log_abs(), 300000 * std::log(10.0), 1e-6);
  EXPECT_EQ(x.phase(), std::complex<double>(1.0));
  const DecimalForm d = x.Decimal();
  EXPECT_EQ(d.exponent10, 300000);
  EXPECT_NEAR(d.mantissa.real(), 1.0, 1e-9);
  EXPECT_TRUE(std::isinf(x.ToComplex().real()));
}

TEST(ScaledNumber, TinyProductUnderflowsOnlyInPlainDouble) {
  ScaledNumber x;
  for (int i = 0; i < 100; ++i) x *= 2.5e-10;
  x.Negate();
  const DecimalForm d = x.Decimal();
  EXPECT_EQ(d.exponent10, -961);  // 2.5^100 = 6.2e39 -> 6.2e39 * 1e-1000
  EXPECT_NEAR(d.mantissa.real(), -std::pow(2.5, 100) / 1e39, 1e-9);
  EXPECT_EQ(x.ToComplex().real(), 0.0);
  EXPECT_EQ(x.phase(), std::complex<double>(-1.0));
}

TEST(ScaledNumber, DivisionUndoesMultiplication) {
  ScaledNumber x = ScaledNumber::Of(3.0);
  x *= 1e200;
  x /= 1e200;
  EXPECT_NEAR(x.ToComplex().real(), 3.0, 1e-15);
}

TEST(ScaledNumber, ComplexPhaseAndMagnitude) {
  ScaledNumber x = ScaledNumber::Of({3.0, 4.0});
  EXPECT_NEAR(std::exp(x.log_abs()), 5.0, 1e-14);
  EXPECT_NEAR(x.phase().real(), 0.6, 1e-15);
  EXPECT_NEAR(x.phase().imag(), 0.8, 1e-15);
  const DecimalForm d = x.Decimal();
  EXPECT_EQ(d.exponent10, 0);
  EXPECT_NEAR(d.mantissa.real(), 3.0, 1e-14);
  EXPECT_NEAR(d.mantissa.imag(), 4.0, 1e-14);
}

TEST(ScaledNumber, ZeroIsSingular) {
  ScaledNumber x = ScaledNumber::Of(5.0);
  x *= 0.0;
  EXPECT_TRUE(x.is_zero());
  EXPECT_EQ(x.log_abs(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(x.Decimal().exponent10, 0);
  EXPECT_EQ(x.Decimal().mantissa, std::complex<double>(0.0));
}

TEST(ScaledNumber, DecimalMantissaStaysBelowTen) {
  ScaledNumber x = ScaledNumber::Of(9.999999999999999);
  const DecimalForm d = x.Decimal();
  EXPECT_GE(std::abs(d.mantissa), 1.0);
  EXPECT_LT(std::abs(d.mantissa), 10.0);
  ScaledNumber ten = ScaledNumber::Of(1000.0);
  EXPECT_EQ(ten.Decimal().exponent10, 3);
  EXPECT_NEAR(ten.Decimal().mantissa.real(), 1.0, 1e-15);
}

}  // namespace
}  // namespace matrixd
