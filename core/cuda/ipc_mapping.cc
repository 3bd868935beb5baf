#include "core/cuda/ipc_mapping.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"

namespace matrixd::cuda {
namespace {

// cuMemGetAddressRange through the runtime's driver entry point: the backend links the runtime
// only, and a process without a driver must still load.
using AddressRangeFunction = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);

AddressRangeFunction AddressRange() {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &function, 12000, cudaEnableDefault,
                                       &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    static_cast<void>(cudaGetLastError());
    return nullptr;
  }
  return reinterpret_cast<AddressRangeFunction>(function);
}

// A rows x cols matrix inside the mapping: the memory is the sharing process's, so nothing here
// frees or spills it; copies of host bytes in and out go through the device's transfer channel.
class IpcMatrix final : public ResidentMatrix {
 public:
  IpcMatrix(TransferChannel& channel, std::byte* data, int64_t rows, int64_t cols, DType dtype)
      : ResidentMatrix(rows, cols, dtype), channel_(channel), data_(data) {}

  int device_index() const override { return channel_.device_index(); }
  std::string device() const override { return channel_.description(); }

  absl::Status Write(uint64_t offset, std::span<const std::byte> bytes) override {
    MATRIXD_RETURN_IF_ERROR(CheckRange(offset, bytes.size()));
    return Copy(data_ + offset, bytes.data(), bytes.size());
  }
  absl::Status Read(uint64_t offset, std::span<std::byte> out) const override {
    MATRIXD_RETURN_IF_ERROR(CheckRange(offset, out.size()));
    return Copy(out.data(), data_ + offset, out.size());
  }

  std::byte* device_data() override { return data_; }
  MatrixView view() const override {
    return {.rows = rows(),
            .cols = cols(),
            .dtype = dtype(),
            .data = data_,
            .space = MemorySpace::kDevice,
            .device = channel_.device_index()};
  }

 private:
  // Synchronous: the caller's bytes may go away, and the sharing process reads the result next.
  absl::Status Copy(void* to, const void* from, size_t bytes) const {
    if (bytes == 0) return absl::OkStatus();
    return channel_.Run([&](DeviceContext& context) {
      MATRIXD_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, context.stream()));
      return context.Synchronize();
    });
  }

  TransferChannel& channel_;
  std::byte* const data_;
};

class CudaIpcMemory final : public IpcMemory {
 public:
  CudaIpcMemory(IpcMapping mapping, uint64_t byte_size, TransferChannel& channel)
      : mapping_(std::move(mapping)), byte_size_(byte_size), channel_(channel) {}

  int device_index() const override { return channel_.device_index(); }
  std::string device() const override { return channel_.description(); }
  uint64_t byte_size() const override { return byte_size_; }
  std::unique_ptr<ResidentMatrix> MatrixAt(uint64_t offset, int64_t rows, int64_t cols,
                                           DType dtype) override {
    return std::make_unique<IpcMatrix>(channel_, mapping_.data() + offset, rows, cols, dtype);
  }

 private:
  IpcMapping mapping_;
  const uint64_t byte_size_;
  TransferChannel& channel_;
};

}  // namespace

absl::StatusOr<IpcMapping> IpcMapping::Open(std::span<const std::byte> raw_handle, int device) {
  if (raw_handle.size() != sizeof(cudaIpcMemHandle_t)) {
    return absl::InvalidArgumentError(absl::StrCat("raw_handle has ", raw_handle.size(),
                                                   " bytes; want the ", sizeof(cudaIpcMemHandle_t),
                                                   " bytes of a cudaIpcMemHandle_t"));
  }
  cudaIpcMemHandle_t handle;
  std::memcpy(&handle, raw_handle.data(), sizeof(handle));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  void* data = nullptr;
  if (const cudaError_t code = cudaIpcOpenMemHandle(&data, handle, cudaIpcMemLazyEnablePeerAccess);
      code != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return absl::InvalidArgumentError(absl::StrCat(
        "raw_handle: the driver refuses the CUDA IPC handle (cudaIpcOpenMemHandle: ",
        cudaGetErrorString(code),
        "); it must come from cudaIpcGetMemHandle in another process on this host whose "
        "allocation is still alive"));
  }
  return IpcMapping(static_cast<std::byte*>(data), device);
}

IpcMapping::IpcMapping(IpcMapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), device_(other.device_) {}

IpcMapping& IpcMapping::operator=(IpcMapping&& other) noexcept {
  if (this != &other) {
    Close();
    data_ = std::exchange(other.data_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

IpcMapping::~IpcMapping() { Close(); }

void IpcMapping::Close() {
  if (data_ == nullptr) return;
  // The mapping belongs to the device it was opened on.
  int current = 0;
  MATRIXD_ASSERT_CUDA_SUCCESS(cudaGetDevice(&current));
  MATRIXD_ASSERT_CUDA_SUCCESS(cudaSetDevice(device_));
  MATRIXD_ASSERT_CUDA_SUCCESS(cudaIpcCloseMemHandle(data_));
  MATRIXD_ASSERT_CUDA_SUCCESS(cudaSetDevice(current));
  data_ = nullptr;
}

absl::StatusOr<IpcAllocation> IpcMapping::Allocation() const {
  cudaPointerAttributes attributes{};
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaPointerGetAttributes(&attributes, data_));
  IpcAllocation allocation{.device = attributes.device};
  static const AddressRangeFunction address_range = AddressRange();
  CUdeviceptr base = 0;
  size_t bytes = 0;
  if (address_range != nullptr &&
      address_range(&base, &bytes, reinterpret_cast<CUdeviceptr>(data_)) == CUDA_SUCCESS) {
    // The mapping starts at the allocation's base; count from the mapped address anyway.
    allocation.bytes = bytes - (reinterpret_cast<CUdeviceptr>(data_) - base);
  }
  return allocation;
}

std::unique_ptr<IpcMemory> MakeIpcMemory(IpcMapping mapping, uint64_t byte_size,
                                         TransferChannel& channel) {
  return std::make_unique<CudaIpcMemory>(std::move(mapping), byte_size, channel);
}

}  // namespace matrixd::cuda
