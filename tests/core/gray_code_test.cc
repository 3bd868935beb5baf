// The Gray code walk of the permanents (core/cpu/gray_code.h) against its defining properties,
// checked by brute force.
#include "core/cpu/gray_code.h"

#include <bit>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace matrixd::cpu {
namespace {

static_assert(GrayCode(0) == 0);
static_assert(GrayCodeFlipBit(1) == 0);

TEST(GrayCode, FirstCodesAreTheReflectedSequence) {
  const std::vector<uint64_t> want = {0b000, 0b001, 0b011, 0b010, 0b110, 0b111, 0b101, 0b100};
  for (uint64_t i = 0; i < want.size(); ++i) EXPECT_EQ(GrayCode(i), want[i]) << i;
}

TEST(GrayCode, ConsecutiveCodesDifferInExactlyOneBit) {
  for (uint64_t i = 1; i < (uint64_t{1} << 16); ++i) {
    ASSERT_EQ(std::popcount(GrayCode(i - 1) ^ GrayCode(i)), 1) << i;
  }
}

TEST(GrayCode, FlipBitIsTheBitThatChanges) {
  for (uint64_t i = 1; i < (uint64_t{1} << 16); ++i) {
    ASSERT_EQ(GrayCode(i - 1) ^ GrayCode(i), uint64_t{1} << GrayCodeFlipBit(i)) << i;
  }
}

// A walk of 2^n steps visits every subset of n elements exactly once.
TEST(GrayCode, FirstTwoToTheNCodesAreEverySubsetOnce) {
  constexpr int kN = 12;
  std::vector<int> seen(uint64_t{1} << kN, 0);
  for (uint64_t i = 0; i < seen.size(); ++i) {
    const uint64_t code = GrayCode(i);
    ASSERT_LT(code, seen.size());
    ++seen[code];
  }
  for (uint64_t subset = 0; subset < seen.size(); ++subset) EXPECT_EQ(seen[subset], 1) << subset;
}

TEST(GrayCode, SetBitsHaveTheParityOfTheIndex) {
  for (uint64_t i = 0; i < (uint64_t{1} << 16); ++i) {
    ASSERT_EQ(std::popcount(GrayCode(i)) % 2, static_cast<int>(i % 2)) << i;
  }
}

// The walks of the largest permanents index steps up to 2^62 and beyond.
TEST(GrayCode, HighestBitsWorkAtTheTopOfTheRange) {
  const uint64_t top = uint64_t{1} << 63;
  EXPECT_EQ(GrayCodeFlipBit(top), 63);
  EXPECT_EQ(GrayCode(top - 1) ^ GrayCode(top), top);
  EXPECT_EQ(GrayCode(~uint64_t{0}), top);  // the last code of a 64-bit walk
  EXPECT_EQ(GrayCodeFlipBit(uint64_t{3} << 61), 61);
}

}  // namespace
}  // namespace matrixd::cpu
