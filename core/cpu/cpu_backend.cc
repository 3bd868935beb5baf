#include "core/cpu/cpu_backend.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/cpu/determinant.h"
#include "core/cpu/factorize.h"
#include "core/cpu/multiply.h"
#include "core/cpu/permanent.h"

namespace matrixd {
namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads) {}

  std::string_view name() const override { return "cpu"; }
  std::string device() const override { return absl::StrCat("cpu (", threads_, " threads)"); }

  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    return Timed([&] { return cpu::Determinant(a, options, control); });
  }
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, FactorizationKind kind,
                                            const MatrixView* rhs, JobControl* control) override {
    return Timed([&] { return cpu::Factorize(a, kind, rhs, control); });
  }
  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override {
    return Timed([&] { return cpu::Multiply(a, b, options, control); });
  }
  absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                            JobControl* control) override {
    return Timed([&] { return cpu::Permanent(a, options, threads_, control); });
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
    }
    return result;
  }

  int threads_;
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(const CpuBackendOptions& options) {
  int threads = options.threads;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::make_unique<CpuBackend>(threads);
}

}  // namespace matrixd
