#include "core/cpu/cpu_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cpu/copy_bandwidth.h"
#include "core/cpu/determinant.h"
#include "core/cpu/factorize.h"
#include "core/cpu/kernel_names.h"
#include "core/cpu/lapack_types.h"
#include "core/cpu/library_versions.h"
#include "core/cpu/multiply.h"
#include "core/cpu/permanent.h"
#include "core/cpu/resident_matrix.h"
#include "core/cpu/solve.h"
#include "core/status_macros.h"

namespace matrixd {
namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(int threads, std::string state_dir)
      : threads_(threads), state_dir_(std::move(state_dir)), versions_(cpu::CpuLibraryVersions()) {}

  std::string_view name() const override { return "cpu"; }
  std::string device() const override { return absl::StrCat("cpu (", threads_, " threads)"); }
  std::vector<std::pair<std::string, std::string>> Versions() const override { return versions_; }
  bool ComputesOnHost() const override { return true; }

  // LAPACKE and CBLAS take 32-bit dimensions; batches are looped over here, any length.
  absl::Status Supports(const OperationQuery& query) const override {
    if (absl::Status s = Backend::Supports(query); !s.ok()) return s;
    return CheckBackendLimits(
        query, {.backend = "cpu",
                .max_permanent_order = cpu::kMaxPermanentOrder,
                .max_dimension = std::min<int64_t>(std::numeric_limits<lapack_int>::max(),
                                                   std::numeric_limits<blasint>::max()),
                .max_batch_count = std::numeric_limits<int64_t>::max()});
  }

  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    return Timed([&] { return cpu::Determinant(a, options, threads_, control); });
  }
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    return Timed([&] { return cpu::Factorize(a, options, rhs, threads_, control); });
  }
  absl::StatusOr<SolveResult> Solve(const FactorizationView& factorization, const MatrixView& rhs,
                                    const SolveOptions& options, JobControl* control) override {
    return Timed([&] { return cpu::Solve(factorization, rhs, options, control); });
  }
  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override {
    return Timed([&] { return cpu::Multiply(a, b, options, threads_, control); });
  }
  absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                            JobControl* control) override {
    return Timed([&] { return cpu::Permanent(a, options, threads_, control, state_dir_); });
  }

  absl::StatusOr<std::unique_ptr<ResidentMatrix>> AllocateResident(int64_t rows, int64_t cols,
                                                                   DType dtype,
                                                                   int /*device_index*/) override {
    return cpu::MakeHostResidentMatrix(rows, cols, dtype);
  }

  absl::StatusOr<std::vector<DeviceCopyBandwidth>> MeasureCopyBandwidth() override {
    MATRIXD_ASSIGN_OR_RETURN(double bandwidth, cpu::MeasureCopyBandwidth());
    return std::vector<DeviceCopyBandwidth>{{.device = device(), .bytes_per_second = bandwidth}};
  }

 private:
  // Runs `op` lazily so that the clock covers exactly the computation.
  template <typename Op>
  auto Timed(Op&& op) -> decltype(op()) {
    const auto start = std::chrono::steady_clock::now();
    auto result = op();
    if (result.ok()) {
      result->stats.backend = "cpu";
      result->stats.device = device();
      result->stats.seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      // No finer timing on the CPU: one record for the whole operation.
      if (result->stats.kernels.empty()) {
        result->stats.kernels.push_back({.kernel = cpu::KernelNameOf(*result),
                                         .seconds = result->stats.seconds,
                                         .bytes = result->stats.bytes_moved,
                                         .flops = result->stats.flops});
      }
    }
    return result;
  }

  int threads_;
  std::string state_dir_;
  std::vector<std::pair<std::string, std::string>> versions_;
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(const CpuBackendOptions& options) {
  int threads = options.threads;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::make_unique<CpuBackend>(threads, options.state_dir);
}

}  // namespace matrixd
