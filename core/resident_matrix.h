// A matrix a backend keeps between operations (a "resident" matrix): in device memory on the CUDA
// backend, in host memory on the CPU backend. The server fills it once (Write), uses it as an
// operand any number of times (view), reads it back (Read), and may move it out of device memory
// under pressure (Spill) and back (Restore). Made by Backend::AllocateResident.
//
// Thread-safety: Writes of disjoint byte ranges may run at once (the parts of a parallel upload);
// otherwise the owner (server/resident_registry.h) serialises Write/Read/Spill/Restore and never
// spills a matrix while an operation uses its view or a Write is under way.
#ifndef MATRIXD_CORE_RESIDENT_MATRIX_H_
#define MATRIXD_CORE_RESIDENT_MATRIX_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "core/generator_entry.h"
#include "core/matrix.h"

namespace matrixd {

class DistributedResidentMatrix;

// How a resident matrix is stored: whole on one device (or the host), or dealt in blocks of rows
// over several GPUs (core/distributed_resident_matrix.h).
enum class ResidentLayout { kSingleDevice, kDistributed };

class ResidentMatrix {
 public:
  ResidentMatrix(int64_t rows, int64_t cols, DType dtype)
      : rows_(rows), cols_(cols), dtype_(dtype) {}
  virtual ~ResidentMatrix() = default;
  ResidentMatrix(const ResidentMatrix&) = delete;
  ResidentMatrix& operator=(const ResidentMatrix&) = delete;

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  DType dtype() const { return dtype_; }
  uint64_t byte_size() const {
    return static_cast<uint64_t>(rows_) * static_cast<uint64_t>(cols_) * ElementSize(dtype_);
  }

  // The device it lives on (an index into Backend::DeviceMemory()), or -1 for host memory.
  virtual int device_index() const = 0;
  // Where it lives, as ComputeStats::device ("cpu", "NVIDIA H100 80GB HBM3 (device 0)").
  virtual std::string device() const = 0;

  // Copies `bytes` into the matrix's packed row-major bytes at `offset`. INVALID_ARGUMENT when the
  // range does not fit. May return before the copy has landed: Flush() waits for it.
  virtual absl::Status Write(uint64_t offset, std::span<const std::byte> bytes) = 0;
  // Waits until every Write has landed; after OK, operations on any stream see the bytes.
  virtual absl::Status Flush() { return absl::OkStatus(); }
  // Copies the bytes at [offset, offset + out.size()) into `out`. INVALID_ARGUMENT when the range
  // does not fit. Works spilled or not.
  virtual absl::Status Read(uint64_t offset, std::span<std::byte> out) const = 0;

  // Device memory it holds now (0 on the host, or once spilled).
  virtual uint64_t device_bytes() const { return 0; }
  // True while its bytes are in host memory only although it belongs to a device.
  virtual bool spilled() const { return false; }
  // Moves the bytes to host memory and frees the device memory. No-op on the host or when spilled.
  virtual absl::Status Spill() { return absl::OkStatus(); }
  // Brings spilled bytes back to device memory. RESOURCE_EXHAUSTED when they do not fit.
  virtual absl::Status Restore() { return absl::OkStatus(); }

  // The device address of the bytes, for an operation that writes its result in place; null on
  // the host and while spilled.
  virtual std::byte* device_data() { return nullptr; }

  // The matrix as an operand: a host view, or (on a device, not spilled) a kDevice view.
  // REQUIRES: !spilled(). A distributed matrix has no one address: its view is a kDevice view of
  // its shape with null data, which only an operation that reads the parts takes.
  virtual MatrixView view() const = 0;

  // Whether GenerateInPlace computes the entries where the matrix lives (a device kernel), so
  // that a generated matrix need not cross from the host. False by default and while spilled.
  virtual bool GeneratesInPlace() const { return false; }
  // Writes generated entries (core/generator_entry.h): local row r is global row rows.Global(r)
  // of a matrix with cols() columns. May return before the entries have landed: Flush() waits.
  // REQUIRES: GeneratesInPlace(). UNIMPLEMENTED by default.
  virtual absl::Status GenerateInPlace(const GeneratorOptions& options, const GeneratedRows& rows);

  // The matrix's parts when it is distributed over several devices, else null.
  virtual const DistributedResidentMatrix* distributed() const { return nullptr; }
  ResidentLayout layout() const {
    return distributed() != nullptr ? ResidentLayout::kDistributed : ResidentLayout::kSingleDevice;
  }

 protected:
  // INVALID_ARGUMENT unless [offset, offset + bytes) lies within the matrix.
  absl::Status CheckRange(uint64_t offset, uint64_t bytes) const;

 private:
  const int64_t rows_;
  const int64_t cols_;
  const DType dtype_;
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_RESIDENT_MATRIX_H_
