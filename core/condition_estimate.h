// Condition estimates from any factorization that can solve: Higham and Tisseur's block 1-norm
// estimator (SIAM J. Matrix Anal. Appl. 21(4), 2000, Algorithm 2.4; MATLAB's normest1), applied to
// A^-1 through solves with an n x t block of vectors at once (t = 2 by default), so that each
// solve is one BLAS-3 call with t right-hand sides. Backend-neutral: the estimator's control flow
// is written once here; the steps that touch n-vectors are an InverseNormBlock, which keeps the
// block wherever the solves run (HostInverseNormBlock below for host memory and a host solve; the
// CUDA backend's keeps it on the device, core/cuda/condition.h).
#ifndef MATRIXD_CORE_CONDITION_ESTIMATE_H_
#define MATRIXD_CORE_CONDITION_ESTIMATE_H_

#include <complex>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace matrixd {

// Columns of the block: t. Two is normest1's default (half the iterations of one column on hard
// matrices, and each solve with 2 right-hand sides costs about as much as with 1: it reads the
// factors once).
inline constexpr int kEstimateColumns = 2;
// The most columns a block may have (device kernels take their indices by value).
inline constexpr int kMaxEstimateColumns = 4;
// Higham and Tisseur's itmax: at most this many gradient steps, so at most 2 * 5 + 1 = 11 block
// solves (5 with A^-H, 6 with A^-1); 4 or 5 on most matrices.
inline constexpr int kMaxEstimateIterations = 5;
// The rows the estimator may ask SolveAdjoint for: t per step plus every row used before.
inline constexpr int kMaxRankedRows = kMaxEstimateColumns * (kMaxEstimateIterations + 1);

// A row of h (below) and its value.
struct RankedRow {
  double value = 0.0;
  int64_t row = 0;
};

// The n x t block X of the estimator and the steps that touch it; X and the sign block S live with
// the implementation (host memory, a device). Each step may fail with a status (a failing solve),
// which the estimate returns. Values that come back are doubles whatever the block's type.
class InverseNormBlock {
 public:
  virtual ~InverseNormBlock() = default;

  virtual int64_t rows() const = 0;
  virtual int columns() const = 0;
  // Real entries: signs are +-1 and the parallel-column tests apply. Complex: signs are z / |z|.
  virtual bool real() const = 0;

  // X := scale * the starting block (StartingEntry, core/condition_estimate_start.h).
  virtual absl::Status Start(double scale) = 0;
  // X(:, j) := scale * e_{rows[j]}, j < t.
  virtual absl::Status SetUnitColumns(std::span<const int64_t> rows, double scale) = 0;
  // Y := A^-1 X (in place), norms[j] := ||Y(:, j)||_1; then S_old := S, S := sign(Y) (real: +-1,
  // +1 for 0; complex: y / |y|, 1 below the smallest normal), and for real blocks
  // products[i t + j] := S(:, i)^T S_old(:, j), products[t^2 + i t + j] := S(:, i)^T S(:, j).
  virtual absl::Status Solve(std::span<double> norms, std::span<double> products) = 0;
  // Real blocks: S(:, column) := RandomSign(draw, .), and the products recomputed as in Solve.
  virtual absl::Status ResampleSigns(int column, uint64_t draw, std::span<double> products) = 0;
  // Z := A^-H (scale S) (in X's place), h_i := max_j |Z(i, j)|; largest := the largest.size()
  // rows of largest h_i in decreasing order (ties to the lower row, NaN below everything);
  // at[j] := h_{at_rows[j]}.
  virtual absl::Status SolveAdjoint(double scale, std::span<const int64_t> at_rows,
                                    std::span<double> at, std::span<RankedRow> largest) = 0;
};

