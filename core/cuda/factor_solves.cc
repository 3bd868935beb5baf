#include "core/cuda/factor_solves.h"

#include <algorithm>
#include <complex>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/status_macros.h"

namespace matrixd::cuda {

template <typename T>
absl::StatusOr<DeviceFactorSolves<T>> DeviceFactorSolves<T>::Lu(DeviceContext& context,
                                                                const T* factors, int64_t n,
                                                                int64_t lda,
                                                                std::span<const int> pivots) {
  if (static_cast<int64_t>(pivots.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("pivots has ", pivots.size(), " entries, want n = ", n));
  }
  // The swaps applied in turn to 0..n-1: (P b)[i] = b[rows[i]], as getrs's laswp applies them.
  std::vector<int> rows(static_cast<size_t>(n));
  std::iota(rows.begin(), rows.end(), 0);
  for (int64_t i = 0; i < n; ++i) {
    const int pivot = pivots[static_cast<size_t>(i)];
    if (pivot < i + 1 || pivot > n) {
      return absl::InvalidArgumentError(
          absl::StrCat("pivots[", i, "] is ", pivot, ", want it in [", i + 1, ", ", n, "]"));
    }
    std::swap(rows[static_cast<size_t>(i)], rows[static_cast<size_t>(pivot - 1)]);
  }
  DeviceFactorSolves solves(context, n);
  solves.host_rows_ = std::move(rows);
  solves.AddFactor({.a = factors, .n = n, .lda = lda, .lower = true, .unit_diagonal = true});
  solves.AddFactor({.a = factors, .n = n, .lda = lda, .lower = false, .unit_diagonal = false});
  solves.stages_ = {{.factor = 0, .adjoint = false}, {.factor = 1, .adjoint = false}};
  return solves;
}

template <typename T>
absl::StatusOr<DeviceFactorSolves<T>> DeviceFactorSolves<T>::Cholesky(DeviceContext& context,
                                                                      const T* factor, int64_t n,
                                                                      int64_t ld) {
  // A = R^H R: UpperTriangle's one stage (R) with a stage R^H put before it.
  MATRIXD_ASSIGN_OR_RETURN(DeviceFactorSolves solves, UpperTriangle(context, factor, n, ld));
  solves.stages_.insert(solves.stages_.begin(), Stage{.factor = 0, .adjoint = true});
  return solves;
}

template <typename T>
absl::StatusOr<DeviceFactorSolves<T>> DeviceFactorSolves<T>::UpperTriangle(DeviceContext& context,
                                                                           const T* r, int64_t n,
                                                                           int64_t ld) {
  DeviceFactorSolves solves(context, n);
  solves.AddFactor({.a = r, .n = n, .lda = ld, .lower = false, .unit_diagonal = false});
  solves.stages_ = {{.factor = 0, .adjoint = false}};
  return solves;
}

template <typename T>
absl::Status DeviceFactorSolves<T>::Prepare() {
  MATRIXD_ASSIGN_OR_RETURN(sync_, context_->Allocate(kTriangularSolveSyncBytes));
  // Zero once: every solve leaves the counters zero for the next.
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(sync_.data(), 0, kTriangularSolveSyncBytes, context_->stream()));
  constexpr int kBlock = kTriangularSolveBlock<T>;
  // Every factor's diagonal blocks in one launch (each factor's alone fills n / kBlock
  // multiprocessors).
  static_assert(kMaxInvertedTriangles >= 2);  // LU's L and U
  std::vector<DeviceTriangle<T>> triangles;
  std::vector<T*> inverses;
  for (Factor& factor : factors_) {
    MATRIXD_ASSIGN_OR_RETURN(
        factor.inverse,
        context_->Allocate(static_cast<size_t>(DiagonalInverseElements(n_, kBlock)) * sizeof(T)));
    triangles.push_back(factor.triangle);
    inverses.push_back(factor.inverse.template as<T>());
  }
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchInvertDiagonalBlocks(std::span<const DeviceTriangle<T>>(triangles), kBlock,
                                 std::span<T* const>(inverses), context_->stream()));
  if (near_tiles_ > 0) MATRIXD_RETURN_IF_ERROR(PrepareNearTiles());
  if (!host_rows_.empty()) {
    const size_t bytes = host_rows_.size() * sizeof(int);
    MATRIXD_ASSIGN_OR_RETURN(rows_, context_->Allocate(bytes));
    MATRIXD_RETURN_IF_ERROR(context_->Upload(host_rows_.data(), rows_, bytes));
    MATRIXD_ASSIGN_OR_RETURN(work_, context_->Allocate(static_cast<size_t>(n_) *
                                                       kMaxTriangularSolveColumns * sizeof(T)));
  }
  prepared_ = true;
  return absl::OkStatus();
}

