#include "core/cuda/condition.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <span>
#include <type_traits>
#include <vector>

#include "core/condition_estimate.h"
#include "core/cuda/condition_kernels.h"
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
  if (timer_.has_value()) {
    MATRIXD_RETURN_IF_ERROR(
        timer_->AppendTo(stats, "one_norm", bytes_, static_cast<double>(bytes_)));
    stats->bytes_moved += bytes_;
  }
  double norm = 0.0;
  // NaN propagates: a NaN column sum makes the norm NaN, which the estimate turns into rcond 0.
  for (const double sum : sums)
    norm = std::isnan(sum) || std::isnan(norm) ? NAN : std::max(norm, sum);
  return norm;
}

namespace {

// The estimator's block on the device: X (the vectors solved), S and S_old (sign blocks), all
// column-major n x t, and two small result areas, downloaded after each solve. Between a solve
// and its download runs one kernel: LaunchEstimateSolveSummary after A^-1,
// LaunchEstimateLargestRows after A^-H.
template <typename T>
class DeviceInverseNormBlock final : public InverseNormBlock {
 public:
  static absl::StatusOr<DeviceInverseNormBlock> Create(DeviceContext& context, int64_t n,
                                                       DeviceInverseApply apply, int columns) {
    const int t =
        static_cast<int>(std::min<int64_t>(std::clamp(columns, 1, kMaxEstimateColumns), n));
    const size_t bytes = static_cast<size_t>(n) * t * sizeof(T);
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer x, context.Allocate(bytes));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer s, context.Allocate(bytes));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer s_old, context.Allocate(bytes));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer solved, context.Allocate(sizeof(SolveSummary)));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer ranked, context.Allocate(sizeof(AdjointSummary)));
    // S starts as zero (the first Solve makes it S_old): nothing is parallel to it.
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(s.data(), 0, bytes, context.stream()));
    return DeviceInverseNormBlock(context, n, t, apply, std::move(x), std::move(s),
                                  std::move(s_old), std::move(solved), std::move(ranked));
  }

  int64_t rows() const override { return n_; }
  int columns() const override { return t_; }
  bool real() const override { return !kIsComplex<T>; }

  absl::Status Start(double scale) override {
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchEstimateStart(x_.as<T>(), n_, t_, scale, stream()));
    return absl::OkStatus();
  }

  absl::Status SetUnitColumns(std::span<const int64_t> rows, double scale) override {
    MATRIXD_CUDA_RETURN_IF_ERROR(
        LaunchEstimateUnitColumns(x_.as<T>(), n_, t_, RowsOf(rows), scale, stream()));
    return absl::OkStatus();
  }

  absl::Status Solve(std::span<double> norms, std::span<double> products) override {
    MATRIXD_RETURN_IF_ERROR(apply_(false, x_.data(), t_));
    std::swap(s_, s_old_);
    auto* summary = solved_.as<SolveSummary>();
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchEstimateSolveSummary(
        x_.as<const T>(), s_old_.as<const T>(), n_, t_, summary->norms, s_.as<T>(),
        kIsComplex<T> ? nullptr : summary->products, stream()));
    return DownloadSolveSummary(norms, products);
  }

  absl::Status ResampleSigns(int column, uint64_t draw, std::span<double> products) override {
    if constexpr (!kIsComplex<T>) {
      MATRIXD_CUDA_RETURN_IF_ERROR(LaunchEstimateResample(s_.as<T>(), n_, column, draw, stream()));
      MATRIXD_CUDA_RETURN_IF_ERROR(
          LaunchEstimateSignProducts(s_.as<const T>(), s_old_.as<const T>(), n_, t_,
                                     solved_.as<SolveSummary>()->products, stream()));
    }
    std::array<double, kMaxEstimateColumns> norms{};
    return DownloadSolveSummary(std::span<double>(norms.data(), static_cast<size_t>(t_)), products);
  }

  absl::Status SolveAdjoint(double scale, std::span<const int64_t> at_rows, std::span<double> at,
                            std::span<RankedRow> largest) override {
    MATRIXD_CUDA_RETURN_IF_ERROR(
        LaunchEstimateScaledCopy(s_.as<const T>(), x_.as<T>(), n_ * t_, scale, stream()));
    MATRIXD_RETURN_IF_ERROR(apply_(true, x_.data(), t_));
    auto* summary = ranked_.as<AdjointSummary>();
    const int count = static_cast<int>(largest.size());
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchEstimateLargestRows(x_.as<const T>(), n_, t_, count,
                                                           RowsOf(at_rows), summary->values,
                                                           summary->rows, summary->at, stream()));
    AdjointSummary host;
    MATRIXD_RETURN_IF_ERROR(context_->Download(ranked_, &host, sizeof(host)));
    for (int r = 0; r < count; ++r)
      largest[r] = RankedRow{.value = host.values[r], .row = host.rows[r]};
    std::copy_n(host.at, at.size(), at.begin());
    return absl::OkStatus();
  }

 private:
  struct SolveSummary {
    double norms[kMaxEstimateColumns];
    double products[2 * kMaxEstimateColumns * kMaxEstimateColumns];
  };
  struct AdjointSummary {
    double values[kMaxEstimateRanked];
    int64_t rows[kMaxEstimateRanked];
    double at[kMaxEstimateColumns];
  };
  static_assert(kMaxEstimateRanked == kMaxRankedRows);

  DeviceInverseNormBlock(DeviceContext& context, int64_t n, int t, DeviceInverseApply apply,
                         DeviceBuffer x, DeviceBuffer s, DeviceBuffer s_old, DeviceBuffer solved,
                         DeviceBuffer ranked)
      : context_(&context),
        n_(n),
        t_(t),
        apply_(apply),
        x_(std::move(x)),
        s_(std::move(s)),
        s_old_(std::move(s_old)),
        solved_(std::move(solved)),
        ranked_(std::move(ranked)) {}

  cudaStream_t stream() const { return context_->stream(); }

  static EstimateRows RowsOf(std::span<const int64_t> rows) {
    EstimateRows out;
    out.count = static_cast<int>(rows.size());
    std::copy(rows.begin(), rows.end(), out.row);
    return out;
  }

  // The norms and (real T) the sign products, queued before, come back.
  absl::Status DownloadSolveSummary(std::span<double> norms, std::span<double> products) {
    SolveSummary host{};
    MATRIXD_RETURN_IF_ERROR(context_->Download(solved_, &host, sizeof(host)));
    std::copy_n(host.norms, norms.size(), norms.begin());
    if constexpr (!kIsComplex<T>) std::copy_n(host.products, products.size(), products.begin());
    return absl::OkStatus();
  }

  DeviceContext* context_;
  int64_t n_;
  int t_;
  DeviceInverseApply apply_;
  DeviceBuffer x_;
  DeviceBuffer s_;
  DeviceBuffer s_old_;
  DeviceBuffer solved_;
  DeviceBuffer ranked_;
};

}  // namespace

