// A factorization that stays on the GPUs that computed it (Factorize with
// FactorizeOptions::keep_on_devices: over several GPUs core/multi_gpu/kept_factorization.h, on
// one core/cuda/kept_factorization.h) instead of coming back to host memory, so that one larger
// than host memory or a gRPC message can be kept and solved with, and none crosses PCIe twice.
// It is a resident matrix: its factor (n x n; LU's packed factors, or Cholesky's L with zeros
// above the diagonal), read back row-major on demand (Read gathers the rows asked for), never
// written, never spilled. Kept in parts over several GPUs, its view is a device view of its shape
// with null data, which only its own Solve takes (FactorizationView::kept); kept whole on one
// device (whole_on_one_device()), its view and permutation() are device views of its parts in
// FactorizeResult's layouts, which any Solve on that device reads in place (WithKeptParts,
// core/factorization.h). Thread-safe: Read and Solve may be called at once.
#ifndef MATRIXD_CORE_DEVICE_FACTORIZATION_H_
#define MATRIXD_CORE_DEVICE_FACTORIZATION_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "core/matrix.h"
#include "core/resident_matrix.h"

namespace matrixd {

// core/operations.h, which includes this header, defines it.
enum class FactorizationKind;

// The device memory a kept factorization holds on one device (an index into
// Backend::DeviceMemory()).
struct DevicePart {
  int device_index = 0;
  uint64_t bytes = 0;
};

class DeviceFactorization : public ResidentMatrix {
 public:
  DeviceFactorization(int64_t n, DType dtype, FactorizationKind kind)
      : ResidentMatrix(n, n, dtype), kind_(kind) {}

  FactorizationKind kind() const { return kind_; }
  // Every device holding a part, in the order of the GPUs it was computed on, with the bytes it
  // holds there (its part of the factor and what solving needs kept beside it).
  virtual std::vector<DevicePart> Parts() const = 0;
  // X with A X = rhs (rhs: n rows of the factorization's dtype, host memory or a device view).
  // REQUIRES: CheckSolve (core/factorization.h) passed. INTERNAL for CUDA and library errors;
  // RESOURCE_EXHAUSTED when the right-hand side's parts do not fit.
  virtual absl::StatusOr<Matrix> Solve(const MatrixView& rhs) = 0;

  // True when it lies whole on one device in FactorizeResult's layouts: view() is then a device
  // view of the row-major factor (with data) and permutation() LU's permutation beside it.
  virtual bool whole_on_one_device() const { return false; }
  // LU's permutation (1 x n INT64, 0-based, FactorizeResult::permutation) as a device view, when
  // whole_on_one_device(); a null view otherwise and for Cholesky.
  virtual MatrixView permutation() const { return {}; }

  // FAILED_PRECONDITION: a kept factorization is made by Factorize, not written.
  absl::Status Write(uint64_t offset, std::span<const std::byte> bytes) override;
  // A null-data device view of its shape (see whole_on_one_device for the other).
  MatrixView view() const override;

 private:
  const FactorizationKind kind_;
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_DEVICE_FACTORIZATION_H_
