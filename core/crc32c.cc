#include "core/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace matrixd {
namespace {

constexpr uint32_t kReflectedPolynomial = 0x82F63B78u;

// kTables[k][b]: the CRC of byte b followed by k zero bytes (slicing-by-8).
constexpr std::array<std::array<uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<uint32_t, 256>, 8> tables{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kReflectedPolynomial : 0u);
    tables[0][b] = crc;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      tables[k][b] = (tables[k - 1][b] >> 8) ^ tables[0][tables[k - 1][b] & 0xFFu];
    }
  }
  return tables;
}
constexpr auto kTables = MakeTables();

uint32_t SoftwareCrc(uint32_t crc, const unsigned char* p, size_t n) {
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);  // little-endian x86-64 and aarch64
    const uint64_t x = word ^ crc;
    crc = kTables[7][x & 0xFF] ^ kTables[6][(x >> 8) & 0xFF] ^ kTables[5][(x >> 16) & 0xFF] ^
          kTables[4][(x >> 24) & 0xFF] ^ kTables[3][(x >> 32) & 0xFF] ^
          kTables[2][(x >> 40) & 0xFF] ^ kTables[1][(x >> 48) & 0xFF] ^ kTables[0][x >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xFFu];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t HardwareCrc(uint32_t crc, const unsigned char* p,
                                                       size_t n) {
  uint64_t wide = crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    wide = _mm_crc32_u64(wide, word);
    p += 8;
    n -= 8;
  }
  uint32_t narrow = static_cast<uint32_t>(wide);
  while (n-- > 0) narrow = _mm_crc32_u8(narrow, *p++);
  return narrow;
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32c(uint32_t crc, std::span<const std::byte> bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  crc = ~crc;
#if defined(__x86_64__)
  if (HasSse42()) return ~HardwareCrc(crc, p, bytes.size());
#endif
  return ~SoftwareCrc(crc, p, bytes.size());
}

uint32_t internal::PortableCrc32c(uint32_t crc, std::span<const std::byte> bytes) {
  return ~SoftwareCrc(~crc, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

}  // namespace matrixd
