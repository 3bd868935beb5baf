#include "core/cpu/resident_matrix.h"

#include <cstring>
#include <new>
#include <string>

#include "absl/strings/str_cat.h"

namespace matrixd::cpu {
namespace {

class HostResidentMatrix final : public ResidentMatrix {
 public:
  explicit HostResidentMatrix(Matrix matrix)
      : ResidentMatrix(matrix.rows(), matrix.cols(), matrix.dtype()), matrix_(std::move(matrix)) {}

  int device_index() const override { return -1; }
  std::string device() const override { return "cpu"; }

  absl::Status Write(uint64_t offset, std::span<const std::byte> bytes) override {
    if (absl::Status status = CheckRange(offset, bytes.size()); !status.ok()) return status;
    if (!bytes.empty()) std::memcpy(matrix_.mutable_bytes() + offset, bytes.data(), bytes.size());
    return absl::OkStatus();
  }

  absl::Status Read(uint64_t offset, std::span<std::byte> out) const override {
    if (absl::Status status = CheckRange(offset, out.size()); !status.ok()) return status;
    if (!out.empty()) std::memcpy(out.data(), matrix_.bytes() + offset, out.size());
    return absl::OkStatus();
  }

  MatrixView view() const override { return matrix_.view(); }

 private:
  Matrix matrix_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ResidentMatrix>> MakeHostResidentMatrix(int64_t rows, int64_t cols,
                                                                       DType dtype) {
  try {
    return std::make_unique<HostResidentMatrix>(Matrix(rows, cols, dtype));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ",
                     static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * ElementSize(dtype),
                     " bytes of host memory for a resident ", rows, "x", cols, " ",
                     DTypeName(dtype), " matrix"));
  }
}

}  // namespace matrixd::cpu
