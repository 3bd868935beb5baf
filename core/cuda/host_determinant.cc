#include "core/cuda/host_determinant.h"

#include <chrono>

#include "core/cpu/determinant.h"

namespace matrixd::cuda {

bool DeterminantRunsOnHost(const MatrixView& a, const DeterminantOptions& options,
                           int64_t max_order) {
  return !a.on_device() && a.rows <= max_order && options.devices <= 1;
}

absl::StatusOr<DeterminantResult> HostDeterminant(const MatrixView& a,
                                                  const DeterminantOptions& options,
                                                  JobControl* control) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<DeterminantResult> result = cpu::Determinant(a, options, /*threads=*/1, control);
  if (!result.ok()) return result;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ComputeStats& stats = result->stats;
  stats.backend = "cuda";
  stats.device = kHostDeterminantDevice;
  stats.seconds = seconds;
  stats.kernels.push_back(KernelRecord{
      .kernel =
          result->method_used == DeterminantMethod::kCondensation ? "host_condensation" : "host_lu",
      .seconds = seconds,
      .bytes = stats.bytes_moved,
      .flops = stats.flops});
  return result;
}

}  // namespace matrixd::cuda
