#include "core/cuda/resident_matrix.h"

#include <cuda_runtime.h>

#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/generated_entries.h"

namespace matrixd::cuda {
namespace {

class DeviceResidentMatrix final : public ResidentMatrix {
 public:
  DeviceResidentMatrix(TransferChannel& channel, int64_t rows, int64_t cols, DType dtype,
                       DeviceBuffer buffer)
      : ResidentMatrix(rows, cols, dtype), channel_(channel), buffer_(std::move(buffer)) {}

  ~DeviceResidentMatrix() override {
    // Free on the channel's stream with the device current; operations that used the matrix have
    // returned (their owner guarantees it), so nothing reads it any more.
    static_cast<void>(channel_.Run([&](DeviceContext&) {
      buffer_ = DeviceBuffer();
      return absl::OkStatus();
    }));
  }

  int device_index() const override { return channel_.device_index(); }
  std::string device() const override { return channel_.description(); }

  absl::Status Write(uint64_t offset, std::span<const std::byte> bytes) override {
    MATRIXD_RETURN_IF_ERROR(CheckRange(offset, bytes.size()));
    if (bytes.empty()) return absl::OkStatus();
    if (spilled()) {
      std::memcpy(host_.data() + offset, bytes.data(), bytes.size());
      return absl::OkStatus();
    }
    // Through the channel's pinned chunks: this piece's transfer overlaps the copy of the next.
    return channel_.Run([&](DeviceContext& context) {
      return context.StagedUpload(bytes.data(), buffer_.as<std::byte>() + offset, bytes.size());
    });
  }

  absl::Status Flush() override {
    return channel_.Run([](DeviceContext& context) { return context.Synchronize(); });
  }

  absl::Status Read(uint64_t offset, std::span<std::byte> out) const override {
    MATRIXD_RETURN_IF_ERROR(CheckRange(offset, out.size()));
    if (out.empty()) return absl::OkStatus();
    if (spilled()) {
      std::memcpy(out.data(), host_.data() + offset, out.size());
      return absl::OkStatus();
    }
    return channel_.Run([&](DeviceContext& context) {
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out.data(), buffer_.as<std::byte>() + offset,
                                                   out.size(), cudaMemcpyDefault,
                                                   context.stream()));
      return context.Synchronize();
    });
  }

  uint64_t device_bytes() const override { return spilled() ? 0 : byte_size(); }
  bool spilled() const override { return buffer_.data() == nullptr && byte_size() > 0; }

  absl::Status Spill() override {
    if (spilled()) return absl::OkStatus();
    std::vector<std::byte> host;
    try {
      host.resize(byte_size());
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot spill ", byte_size(), " bytes to host memory: out of host memory"));
    }
    MATRIXD_RETURN_IF_ERROR(Read(0, host));
    host_ = std::move(host);
    return channel_.Run([&](DeviceContext&) {
      buffer_ = DeviceBuffer();
      return absl::OkStatus();
    });
  }

  absl::Status Restore() override {
    if (!spilled()) return absl::OkStatus();
    absl::Status status = channel_.Run([&](DeviceContext& context) -> absl::Status {
      MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer buffer, context.Allocate(byte_size()));
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(buffer.data(), host_.data(), byte_size(),
                                                   cudaMemcpyDefault, context.stream()));
      MATRIXD_RETURN_IF_ERROR(context.Synchronize());
      buffer_ = std::move(buffer);
      return absl::OkStatus();
    });
    if (!status.ok()) return status;
    host_ = std::vector<std::byte>();
    return absl::OkStatus();
  }

  std::byte* device_data() override { return spilled() ? nullptr : buffer_.as<std::byte>(); }

  bool GeneratesInPlace() const override { return !spilled(); }

  absl::Status GenerateInPlace(const GeneratorOptions& options,
                               const GeneratedRows& rows) override {
    if (spilled()) return ResidentMatrix::GenerateInPlace(options, rows);
    // On the channel's stream, as a Write would be: Flush waits for it.
    return channel_.Run([&](DeviceContext& context) {
      return MATRIXD_CUDA_STATUS(LaunchGeneratedEntries(options, rows, this->rows(), cols(),
                                                        dtype(), buffer_.data(), context.stream()));
    });
  }

  MatrixView view() const override {
    return {.rows = rows(),
            .cols = cols(),
            .dtype = dtype(),
            .data = buffer_.as<const std::byte>(),
            .space = MemorySpace::kDevice,
            .device = channel_.device_index()};
  }

 private:
  TransferChannel& channel_;
  DeviceBuffer buffer_;          // empty while spilled
  std::vector<std::byte> host_;  // the bytes while spilled
};

}  // namespace

absl::StatusOr<std::unique_ptr<ResidentMatrix>> MakeDeviceResidentMatrix(TransferChannel& channel,
                                                                         int64_t rows, int64_t cols,
                                                                         DType dtype) {
  const uint64_t bytes =
      static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * ElementSize(dtype);
  DeviceBuffer buffer;
  absl::Status status = channel.Run([&](DeviceContext& context) -> absl::Status {
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer allocated, context.Allocate(bytes));
    buffer = std::move(allocated);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return std::make_unique<DeviceResidentMatrix>(channel, rows, cols, dtype, std::move(buffer));
}

void* InPlaceOutput(ResidentMatrix* output, size_t bytes, DType dtype,
                    const DeviceContext& context) {
  if (output == nullptr || output->dtype() != dtype || output->byte_size() != bytes) {
    return nullptr;
  }
  std::byte* data = output->device_data();
  return data != nullptr && context.OnThisDevice(data) ? data : nullptr;
}

}  // namespace matrixd::cuda
