// Reassembles a streamed Upload (UploadChunk messages) into a resident matrix: the first chunk
// names the shape and dtype and makes room (ResidentRegistry::Create); each chunk's bytes must
// follow the previous ones exactly (offset == bytes so far) and are written on at once, so the
// network and the copy to the device overlap; Finish checks that every byte and the CRC32C
// arrived and names the matrix. Destroying an unfinished assembler frees what it took.
// A stream whose first chunk names a `handle` is one part of a parallel upload instead
// (ResidentRegistry::BeginPart): a contiguous range from its first offset, checked against its
// own CRC32C; destroying it unfinished gives the range back.
// Not thread-safe (one per stream).
#ifndef MATRIXD_SERVER_UPLOAD_ASSEMBLER_H_
#define MATRIXD_SERVER_UPLOAD_ASSEMBLER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "core/validation.h"
#include "matrixd/v1/matrixd.pb.h"
#include "server/resident_registry.h"

namespace matrixd::server {

// A matrix's shape as an upload (or CreateMatrix, Generate) names it, checked: a known dtype, rows
// and cols >= 1 and at most `limits.max_elements` elements (as the operands of computing calls);
// INVALID_ARGUMENT naming `what` otherwise.
struct UploadShape {
  int64_t rows = 0;
  int64_t cols = 0;
  DType dtype = DType::kFloat64;
  uint64_t bytes = 0;
};
absl::StatusOr<UploadShape> CheckUploadShape(int64_t rows, int64_t cols, v1::DType dtype,
                                             const char* what, const Limits& limits);

// Checks the shape an upload's first message names (CheckUploadShape under the caller's limits).
using UploadShapeCheck =
    std::function<absl::StatusOr<UploadShape>(int64_t rows, int64_t cols, v1::DType dtype)>;

class UploadAssembler {
 public:
  // `registry` must outlive the assembler. The matrix is `owner`'s (and a part goes only into a
  // matrix of `owner`'s: NOT_FOUND otherwise). `check_shape` checks the first message's shape
  // before anything is allocated; null: CheckUploadShape under the default Limits.
  explicit UploadAssembler(ResidentRegistry& registry, ResidentOwner owner = {},
                           UploadShapeCheck check_shape = nullptr);

  // Takes the next chunk. INVALID_ARGUMENT naming the problem: a first chunk without a valid
  // shape or dtype (or one over the limits, as `check_shape` says), a later one that changes them,
  // a gap or an overlap (offset other than the bytes so far), bytes past the end, a second
  // checksum. RESOURCE_EXHAUSTED when the matrix does not fit. After an error the upload is dead:
  // every later call fails.
  absl::Status Add(const v1::UploadChunk& chunk);
  // Ends the stream: INVALID_ARGUMENT for an empty stream, missing bytes, a missing checksum or a
  // CRC32C that does not match; otherwise the new resident matrix.
  absl::StatusOr<ResidentInfo> Finish();

  uint64_t bytes_received() const { return received_; }

 private:
  absl::Status Start(const v1::UploadChunk& chunk);
  absl::Status StartPart(const v1::UploadChunk& chunk);
  // Checks where the chunk goes and writes it there.
  absl::Status Write(uint64_t offset, std::span<const std::byte> bytes);
  // Finish's checks of what arrived.
  absl::Status CheckComplete() const;
  // Checks the floating-point entries that `bytes` completes (a chunk may split an element).
  void ScanFinite(const std::byte* bytes, size_t size);

  ResidentRegistry& registry_;
  const ResidentOwner owner_;
  const UploadShapeCheck check_shape_;
  absl::Status dead_;                         // the first error; later calls repeat it
  std::unique_ptr<PendingResident> pending_;  // a whole upload
  std::unique_ptr<FillingPart> part_;         // or a part of a parallel one
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  DType dtype_ = DType::kFloat64;
  uint64_t size_ = 0;
  uint64_t received_ = 0;
  uint32_t crc_ = 0;
  std::optional<uint32_t> expected_crc_;
  bool finite_ = true;
  std::array<std::byte, 16> partial_{};  // the bytes of an element split between chunks
  size_t partial_size_ = 0;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_UPLOAD_ASSEMBLER_H_
