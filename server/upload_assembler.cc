#include "server/upload_assembler.h"

#include <cstring>
#include <span>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/crc32c.h"
#include "core/validation.h"
#include "server/matrix_conversion.h"

namespace matrixd::server {

absl::Status UploadAssembler::Start(const v1::UploadChunk& chunk) {
  absl::StatusOr<DType> dtype = FromProto(chunk.dtype(), "upload");
  if (!dtype.ok()) return dtype.status();
  if (chunk.rows() <= 0 || chunk.cols() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("upload has shape ", chunk.rows(), "x",
                                                   chunk.cols(),
                                                   " in its first message; rows and cols must "
                                                   "be >= 1"));
  }
  uint64_t elements = 0;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(chunk.rows()),
                             static_cast<uint64_t>(chunk.cols()), &elements) ||
      __builtin_mul_overflow(elements, ElementSize(*dtype), &bytes)) {
    return absl::InvalidArgumentError(absl::StrCat("upload has shape ", chunk.rows(), "x",
                                                   chunk.cols(), ": its size overflows 64 bits"));
  }
  rows_ = chunk.rows();
  cols_ = chunk.cols();
  dtype_ = *dtype;
  size_ = bytes;
  absl::StatusOr<std::unique_ptr<PendingResident>> pending =
      registry_.Create(rows_, cols_, dtype_, chunk.label());
  if (!pending.ok()) return pending.status();
  pending_ = *std::move(pending);
  return absl::OkStatus();
}

absl::Status UploadAssembler::Add(const v1::UploadChunk& chunk) {
  if (!dead_.ok()) return dead_;
  absl::Status status = [&]() -> absl::Status {
    if (pending_ == nullptr) {
      if (absl::Status started = Start(chunk); !started.ok()) return started;
    } else if ((chunk.rows() != 0 && chunk.rows() != rows_) ||
               (chunk.cols() != 0 && chunk.cols() != cols_) ||
               (chunk.dtype() != v1::DTYPE_UNSPECIFIED && chunk.dtype() != ToProto(dtype_))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "upload chunk at offset ", chunk.offset(), " says ", chunk.rows(), "x", chunk.cols(), " ",
          v1::DType_Name(chunk.dtype()), "; the stream began as ", rows_, "x", cols_, " ",
          DTypeName(dtype_), " (shape and dtype cannot change mid-stream)"));
    }
    if (chunk.offset() != received_) {
      return absl::InvalidArgumentError(
          absl::StrCat("upload chunk at offset ", chunk.offset(), " leaves ",
                       chunk.offset() > received_ ? "a gap" : "an overlap", ": ", received_,
                       " bytes have arrived, so the next chunk must start at offset ", received_));
    }
    const std::string& data = chunk.data();
    if (data.size() > size_ - received_) {
      return absl::InvalidArgumentError(
          absl::StrCat("upload chunk at offset ", chunk.offset(), " has ", data.size(),
                       " bytes, past the end of the ", size_, "-byte matrix"));
    }
    if (chunk.has_checksum()) {
      if (expected_crc_.has_value()) {
        return absl::InvalidArgumentError("upload carries its checksum more than once");
      }
      expected_crc_ = chunk.checksum().crc32c();
    }
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data.data()),
                                           data.size());
    if (absl::Status written = pending_->matrix().Write(received_, bytes); !written.ok()) {
      return written;
    }
    crc_ = Crc32c(crc_, bytes);
    ScanFinite(bytes.data(), bytes.size());
    received_ += bytes.size();
    return absl::OkStatus();
  }();
  if (!status.ok()) {
    dead_ = status;
    pending_.reset();
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

absl::StatusOr<ResidentInfo> UploadAssembler::Finish() {
  if (!dead_.ok()) return dead_;
  absl::Status status = [&]() -> absl::Status {
    if (pending_ == nullptr) {
      return absl::InvalidArgumentError("upload stream ended before its first message");
    }
    if (received_ != size_) {
      return absl::InvalidArgumentError(absl::StrCat("upload stream ended after ", received_,
                                                     " of the ", size_, " bytes of a ", rows_, "x",
                                                     cols_, " ", DTypeName(dtype_), " matrix"));
    }
    if (!expected_crc_.has_value()) {
      return absl::InvalidArgumentError(
          "upload carried no checksum; send the CRC32C of the matrix's bytes in one message");
    }
    if (*expected_crc_ != crc_) {
      return absl::InvalidArgumentError(
          absl::StrFormat("upload checksum mismatch: the stream says CRC32C %08x, the %d bytes "
                          "received have %08x",
                          *expected_crc_, received_, crc_));
    }
    return absl::OkStatus();
  }();
  if (!status.ok()) {
    dead_ = status;
    pending_.reset();
    return status;
  }
  absl::StatusOr<ResidentInfo> info = registry_.Commit(std::move(pending_), finite_);
  if (!info.ok()) dead_ = info.status();
  return info;
}

}  // namespace matrixd::server
