#include "server/upload_assembler.h"

#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/crc32c.h"
#include "core/status_macros.h"
#include "core/validation.h"
#include "server/matrix_conversion.h"

namespace matrixd::server {

absl::StatusOr<UploadShape> CheckUploadShape(int64_t rows, int64_t cols, v1::DType proto_dtype,
                                             const char* what, const Limits& limits) {
  MATRIXD_ASSIGN_OR_RETURN(DType dtype, FromProto(proto_dtype, what));
  if (rows <= 0 || cols <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has shape ", rows, "x", cols, "; rows and cols must be >= 1"));
  }
  uint64_t elements = 0;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), &elements) ||
      __builtin_mul_overflow(elements, ElementSize(dtype), &bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has shape ", rows, "x", cols, ": its size overflows 64 bits"));
  }
  if (elements > static_cast<uint64_t>(limits.max_elements)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has rows x cols = ", rows, " x ", cols, " = ", elements,
                     " elements, exceeds max_matrix_elements = ", limits.max_elements));
  }
  return UploadShape{.rows = rows, .cols = cols, .dtype = dtype, .bytes = bytes};
}

UploadAssembler::UploadAssembler(ResidentRegistry& registry, ResidentOwner owner,
                                 UploadShapeCheck check_shape)
    : registry_(registry),
      owner_(std::move(owner)),
      check_shape_(check_shape != nullptr ? std::move(check_shape)
                                          : [](int64_t rows, int64_t cols, v1::DType dtype) {
                                              return CheckUploadShape(rows, cols, dtype,
                                                                      "upload's first message",
                                                                      Limits{});
                                            }) {}

absl::Status UploadAssembler::Start(const v1::UploadChunk& chunk) {
  MATRIXD_ASSIGN_OR_RETURN(UploadShape shape,
                           check_shape_(chunk.rows(), chunk.cols(), chunk.dtype()));
  rows_ = shape.rows;
  cols_ = shape.cols;
  dtype_ = shape.dtype;
  size_ = shape.bytes;
  MATRIXD_ASSIGN_OR_RETURN(ResidentLayout layout, FromProto(chunk.layout(), "upload's layout"));
  MATRIXD_ASSIGN_OR_RETURN(
      std::unique_ptr<PendingResident> pending,
      registry_.Create(rows_, cols_, dtype_, chunk.label(), -1, owner_, layout));
  pending_ = std::move(pending);
  return absl::OkStatus();
}

absl::Status UploadAssembler::StartPart(const v1::UploadChunk& chunk) {
  MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<FillingPart> part,
                           registry_.BeginPart(chunk.handle(), owner_.name));
  const ResidentInfo& info = part->info();
  if ((chunk.rows() != 0 && chunk.rows() != info.rows) ||
      (chunk.cols() != 0 && chunk.cols() != info.cols) ||
      (chunk.dtype() != v1::DTYPE_UNSPECIFIED && chunk.dtype() != ToProto(info.dtype))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "upload part says ", chunk.rows(), "x", chunk.cols(), " ", v1::DType_Name(chunk.dtype()),
        "; matrix ", info.handle, " is ", info.rows, "x", info.cols, " ", DTypeName(info.dtype)));
  }
  if (chunk.layout() != v1::RESIDENT_LAYOUT_SINGLE_DEVICE &&
      chunk.layout() != ToProto(info.layout)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "upload part says layout ", v1::ResidentLayout_Name(chunk.layout()), "; matrix ",
        info.handle, " was created with ", v1::ResidentLayout_Name(ToProto(info.layout))));
  }
  if (chunk.offset() % ElementSize(info.dtype) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("upload part starts at offset ", chunk.offset(),
                                                   ", not a multiple of the element size ",
                                                   ElementSize(info.dtype)));
  }
  rows_ = info.rows;
  cols_ = info.cols;
  dtype_ = info.dtype;
  size_ = info.bytes;
  part_ = std::move(part);
  return absl::OkStatus();
}

absl::Status UploadAssembler::Write(uint64_t offset, std::span<const std::byte> bytes) {
  if (part_ != nullptr) return part_->Write(offset, bytes);
  if (offset != received_) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload chunk at offset ", offset, " leaves ",
                     offset > received_ ? "a gap" : "an overlap", ": ", received_,
                     " bytes have arrived, so the next chunk must start at offset ", received_));
  }
  if (bytes.size() > size_ - received_) {
    return absl::InvalidArgumentError(absl::StrCat("upload chunk at offset ", offset, " has ",
                                                   bytes.size(), " bytes, past the end of the ",
                                                   size_, "-byte matrix"));
  }
  return pending_->matrix().Write(received_, bytes);
}

