// The small kernels of the block condition estimator on the device (core/condition_estimate.h,
// DeviceInverseNormBlock in core/cuda/condition.cc): the steps between two solves that touch the
// n x t block of vectors, so that the block stays on the device and only a few scalars come back
// per solve. Blocks are column-major with leading dimension n. Every reduction runs in a fixed
// order (no atomics): repeated estimates are bit-identical. Each launcher queues its kernel on
// `stream` and returns the launch status; none synchronises. T is float, double,
// std::complex<float> or std::complex<double>; values that come back are doubles.
#ifndef MATRIXD_CORE_CUDA_CONDITION_KERNELS_H_
#define MATRIXD_CORE_CUDA_CONDITION_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace matrixd::cuda {

// Up to this many rows by value (the block's unit columns, the rows whose h is asked for).
struct EstimateRows {
  int64_t row[4] = {0, 0, 0, 0};
  int count = 0;
};
// The most rows LaunchEstimateLargestRows ranks (kMaxRankedRows of core/condition_estimate.h).
inline constexpr int kMaxEstimateRanked = 24;

// x := scale * the starting block (StartingEntry, core/condition_estimate_start.h).
template <typename T>
cudaError_t LaunchEstimateStart(T* x, int64_t n, int t, double scale, cudaStream_t stream);

// x := scale * [e_{rows.row[0]}, ..., e_{rows.row[t-1]}].
template <typename T>
cudaError_t LaunchEstimateUnitColumns(T* x, int64_t n, int t, EstimateRows rows, double scale,
                                      cudaStream_t stream);

// norms[j] := ||x(:, j)||_1, j < t; s := sign(x) (+-1 for real T, +1 for 0 and NaN -> -1 as
// the host's x >= 0 test; z / |z| for complex T, 1 where |z| is below the smallest normal
// double); and for real T with products non-null, the sign products of
// LaunchEstimateSignProducts below of the new s against s_old, in the same launch. s and s_old
// must not overlap; s_old is not read for complex T or null products.
template <typename T>
cudaError_t LaunchEstimateSolveSummary(const T* x, const T* s_old, int64_t n, int t, double* norms,
                                       T* s, double* products, cudaStream_t stream);

// Real T only: products[i t + j] := s(:, i)^T s_old(:, j), products[t^2 + i t + j] :=
// s(:, i)^T s(:, j), exact for +-1 entries.
template <typename T>
cudaError_t LaunchEstimateSignProducts(const T* s, const T* s_old, int64_t n, int t,
                                       double* products, cudaStream_t stream);

// s(:, column) := RandomSign(draw, .) (core/condition_estimate_start.h). Real T only.
template <typename T>
cudaError_t LaunchEstimateResample(T* s, int64_t n, int column, uint64_t draw, cudaStream_t stream);

// x := scale * s, n * t elements.
template <typename T>
cudaError_t LaunchEstimateScaledCopy(const T* s, T* x, int64_t elements, double scale,
                                     cudaStream_t stream);

// With h_i := max_j |x(i, j)| (NaN when any is NaN), in one block: values[r], rows[r] for r <
// count the rows of the `count` largest h_i, larger first, NaN below everything, ties to the lower
// row (as the host block ranks them); at[j] := h_{at_rows.row[j]}, j < at_rows.count.
// REQUIRES: count <= min(n, kMaxEstimateRanked).
template <typename T>
cudaError_t LaunchEstimateLargestRows(const T* x, int64_t n, int t, int count, EstimateRows at_rows,
                                      double* values, int64_t* rows, double* at,
                                      cudaStream_t stream);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_CONDITION_KERNELS_H_
