#include "core/cpu/resident_matrix.h"

#include <cstring>
#include <new>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace matrixd::cpu {
namespace {

// Its bytes are left uninitialised (the upload or result writes every one), so that the pages are
// touched once, by the first write, and not zero-filled before.
class HostResidentMatrix final : public ResidentMatrix {
 public:
  HostResidentMatrix(int64_t rows, int64_t cols, DType dtype, std::unique_ptr<std::byte[]> bytes)
      : ResidentMatrix(rows, cols, dtype), bytes_(std::move(bytes)) {}

  int device_index() const override { return -1; }
  std::string device() const override { return "cpu"; }

  absl::Status Write(uint64_t offset, std::span<const std::byte> bytes) override {
    MATRIXD_RETURN_IF_ERROR(CheckRange(offset, bytes.size()));
    if (!bytes.empty()) std::memcpy(bytes_.get() + offset, bytes.data(), bytes.size());
    return absl::OkStatus();
  }

  absl::Status Read(uint64_t offset, std::span<std::byte> out) const override {
    MATRIXD_RETURN_IF_ERROR(CheckRange(offset, out.size()));
    if (!out.empty()) std::memcpy(out.data(), bytes_.get() + offset, out.size());
    return absl::OkStatus();
  }

  MatrixView view() const override {
    return {.rows = rows(), .cols = cols(), .dtype = dtype(), .data = bytes_.get()};
  }

 private:
  std::unique_ptr<std::byte[]> bytes_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ResidentMatrix>> MakeHostResidentMatrix(int64_t rows, int64_t cols,
                                                                       DType dtype) {
  const size_t bytes = static_cast<size_t>(rows) * static_cast<size_t>(cols) * ElementSize(dtype);
  // new[] of std::byte default-initialises (no zero fill) and aligns to 16 bytes, enough for
  // every dtype.
  std::unique_ptr<std::byte[]> storage(new (std::nothrow) std::byte[bytes]);
  if (storage == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ",
                     static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * ElementSize(dtype),
                     " bytes of host memory for a resident ", rows, "x", cols, " ",
                     DTypeName(dtype), " matrix"));
  }
  return std::make_unique<HostResidentMatrix>(rows, cols, dtype, std::move(storage));
}

}  // namespace matrixd::cpu
