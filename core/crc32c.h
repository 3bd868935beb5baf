// CRC32C (Castagnoli polynomial 0x1EDC6F41, reflected; as iSCSI, ext4 and gRPC use it), for
// checking that a streamed matrix arrived whole. Uses the SSE4.2 crc32 instruction where the CPU
// has it (about 20 GB/s), a slicing-by-8 table otherwise.
#ifndef MATRIXD_CORE_CRC32C_H_
#define MATRIXD_CORE_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace matrixd {

// The CRC32C of `bytes` appended to data whose CRC32C was `crc` (0 for no data yet), so that
// Crc32c(Crc32c(0, a), b) == Crc32c(0, a + b). Crc32c(0, "123456789") == 0xE3069283.
uint32_t Crc32c(uint32_t crc, std::span<const std::byte> bytes);

namespace internal {
// The table-driven path alone, whatever the CPU has (for tests).
uint32_t PortableCrc32c(uint32_t crc, std::span<const std::byte> bytes);
}  // namespace internal

}  // namespace matrixd

#endif  // MATRIXD_CORE_CRC32C_H_
