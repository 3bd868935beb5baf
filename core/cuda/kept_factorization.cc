#include "core/cuda/kept_factorization.h"

#include <cuda_runtime.h>

#include <string>
#include <utility>
#include <vector>

#include "core/cuda/cuda_status.h"
#include "core/cuda/solve.h"
#include "core/factorization.h"
#include "core/status_macros.h"

namespace matrixd::cuda {
namespace {

class OneDeviceFactorization final : public DeviceFactorization {
 public:
  OneDeviceFactorization(FactorizationKind kind, int64_t n, DType dtype, DeviceBuffer factor,
                         DeviceBuffer permutation, TransferChannel& channel)
      : DeviceFactorization(n, dtype, kind),
        channel_(channel),
        factor_(std::move(factor)),
        permutation_(std::move(permutation)) {}

  ~OneDeviceFactorization() override {
    // Freed with the device current, on the stream they were made on; whoever solved with them
    // has returned (the owner guarantees it), so nothing reads them any more.
    static_cast<void>(channel_.Run([&](DeviceContext&) {
      factor_ = DeviceBuffer();
      permutation_ = DeviceBuffer();
      return absl::OkStatus();
    }));
  }

  int device_index() const override { return channel_.device_index(); }
  std::string device() const override { return channel_.description(); }

  absl::Status Read(uint64_t offset, std::span<std::byte> out) const override {
    MATRIXD_RETURN_IF_ERROR(CheckRange(offset, out.size()));
    if (out.empty()) return absl::OkStatus();
    return channel_.Run([&](DeviceContext& context) {
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out.data(), factor_.as<std::byte>() + offset,
                                                   out.size(), cudaMemcpyDefault,
                                                   context.stream()));
      return context.Synchronize();
    });
  }

  uint64_t device_bytes() const override { return factor_.bytes() + permutation_.bytes(); }
  std::vector<DevicePart> Parts() const override {
    return {{.device_index = device_index(), .bytes = device_bytes()}};
  }

  absl::StatusOr<Matrix> Solve(const MatrixView& rhs) override {
    FactorizationView kept;
    kept.kind = kind();
    kept.factor = view();
    kept.kept = this;
    const FactorizationView f = WithKeptParts(kept);
    absl::StatusOr<SolveResult> solved = absl::InternalError("not solved");
    MATRIXD_RETURN_IF_ERROR(channel_.Run([&](DeviceContext& context) {
      solved = cuda::Solve(f, rhs, {}, context, /*control=*/nullptr);
      return absl::OkStatus();
    }));
    if (!solved.ok()) return solved.status();
    return std::move(solved->x);
  }

  bool whole_on_one_device() const override { return true; }
  MatrixView view() const override { return OnDevice(factor_, rows(), cols(), dtype()); }
  MatrixView permutation() const override {
    if (permutation_.data() == nullptr) return {};
    return OnDevice(permutation_, 1, rows(), DType::kInt64);
  }

 private:
  MatrixView OnDevice(const DeviceBuffer& buffer, int64_t rows, int64_t cols, DType dtype) const {
    return {.rows = rows,
            .cols = cols,
            .dtype = dtype,
            .data = buffer.as<const std::byte>(),
            .space = MemorySpace::kDevice,
            .device = channel_.device_index()};
  }

  TransferChannel& channel_;
  DeviceBuffer factor_;
  DeviceBuffer permutation_;  // LU's; empty for Cholesky
};

}  // namespace

bool KeepsOnDevice(const MatrixView& a, const FactorizeOptions& options) {
  return options.keep_on_devices && options.batch_count == 0 && !options.refine.enabled &&
         a.rows == a.cols &&
         (options.kind == FactorizationKind::kLu || options.kind == FactorizationKind::kCholesky);
}

absl::StatusOr<std::unique_ptr<DeviceFactorization>> KeepFactorization(
    FactorizationKind kind, int64_t n, DType dtype, DeviceBuffer factor,
    std::span<const int64_t> permutation, DeviceContext& context, TransferChannel& channel) {
  DeviceBuffer device_permutation;
  if (kind == FactorizationKind::kLu) {
    MATRIXD_ASSIGN_OR_RETURN(device_permutation, context.Allocate(permutation.size_bytes()));
    MATRIXD_RETURN_IF_ERROR(
        context.Upload(permutation.data(), device_permutation, permutation.size_bytes()));
  }
  // The parts are read on other streams from now on (the channel's, solves' own).
  MATRIXD_RETURN_IF_ERROR(context.Synchronize());
  return std::unique_ptr<DeviceFactorization>(new OneDeviceFactorization(
      kind, n, dtype, std::move(factor), std::move(device_permutation), channel));
}

}  // namespace matrixd::cuda
