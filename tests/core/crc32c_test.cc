// CRC32C against its published check value and the portable table path against the hardware one.
#include "core/crc32c.h"

#include <cstddef>
#include <random>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace matrixd {
namespace {

std::span<const std::byte> Bytes(std::string_view text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

TEST(Crc32c, MatchesTheStandardCheckValue) {
  // RFC 3720 (iSCSI) B.4 and every CRC catalogue: CRC-32C("123456789") = 0xE3069283.
  EXPECT_EQ(Crc32c(0, Bytes("123456789")), 0xE3069283u);
  EXPECT_EQ(internal::PortableCrc32c(0, Bytes("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32c(0, {}), 0u);
}

TEST(Crc32c, ThirtyTwoZeroBytesMatchRfc3720) {
  // RFC 3720 B.4: 32 bytes of zeros -> 0x8A9136AA.
  const std::vector<std::byte> zeros(32, std::byte{0});
  EXPECT_EQ(Crc32c(0, zeros), 0x8A9136AAu);
}

TEST(Crc32c, PiecesGiveTheCrcOfTheWhole) {
  std::mt19937 random(7);
  std::vector<std::byte> data(10007);
  for (std::byte& b : data) b = static_cast<std::byte>(random());
  const uint32_t whole = Crc32c(0, data);
  for (const size_t piece : {size_t{1}, size_t{3}, size_t{8}, size_t{4096}}) {
    uint32_t crc = 0;
    for (size_t at = 0; at < data.size(); at += piece) {
      crc = Crc32c(crc,
                   std::span<const std::byte>(data).subspan(at, std::min(piece, data.size() - at)));
    }
    EXPECT_EQ(crc, whole) << "pieces of " << piece;
  }
}

TEST(Crc32c, HardwareAndPortablePathsAgreeAtEveryLengthAndAlignment) {
  std::mt19937 random(11);
  std::vector<std::byte> data(300);
  for (std::byte& b : data) b = static_cast<std::byte>(random());
  for (size_t start = 0; start < 9; ++start) {
    for (size_t length = 0; start + length <= data.size(); length += 13) {
      const auto piece = std::span<const std::byte>(data).subspan(start, length);
      EXPECT_EQ(Crc32c(0x1234u, piece), internal::PortableCrc32c(0x1234u, piece))
          << "start " << start << " length " << length;
    }
  }
}

TEST(Crc32c, ChangingOneBitChangesTheCrc) {
  std::vector<std::byte> data(1000, std::byte{0x5A});
  const uint32_t before = Crc32c(0, data);
  data[500] ^= std::byte{0x01};
  EXPECT_NE(Crc32c(0, data), before);
}

}  // namespace
}  // namespace matrixd
