// The solves of the device condition estimator (core/cuda/condition.h) with factors already on
// the device: x := A^-1 x or A^-H x for A = P^T L U (getrf), A = U^H U (potrf, upper triangle) or
// A = R (upper triangular), by the bandwidth-bound triangular solves of
// core/cuda/triangular_solve.h (up to two vectors through one chain) instead of getrs / potrs /
// trsm (issue 15). The factors are only read and must outlive the object. Creating one queues no
// device work: the first Apply inverts the diagonal blocks, computes the near tiles of each
// triangle and operation (kDefaultNearTiles of them, none where their memory cannot be had) and
// uploads the permutation (so an estimate's timer counts them). Moved, never copied. T is float,
// double, std::complex<float> or std::complex<double>.
#ifndef MATRIXD_CORE_CUDA_FACTOR_SOLVES_H_
#define MATRIXD_CORE_CUDA_FACTOR_SOLVES_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/device_context.h"
#include "core/cuda/triangular_solve.h"

namespace matrixd::cuda {

// Near tiles each solve uses (core/cuda/triangular_solve.h): 2 takes the last two blocks' work
// off the chain from one block of x to the next (docs/benchmarks.md, issue 15).
inline constexpr int kDefaultNearTiles = 2;

template <typename T>
class DeviceFactorSolves {
 public:
  // getrf's factors of an n x n A: unit lower L and upper U in `factors` (leading dimension
  // lda), and its 1-based pivots `pivots` (LAPACK's ipiv, a host copy of n entries: rows i and
  // pivots[i] - 1 swapped in turn). InvalidArgument when a pivot is out of [i + 1, n].
  static absl::StatusOr<DeviceFactorSolves> Lu(DeviceContext& context, const T* factors, int64_t n,
                                               int64_t lda, std::span<const int> pivots);

  // potrf's factor with the upper triangle: A = U^H U, U in the upper triangle at `factor`.
  static absl::StatusOr<DeviceFactorSolves> Cholesky(DeviceContext& context, const T* factor,
                                                     int64_t n, int64_t ld);

  // A = R, the upper triangle (non-unit diagonal) of the n x n matrix at `r`.
  static absl::StatusOr<DeviceFactorSolves> UpperTriangle(DeviceContext& context, const T* r,
                                                          int64_t n, int64_t ld);

  // x := A^-1 x (adjoint false) or A^-H x (true) for an n x columns block at device address x,
  // column-major with leading dimension n, queued on the context's stream (DeviceInverseApply's
  // contract). Returns the first allocation, upload or launch error.
  absl::Status Apply(bool adjoint, void* x, int columns);

  // Near tiles for the solves from now on, 0 to kMaxNearTiles (benchmarks compare them).
  // REQUIRES: before the first Apply.
  void set_near_tiles(int near) { near_tiles_ = near; }

 private:
  // One triangular factor, the inverses of its diagonal blocks and its near tiles for op = N
  // (near[0]) and op = H (near[1]), near_count of each.
  struct Factor {
    DeviceTriangle<T> triangle = {};
    DeviceBuffer inverse = {};
    DeviceBuffer near[2] = {};
    int near_count = 0;
  };
  // A = P^T op(F_1) op(F_2) ...: factors_[stage.factor] with op = ^H when stage.adjoint.
  struct Stage {
    int factor = 0;
    bool adjoint = false;
  };

  DeviceFactorSolves(DeviceContext& context, int64_t n) : context_(&context), n_(n) {}

  void AddFactor(DeviceTriangle<T> triangle) { factors_.push_back(Factor{.triangle = triangle}); }
  // The device side, once: buffers, inverted diagonal blocks, near tiles, the permutation.
  absl::Status Prepare();
  // Every factor's near and near_count from its inverse, all in one ComputeNearTileSets (the
  // near_counts stay 0 without the memory).
  absl::Status PrepareNearTiles();
  // The solve of stage `stage` (its op flipped when `adjoint`), b to x, n x columns blocks
  // (columns <= kMaxTriangularSolveColumns).
  absl::Status Solve(const Stage& stage, bool adjoint, const T* b, T* x, int columns);

  DeviceContext* context_;
  int64_t n_;
  std::vector<Factor> factors_;
  std::vector<Stage> stages_;
  std::vector<int> host_rows_;  // P as a gather: (P b)[i] = b[rows[i]]; empty without pivots
  int near_tiles_ = kDefaultNearTiles;
  bool prepared_ = false;
  DeviceBuffer sync_;
  DeviceBuffer rows_;  // host_rows_ on the device
  DeviceBuffer work_;  // kMaxTriangularSolveColumns vectors, for the permuted solves
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_FACTOR_SOLVES_H_