template <typename T>
absl::StatusOr<double> DeviceReciprocalCondition(DeviceContext& context, int64_t n, double one_norm,
                                                 DeviceInverseApply apply, ComputeStats* stats,
                                                 int columns, int* solves_done) {
  MATRIXD_ASSIGN_OR_RETURN(KernelTimer timer, KernelTimer::Start(context.stream()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceInverseNormBlock<T> block,
                           DeviceInverseNormBlock<T>::Create(context, n, apply, columns));
  int solves = 0;
  MATRIXD_ASSIGN_OR_RETURN(const double rcond,
                           EstimateReciprocalCondition(block, one_norm, &solves));
  if (solves_done != nullptr) *solves_done = solves;
  MATRIXD_RETURN_IF_ERROR(timer.Stop());
  // Each block solve reads the n x n factors once (two triangles) and does n^2 multiply-adds per
  // right-hand side.
  const double nd = static_cast<double>(n);
  const double vectors = block.columns();
  const auto solve_bytes = static_cast<uint64_t>(solves * nd * nd * sizeof(T));
  const double solve_flops = solves * vectors * kFlopsPerUpdate<T> * nd * nd;
  stats->bytes_moved += solve_bytes;
  stats->flops += solve_flops;
  MATRIXD_RETURN_IF_ERROR(timer.AppendTo(stats, "condition_estimate", solve_bytes, solve_flops));
  return rcond;
}

#define MATRIXD_INSTANTIATE_CONDITION(T)                                                           \
  template absl::StatusOr<DeviceOneNorm> DeviceOneNorm::Queue<T>(DeviceContext&, const T*,         \
                                                                 int64_t, int64_t, int64_t, bool); \
  template absl::StatusOr<double> DeviceReciprocalCondition<T>(                                    \
      DeviceContext&, int64_t, double, DeviceInverseApply, ComputeStats*, int, int*);
MATRIXD_INSTANTIATE_CONDITION(float)
MATRIXD_INSTANTIATE_CONDITION(double)
MATRIXD_INSTANTIATE_CONDITION(std::complex<float>)
MATRIXD_INSTANTIATE_CONDITION(std::complex<double>)
#undef MATRIXD_INSTANTIATE_CONDITION

}  // namespace matrixd::cuda
