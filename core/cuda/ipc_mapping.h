// CUDA IPC memory opened in this process: IpcMapping owns one cudaIpcOpenMemHandle mapping (closed
// with cudaIpcCloseMemHandle on the device it was opened on), and MakeIpcMemory turns it into the
// backend's IpcMemory (core/ipc_memory.h), whose matrices are non-owning device views of it.
#ifndef MATRIXD_CORE_CUDA_IPC_MAPPING_H_
#define MATRIXD_CORE_CUDA_IPC_MAPPING_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "core/cuda/resident_matrix.h"
#include "core/ipc_memory.h"

namespace matrixd::cuda {

// Where an opened allocation really lives and how large it is.
struct IpcAllocation {
  int device = -1;     // the CUDA ordinal (this process's numbering) of its memory
  uint64_t bytes = 0;  // the allocation's size; 0 when the driver cannot tell
};

class IpcMapping {
 public:
  // Opens the kCudaIpcHandleBytes bytes of a cudaIpcMemHandle_t with `device` current
  // (cudaIpcMemLazyEnablePeerAccess). INVALID_ARGUMENT naming raw_handle when it has the wrong
  // size or the driver refuses it (a handle from this process, a freed allocation, garbage).
  static absl::StatusOr<IpcMapping> Open(std::span<const std::byte> raw_handle, int device);

  IpcMapping() = default;  // maps nothing
  IpcMapping(IpcMapping&& other) noexcept;
  IpcMapping& operator=(IpcMapping&& other) noexcept;
  IpcMapping(const IpcMapping&) = delete;
  IpcMapping& operator=(const IpcMapping&) = delete;
  ~IpcMapping();

  std::byte* data() const { return data_; }
  // The device it was opened on.
  int device() const { return device_; }
  // Asks the driver where the mapped allocation lives and its size.
  absl::StatusOr<IpcAllocation> Allocation() const;

 private:
  IpcMapping(std::byte* data, int device) : data_(data), device_(device) {}
  void Close();

  std::byte* data_ = nullptr;
  int device_ = -1;
};

// The IpcMemory of `mapping`'s first `byte_size` bytes, moved and copied through `channel` (of
// the device the memory lives on), which must outlive it. REQUIRES: byte_size fits the allocation.
std::unique_ptr<IpcMemory> MakeIpcMemory(IpcMapping mapping, uint64_t byte_size,
                                         TransferChannel& channel);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_IPC_MAPPING_H_
