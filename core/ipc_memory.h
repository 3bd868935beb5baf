// Device memory that another process on this host allocated and shared through CUDA IPC
// (cudaIpcGetMemHandle), opened by Backend::OpenCudaIpc. The backend maps it once; ranges of it
// are then used in place as operands and as result destinations, through the same non-owning
// device views that resident matrices give (core/resident_matrix.h): no host copy. The memory
// stays the other process's: it is never freed, spilled or moved here. Thread-safe.
#ifndef MATRIXD_CORE_IPC_MEMORY_H_
#define MATRIXD_CORE_IPC_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/matrix.h"
#include "core/resident_matrix.h"

namespace matrixd {

// The size of a cudaIpcMemHandle_t, as clients send it.
inline constexpr size_t kCudaIpcHandleBytes = 64;

class IpcMemory {
 public:
  virtual ~IpcMemory() = default;

  // The device the allocation lives on, an index into Backend::DeviceMemory().
  virtual int device_index() const = 0;
  // Where it lives, as ComputeStats::device.
  virtual std::string device() const = 0;
  // The bytes, from the start of the allocation, that may be used.
  virtual uint64_t byte_size() const = 0;

  // The rows x cols matrix of `dtype` at byte `offset`, in place: its view() is a kDevice view of
  // this memory, device_data() its address (an operation writes a result there), Write/Read copy
  // host bytes in and out. It is never spilled. REQUIRES: the range lies within byte_size(), the
  // offset is a multiple of the element size, and this IpcMemory outlives the matrix.
  virtual std::unique_ptr<ResidentMatrix> MatrixAt(uint64_t offset, int64_t rows, int64_t cols,
                                                   DType dtype) = 0;
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_IPC_MEMORY_H_
