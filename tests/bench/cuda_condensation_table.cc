// Condensation on the GPU: one step kernel of the seed paper's schedule against the copy kernel
// moving the same bytes in the same run, then whole condensation determinants, fused (several
// steps per pass) and one kernel per step, next to LU.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/cuda/condensation.h"
#include "core/cuda/condensation_step_timing.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/elimination.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"
#include "tests/bench/cuda_device_timing.h"

namespace matrixd::bench {
namespace {

std::string Milliseconds(double s) { return std::isnan(s) ? "-" : Significant(1e3 * s); }

void BenchCondensationStep(cuda::DeviceContext& context, const Flags& flags) {
  const int n = flags.step_n;
  const Matrix a = RandomMatrix(n, n, DType::kFloat64, 500 + n);
  absl::StatusOr<cuda::DeviceBuffer> resident = UploadMatrix(context, a);
  absl::StatusOr<cuda::CondensationStepTiming> step =
      resident.ok() ? cuda::TimeCondensationStep(context, *resident, n, flags.repeats)
                    : absl::StatusOr<cuda::CondensationStepTiming>(resident.status());
  const double bytes = 8.0 * (static_cast<double>(n) * n + static_cast<double>(n - 1) * (n - 1));
  // The copy reads half of the step's bytes and writes the other half.
  const absl::StatusOr<double> copy =
      TimeCopyKernel(context, static_cast<size_t>(bytes / 2), flags.repeats);
  PrintHeader(
      absl::StrCat("One condensation step kernel (seed paper's schedule), float64, n = ", n),
      "what                            time(ms)   GB/s      of copy",
      {absl::StrCat("bytes the step must move: 8 (n^2 read + (n-1)^2 written) = ",
                    Significant(bytes / 1e6), " MB; GB/s = those bytes / kernel time"),
       "kernels: those of CondensationDeterminantUnfused (core/cuda/condensation_steps.cuh) on a "
       "resident random matrix; copy kernel: cuda::LaunchCopy moving the same bytes, this run",
       "target: step kernel >= 70% of the copy kernel's bandwidth"});
  if (!step.ok()) {
    std::printf("step timing failed: %s\n", std::string(step.status().ToString()).c_str());
  }
  const double copy_seconds = copy.ok() ? *copy : NAN;
  const double step_seconds = step.ok() ? step->step_seconds : NAN;
  const double pivot_seconds = step.ok() ? step->pivot_row_seconds : NAN;
  const auto row = [&](const char* what, double seconds, double moved) {
    const double rate = moved / seconds;
    std::printf("%-31s %-10s %-9s %s\n", what, Milliseconds(seconds).c_str(),
                Rate(moved, seconds, 1e9).c_str(), Percent(rate, bytes / copy_seconds).c_str());
  };
  row("copy kernel (same bytes)", copy_seconds, bytes);
  if (!copy.ok()) std::printf("  copy failed: %s\n", std::string(copy.status().ToString()).c_str());
  row("condensation step kernel", step_seconds, bytes);
  std::printf("%-31s %-10s %-9s %s\n", "pivot-row kernel (one block)",
              Milliseconds(pivot_seconds).c_str(), "-", "-");
  row("step + pivot row", step_seconds + pivot_seconds, bytes);
}

// Device seconds of the condensation alone (cuda::CondensePivots) on a resident copy of a,
// restored before each run.
absl::StatusOr<double> ResidentCondensation(cuda::DeviceContext& context, const Matrix& a,
                                            cuda::Schedule schedule, int repeats) {
  absl::StatusOr<cuda::DeviceBuffer> pristine = UploadMatrix(context, a);
  if (!pristine.ok()) return pristine.status();
  absl::StatusOr<cuda::DeviceBuffer> work = context.Allocate(a.byte_size());
  if (!work.ok()) return work.status();
  cuda::EliminationWork done;
  return TimeOnDevice(
      context, repeats,
      [&]() -> absl::Status {
        MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(work->data(), pristine->data(), a.byte_size(),
                                                     cudaMemcpyDeviceToDevice, context.stream()));
        return absl::OkStatus();
      },
      [&]() -> absl::Status {
        absl::StatusOr<cuda::CondensationPivots> pivots =
            cuda::CondensePivots(context, *work, a.rows(), /*complex=*/false, schedule,
                                 /*control=*/nullptr, &done);
        if (!pivots.ok()) return pivots.status();
        if (pivots->singular) return absl::InternalError("a random matrix condensed to zero");
        return absl::OkStatus();
      });
}

void BenchCondensationDeterminants(Backend& gpu, cuda::DeviceContext& context, const Flags& flags) {
  PrintHeader(
      "Condensation determinant, float64: fused vs one kernel per step (seed paper), next to LU",
      "n      fused ours(s)  unfused ours(s)  fused resident(s)  unfused resident(s)  "
      "unfused/fused  LU ours(s)  LU device part(s)",
      {"fused ours: backend call with method kCondensation (upload + row scaling + condensation, "
       "several steps fused per pass); unfused ours: cuda::CondensationDeterminantUnfused, the "
       "same with one kernel launch per step",
       "resident: the condensation alone (cuda::CondensePivots, blocked or stepwise schedule) on a "
       "matrix already on the device, restored untimed before each run; unfused/fused: of those",
       "LU: backend call with method kLu, and its device part (scale_rows + cusolver_getrf)"});
  for (const int n : flags.condensation_sizes) {
    const Matrix a = RandomMatrix(n, n, DType::kFloat64, 600 + n);
    DeterminantOptions condensation;
    condensation.method = DeterminantMethod::kCondensation;
    DeterminantOptions lu;
    lu.method = DeterminantMethod::kLu;
    const Timing fused = TimeOperation(
        flags.repeats, [&] { return gpu.Determinant(a.view(), condensation, nullptr); });
    const absl::StatusOr<double> unfused =
        TimeOnDevice(context, flags.repeats, NoPreparation, [&]() -> absl::Status {
          return cuda::CondensationDeterminantUnfused(a.view(), context, nullptr).status();
        });
    const absl::StatusOr<double> fused_resident =
        ResidentCondensation(context, a, cuda::Schedule::kBlocked, flags.repeats);
    const absl::StatusOr<double> unfused_resident =
        ResidentCondensation(context, a, cuda::Schedule::kStepwise, flags.repeats);
    const Timing by_lu =
        TimeOperation(flags.repeats, [&] { return gpu.Determinant(a.view(), lu, nullptr); });
    std::printf("%-6d %-14s %-16s %-18s %-20s %-14s %-11s %s\n", n, Seconds(fused.seconds).c_str(),
                OrError(unfused, Seconds).c_str(), OrError(fused_resident, Seconds).c_str(),
                OrError(unfused_resident, Seconds).c_str(),
                Ratio(unfused_resident.ok() ? *unfused_resident : NAN,
                      fused_resident.ok() ? *fused_resident : NAN)
                    .c_str(),
                Seconds(by_lu.seconds).c_str(), Seconds(by_lu.device).c_str());
    for (const Timing* t : {&fused, &by_lu}) {
      if (!t->error.empty()) std::printf("  failed: %s\n", t->error.c_str());
    }
  }
}

}  // namespace

void BenchCondensation(Backend& gpu, cuda::DeviceContext& context, const Flags& flags) {
  BenchCondensationStep(context, flags);
  BenchCondensationDeterminants(gpu, context, flags);
}

}  // namespace matrixd::bench