absl::Status UploadAssembler::Add(const v1::UploadChunk& chunk) {
  if (!dead_.ok()) return dead_;
  absl::Status status = [&]() -> absl::Status {
    if (pending_ == nullptr && part_ == nullptr) {
      MATRIXD_RETURN_IF_ERROR(chunk.handle().empty() ? Start(chunk) : StartPart(chunk));
    } else if (!chunk.handle().empty()) {
      return absl::InvalidArgumentError(
          "upload names a handle after its first message; only the first may");
    } else if ((chunk.rows() != 0 && chunk.rows() != rows_) ||
               (chunk.cols() != 0 && chunk.cols() != cols_) ||
               (chunk.dtype() != v1::DTYPE_UNSPECIFIED && chunk.dtype() != ToProto(dtype_))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "upload chunk at offset ", chunk.offset(), " says ", chunk.rows(), "x", chunk.cols(), " ",
          v1::DType_Name(chunk.dtype()), "; the stream began as ", rows_, "x", cols_, " ",
          DTypeName(dtype_), " (shape and dtype cannot change mid-stream)"));
    }
    if (chunk.has_checksum()) {
      if (expected_crc_.has_value()) {
        return absl::InvalidArgumentError("upload carries its checksum more than once");
      }
      expected_crc_ = chunk.checksum().crc32c();
    }
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(chunk.data().data()),
                                           chunk.data().size());
    MATRIXD_RETURN_IF_ERROR(Write(chunk.offset(), bytes));
    crc_ = Crc32c(crc_, bytes);
    ScanFinite(bytes.data(), bytes.size());
    received_ += bytes.size();
    return absl::OkStatus();
  }();
  if (!status.ok()) {
    dead_ = status;
    pending_.reset();
    part_.reset();
  }
  return status;
}

void UploadAssembler::ScanFinite(const std::byte* bytes, size_t size) {
  if (!IsFloating(dtype_) || !finite_) return;
  const size_t element = ElementSize(dtype_);
  if (partial_size_ > 0) {
    const size_t take = std::min(element - partial_size_, size);
    std::memcpy(partial_.data() + partial_size_, bytes, take);
    partial_size_ += take;
    bytes += take;
    size -= take;
    if (partial_size_ < element) return;
    finite_ = AllFinite({.rows = 1, .cols = 1, .dtype = dtype_, .data = partial_.data()});
    partial_size_ = 0;
  }
  const size_t whole = size / element;
  if (whole > 0 && finite_) {
    // Chunks are aligned only by chance: check an aligned copy of what is not.
    alignas(16) std::byte probe[16];
    if (reinterpret_cast<uintptr_t>(bytes) % element == 0 || element > sizeof(probe)) {
      finite_ = AllFinite(
          {.rows = 1, .cols = static_cast<int64_t>(whole), .dtype = dtype_, .data = bytes});
    } else {
      for (size_t i = 0; i < whole && finite_; ++i) {
        std::memcpy(probe, bytes + i * element, element);
        finite_ = AllFinite({.rows = 1, .cols = 1, .dtype = dtype_, .data = probe});
      }
    }
  }
  const size_t rest = size - whole * element;
  std::memcpy(partial_.data(), bytes + whole * element, rest);
  partial_size_ = rest;
}

absl::Status UploadAssembler::CheckComplete() const {
  if (pending_ == nullptr && part_ == nullptr) {
    return absl::InvalidArgumentError("upload stream ended before its first message");
  }
  if (part_ == nullptr && received_ != size_) {
    return absl::InvalidArgumentError(absl::StrCat("upload stream ended after ", received_,
                                                   " of the ", size_, " bytes of a ", rows_, "x",
                                                   cols_, " ", DTypeName(dtype_), " matrix"));
  }
  if (!expected_crc_.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload carried no checksum; send the CRC32C of the ",
                     part_ == nullptr ? "matrix's bytes" : "part's bytes", " in one message"));
  }
  if (*expected_crc_ != crc_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("upload checksum mismatch: the stream says CRC32C %08x, the %d bytes "
                        "received have %08x",
                        *expected_crc_, received_, crc_));
  }
  if (received_ % ElementSize(dtype_) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload part ends inside an element: its ", received_,
                     " bytes are not a multiple of the element size ", ElementSize(dtype_)));
  }
  return absl::OkStatus();
}

absl::StatusOr<ResidentInfo> UploadAssembler::Finish() {
  if (!dead_.ok()) return dead_;
  if (absl::Status status = CheckComplete(); !status.ok()) {
    dead_ = status;
    pending_.reset();
    part_.reset();
    return status;
  }
  absl::StatusOr<ResidentInfo> info = part_ != nullptr
                                          ? registry_.CompletePart(std::move(part_), finite_)
                                          : registry_.Commit(std::move(pending_), finite_);
  if (!info.ok()) dead_ = info.status();
  return info;
}

}  // namespace matrixd::server
