#include "core/cuda/host_small_jobs.h"

#include <chrono>
#include <string>

#include "core/cpu/determinant.h"
#include "core/cpu/factorize.h"
#include "core/cpu/kernel_names.h"

namespace matrixd::cuda {
namespace {

// Runs `compute` (returning a StatusOr of a result with .stats) timed, and labels its stats as
// computed on the host by the CUDA backend, with the record cpu::KernelNameOf names where the
// CPU code timed none.
template <typename Compute>
auto OnHost(Compute compute) -> decltype(compute()) {
  const auto start = std::chrono::steady_clock::now();
  auto result = compute();
  if (!result.ok()) return result;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ComputeStats& stats = result->stats;
  stats.backend = "cuda";
  stats.device = kHostComputeDevice;
  stats.seconds = seconds;
  if (stats.kernels.empty()) {
    stats.kernels.push_back(KernelRecord{.kernel = cpu::KernelNameOf(*result),
                                         .seconds = seconds,
                                         .bytes = stats.bytes_moved,
                                         .flops = stats.flops});
  }
  for (KernelRecord& record : stats.kernels) record.kernel = "host_" + record.kernel;
  return result;
}

}  // namespace

bool DeterminantRunsOnHost(const MatrixView& a, const DeterminantOptions& options,
                           int64_t max_order) {
  return !a.on_device() && a.rows <= max_order && options.devices <= 1;
}

bool FactorizeRunsOnHost(const MatrixView& a, const FactorizeOptions& options,
                         const MatrixView* rhs, int64_t max_order) {
  return !a.on_device() && a.rows <= max_order && a.cols <= max_order && options.batch_count == 0 &&
         options.devices <= 1 && !options.keep_on_devices && !options.refine.enabled &&
         (rhs == nullptr || (!rhs->on_device() && rhs->cols <= max_order));
}

absl::StatusOr<DeterminantResult> HostDeterminant(const MatrixView& a,
                                                  const DeterminantOptions& options,
                                                  JobControl* control) {
  return OnHost([&] { return cpu::Determinant(a, options, /*threads=*/1, control); });
}

absl::StatusOr<FactorizeResult> HostFactorize(const MatrixView& a, const FactorizeOptions& options,
                                              const MatrixView* rhs, JobControl* control) {
  return OnHost([&] { return cpu::Factorize(a, options, rhs, /*threads=*/1, control); });
}

}  // namespace matrixd::cuda