// A lower bound of s ||A^-1||_1 for the block's n x n A, s = `scale` (a power of two), from at
// most 11 block solves: never above the true value by more than rounding; below it by a small
// factor on all but contrived matrices (Higham and Tisseur, sec. 4). +inf or NaN when a solve
// overflowed or divided by a zero pivot. `solves`, when given, receives the block solves done.
absl::StatusOr<double> EstimateScaledInverseOneNorm(InverseNormBlock& block, double scale,
                                                    int* solves = nullptr);

// 1 / (||A||_1 ||A^-1||_1) estimated as above, in [0, 1], with one_norm = ||A||_1 computed by the
// caller before the factorization overwrote A. The vectors are scaled by a power of two near
// one_norm before each solve, so that the solves overflow only when the condition number itself
// exceeds the double range. Returns 0 when one_norm is 0 or not finite, or when the estimate of
// ||A^-1||_1 is not finite (a zero pivot or a solve that overflowed): singular to working
// precision.
absl::StatusOr<double> EstimateReciprocalCondition(InverseNormBlock& block, double one_norm,
                                                   int* solves = nullptr);

// x := A^-1 x (adjoint false) or A^-H x (adjoint true; A^-T for real T), x an n x columns block
// stored row-major (x[i * columns + j]), in place. A failure status stops the estimate and is
// returned by it. T is double or std::complex<double>.
template <typename T>
using BlockInverseApply =
    absl::FunctionRef<absl::Status(bool adjoint, std::span<T> x, int columns)>;

// The block in host memory, solved by `apply`.
template <typename T>
class HostInverseNormBlock final : public InverseNormBlock {
 public:
  // REQUIRES: n >= 1, 1 <= columns <= kMaxEstimateColumns (capped at n).
  HostInverseNormBlock(int64_t n, BlockInverseApply<T> apply, int columns = kEstimateColumns);

  int64_t rows() const override { return n_; }
  int columns() const override { return t_; }
  bool real() const override;
  absl::Status Start(double scale) override;
  absl::Status SetUnitColumns(std::span<const int64_t> rows, double scale) override;
  absl::Status Solve(std::span<double> norms, std::span<double> products) override;
  absl::Status ResampleSigns(int column, uint64_t draw, std::span<double> products) override;
  absl::Status SolveAdjoint(double scale, std::span<const int64_t> at_rows, std::span<double> at,
                            std::span<RankedRow> largest) override;

 private:
  void SignProducts(std::span<double> products) const;

  int64_t n_;
  int t_;
  BlockInverseApply<T> apply_;
  std::vector<T> x_;      // row-major n x t
  std::vector<T> s_;      // row-major n x t
  std::vector<T> s_old_;  // row-major n x t
};

// EstimateInverseOneNorm / EstimateReciprocalCondition of a host solve, through a
// HostInverseNormBlock of `columns` columns.
template <typename T>
absl::StatusOr<double> EstimateInverseOneNorm(int64_t n, BlockInverseApply<T> apply,
                                              int columns = kEstimateColumns);
template <typename T>
absl::StatusOr<double> EstimateReciprocalCondition(int64_t n, double one_norm,
                                                   BlockInverseApply<T> apply,
                                                   int columns = kEstimateColumns);

extern template class HostInverseNormBlock<double>;
extern template class HostInverseNormBlock<std::complex<double>>;
extern template absl::StatusOr<double> EstimateInverseOneNorm<double>(int64_t,
                                                                      BlockInverseApply<double>,
                                                                      int);
extern template absl::StatusOr<double> EstimateInverseOneNorm<std::complex<double>>(
    int64_t, BlockInverseApply<std::complex<double>>, int);
extern template absl::StatusOr<double> EstimateReciprocalCondition<double>(
    int64_t, double, BlockInverseApply<double>, int);
extern template absl::StatusOr<double> EstimateReciprocalCondition<std::complex<double>>(
    int64_t, double, BlockInverseApply<std::complex<double>>, int);

}  // namespace matrixd

#endif  // MATRIXD_CORE_CONDITION_ESTIMATE_H_
