#include "core/cuda/condition.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <span>
#include <type_traits>
#include <vector>

#include "core/condition_estimate.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/factorize_common.h"
#include "core/cuda/norm_kernels.h"
#include "core/status_macros.h"

namespace matrixd::cuda {

template <typename T>
absl::StatusOr<DeviceOneNorm> DeviceOneNorm::Queue(DeviceContext& context, const T* a, int64_t rows,
                                                   int64_t cols, int64_t ld, bool upper_triangle) {
  MATRIXD_ASSIGN_OR_RETURN(
      DeviceBuffer sums,
      context.Allocate(static_cast<size_t>(std::max<int64_t>(cols, 1)) * sizeof(double)));
  MATRIXD_ASSIGN_OR_RETURN(KernelTimer timer, KernelTimer::Start(context.stream()));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchColumnAbsSums(a, rows, cols, ld, upper_triangle, sums.as<double>(), context.stream()));
  MATRIXD_RETURN_IF_ERROR(timer.Stop());
  const auto elements =
      static_cast<uint64_t>(upper_triangle ? std::min(rows, cols) * cols / 2 : rows * cols);
  return DeviceOneNorm(std::move(sums), cols, elements * sizeof(T), std::move(timer));
}

absl::StatusOr<double> DeviceOneNorm::Value(DeviceContext& context, ComputeStats* stats) {
  std::vector<double> sums(static_cast<size_t>(cols_));
  MATRIXD_RETURN_IF_ERROR(context.Download(sums_, sums.data(), sums.size() * sizeof(double)));
  MATRIXD_RETURN_IF_ERROR(timer_.AppendTo(stats, "one_norm", bytes_, static_cast<double>(bytes_)));
  stats->bytes_moved += bytes_;
  double norm = 0.0;
  // NaN propagates: a NaN column sum makes the norm NaN, which the estimate turns into rcond 0.
  for (const double sum : sums)
    norm = std::isnan(sum) || std::isnan(norm) ? NAN : std::max(norm, sum);
  return norm;
}

template <typename T>
absl::StatusOr<double> DeviceReciprocalCondition(DeviceContext& context, int64_t n, double one_norm,
                                                 DeviceInverseApply apply, ComputeStats* stats) {
  using Wide = std::conditional_t<kIsComplex<T>, std::complex<double>, double>;
  const size_t bytes = static_cast<size_t>(n) * sizeof(T);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer x, context.Allocate(bytes));
  std::vector<T> host(static_cast<size_t>(n));
  MATRIXD_ASSIGN_OR_RETURN(KernelTimer timer, KernelTimer::Start(context.stream()));
  int solves = 0;
  auto solve = [&](bool adjoint, std::span<Wide> v) -> absl::Status {
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<T>(v[i]);
    MATRIXD_RETURN_IF_ERROR(context.Upload(host.data(), x, bytes));
    MATRIXD_RETURN_IF_ERROR(apply(adjoint, x.data()));
    MATRIXD_RETURN_IF_ERROR(context.Download(x, host.data(), bytes));
    for (size_t i = 0; i < host.size(); ++i) v[i] = static_cast<Wide>(host[i]);
    ++solves;
    return absl::OkStatus();
  };
  MATRIXD_ASSIGN_OR_RETURN(const double rcond, EstimateReciprocalCondition<Wide>(
                                                   n, one_norm, InverseApply<Wide>(solve)));
  MATRIXD_RETURN_IF_ERROR(timer.Stop());
  // Each solve reads the n x n factors once (two triangles) and does n^2 multiply-adds.
  const double nd = static_cast<double>(n);
  const auto solve_bytes = static_cast<uint64_t>(solves * nd * nd * sizeof(T));
  const double solve_flops = solves * kFlopsPerUpdate<T> * nd * nd;
  stats->bytes_moved += solve_bytes;
  stats->flops += solve_flops;
  MATRIXD_RETURN_IF_ERROR(timer.AppendTo(stats, "condition_estimate", solve_bytes, solve_flops));
  return rcond;
}

#define MATRIXD_INSTANTIATE_CONDITION(T)                                                           \
  template absl::StatusOr<DeviceOneNorm> DeviceOneNorm::Queue<T>(DeviceContext&, const T*,         \
                                                                 int64_t, int64_t, int64_t, bool); \
  template absl::StatusOr<double> DeviceReciprocalCondition<T>(DeviceContext&, int64_t, double,    \
                                                               DeviceInverseApply, ComputeStats*);
MATRIXD_INSTANTIATE_CONDITION(float)
MATRIXD_INSTANTIATE_CONDITION(double)
MATRIXD_INSTANTIATE_CONDITION(std::complex<float>)
MATRIXD_INSTANTIATE_CONDITION(std::complex<double>)
#undef MATRIXD_INSTANTIATE_CONDITION

}  // namespace matrixd::cuda