template <typename T>
absl::Status DeviceFactorSolves<T>::PrepareNearTiles() {
  constexpr int kBlock = kTriangularSolveBlock<T>;
  // Only where the memory is there: without near tiles the solves are slower, not wrong.
  const size_t bytes = static_cast<size_t>(NearTileElements(n_, kBlock, near_tiles_)) * sizeof(T);
  std::vector<NearTileSet<T>> sets;
  for (Factor& factor : factors_) {
    for (const bool adjoint : {false, true}) {
      absl::StatusOr<DeviceBuffer> near = context_->Allocate(bytes);
      if (!near.ok()) return absl::OkStatus();
      factor.near[adjoint ? 1 : 0] = *std::move(near);
      sets.push_back({.triangle = factor.triangle,
                      .inverse = factor.inverse.template as<const T>(),
                      .adjoint = adjoint,
                      .near_tiles = factor.near[adjoint ? 1 : 0].template as<T>()});
    }
  }
  absl::StatusOr<DeviceBuffer> pointers = context_->Allocate(static_cast<size_t>(
      NearTileSetPointerBytes(n_, kBlock, near_tiles_, static_cast<int>(sets.size()))));
  if (!pointers.ok()) return absl::OkStatus();
  // Every factor's sets together: LU's four in two batched products.
  MATRIXD_CUDA_RETURN_IF_ERROR(
      ComputeNearTileSets(context_->cublas(), std::span<const NearTileSet<T>>(sets), kBlock,
                          near_tiles_, pointers->data(), context_->stream()));
  for (Factor& factor : factors_) factor.near_count = near_tiles_;
  return absl::OkStatus();
}

template <typename T>
absl::Status DeviceFactorSolves<T>::Solve(const Stage& stage, bool adjoint, const T* b, T* x,
                                          int columns) {
  const Factor& factor = factors_[static_cast<size_t>(stage.factor)];
  const bool op_adjoint = stage.adjoint != adjoint;
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchTriangularSolve(
      factor.triangle, kTriangularSolveBlock<T>, factor.inverse.template as<const T>(), op_adjoint,
      b, x, sync_.data(), context_->stream(),
      factor.near_count > 0 ? factor.near[op_adjoint ? 1 : 0].template as<const T>() : nullptr,
      factor.near_count, columns));
  return absl::OkStatus();
}

template <typename T>
absl::Status DeviceFactorSolves<T>::Apply(bool adjoint, void* x, int columns) {
  // A^-1 = ... op(F_2)^-1 op(F_1)^-1 P and A^-H = P^T op(F_1)^-H op(F_2)^-H ...: the permuted
  // vectors go through work_, and the solve next to the permutation moves them back. Up to
  // kMaxTriangularSolveColumns columns go through each chain together.
  if (!prepared_) MATRIXD_RETURN_IF_ERROR(Prepare());
  const bool permuted = !host_rows_.empty();
  const size_t count = stages_.size();
  for (int first = 0; first < columns; first += kMaxTriangularSolveColumns) {
    const int group = std::min(columns - first, kMaxTriangularSolveColumns);
    T* block = static_cast<T*>(x) + static_cast<int64_t>(first) * n_;
    T* current = block;
    if (permuted && !adjoint) {
      MATRIXD_CUDA_RETURN_IF_ERROR(LaunchPermuteVector<T>(block, rows_.as<const int>(), n_,
                                                          /*scatter=*/false, work_.as<T>(),
                                                          context_->stream(), group));
      current = work_.as<T>();
    }
    for (size_t k = 0; k < count; ++k) {
      const Stage& stage = adjoint ? stages_[count - 1 - k] : stages_[k];
      T* next = current;
      if (permuted && !adjoint && k + 1 == count) next = block;
      if (permuted && adjoint && k == 0) next = work_.as<T>();
      MATRIXD_RETURN_IF_ERROR(Solve(stage, adjoint, current, next, group));
      current = next;
    }
    if (permuted && adjoint) {
      MATRIXD_CUDA_RETURN_IF_ERROR(
          LaunchPermuteVector<T>(work_.as<const T>(), rows_.as<const int>(), n_,
                                 /*scatter=*/true, block, context_->stream(), group));
    }
  }
  return absl::OkStatus();
}

template class DeviceFactorSolves<float>;
template class DeviceFactorSolves<double>;
template class DeviceFactorSolves<std::complex<float>>;
template class DeviceFactorSolves<std::complex<double>>;

}  // namespace matrixd::cuda
