// The seed paper's GPU schedule (sections 3.1 and 4.1): one kernel launch per condensation step,
// two device arrays swapped after each step, the pivots kept on the device. A one-block kernel
// picks the pivot of the first row and scales that row by the pivot's inverse; the step kernel
// then streams A into B once. Matrices are row-major (the paper stores them column-major; the
// step formula is symmetric in the two layouts, and row-major makes the first row, which the
// pivot search reads, contiguous and needs no transpose of the row-major input).
//
// With pivot p = a[0][l] and q[c] = a[0][c] / p, one step is
//   b[i][j] = s_j * (a[i+1][c_j] - a[i+1][l] * q[c_j]),  c_j = j + (j >= l),  s_j = j < l ? -1 : 1,
// and det(A) = p * det(B): subtracting q[c] times column l from every column c != l leaves e_l as
// the first row, expanding along it gives (-1)^l times the minor of (0, l), and negating the l
// columns left of l absorbs that sign. With the first-non-zero pivot q[c] = 0 for c < l and this
// is the paper's b[i][j] = -a[i+1][j]; with the closest-to-1 pivot the q terms must stay.
#ifndef MATRIXD_CORE_CUDA_CONDENSATION_STEPS_CUH_
#define MATRIXD_CORE_CUDA_CONDENSATION_STEPS_CUH_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/device_context.h"
#include "core/cuda/elimination_schedule.cuh"
#include "core/job_control.h"

namespace matrixd::cuda {

inline constexpr int kPivotRowThreads = 512;
inline constexpr int kStepThreads = 256;
inline constexpr int kStepColumnsPerThread = 4;
inline constexpr int kStepRowsPerBlock = 8;

// Picks the pivot of the order-m matrix a's first row, stores it and its column, and writes
// scaled_row[c] = a[0][c] / pivot. Sets *status when the row is zero. One block.
template <class Field>
__global__ void __launch_bounds__(kPivotRowThreads)
    PivotRowKernel(Field field, const typename Field::Value* __restrict__ a, int m,
                   typename Field::Value* __restrict__ scaled_row, int* __restrict__ pivot_column,
                   typename Field::Value* __restrict__ pivot, int* status) {
  using T = typename Field::Value;
  __shared__ PivotChoice scratch[kPivotRowThreads / 32];
  __shared__ T inverse;
  // Uniform: only this block writes *status, after the barrier inside BlockBest.
  if (*status != 0) return;
  PivotChoice best = NoPivot();
  for (int c = static_cast<int>(threadIdx.x); c < m; c += kPivotRowThreads) {
    const T v = a[c];
    if (!field.IsZero(v)) {
      const PivotChoice candidate{field.PivotScore(v), c, 0};
      if (Better(candidate, best)) best = candidate;
    }
  }
  best = BlockBest(best, scratch);
  if (best.column == kNoColumn) {
    if (threadIdx.x == 0) *status = 1;
    return;
  }
  if (threadIdx.x == 0) {
    const T p = a[best.column];
    inverse = field.Inverse(p);
    *pivot = p;
    *pivot_column = best.column;
  }
  __syncthreads();
  for (int c = static_cast<int>(threadIdx.x); c < m; c += kPivotRowThreads) {
    scaled_row[c] = field.Mul(a[c], inverse);
  }
}

// B = the condensation of the order-m matrix A (see the top of this file). Each thread keeps
// kStepColumnsPerThread entries of the scaled first row in registers and walks
// kStepRowsPerBlock rows; a warp reads and writes 32 consecutive entries of a row.
template <class Field>
__global__ void __launch_bounds__(kStepThreads)
    CondensationStepKernel(Field field, const typename Field::Value* __restrict__ a, int m,
                           const typename Field::Value* __restrict__ scaled_row,
                           const int* __restrict__ pivot_column,
                           typename Field::Value* __restrict__ b, const int* status) {
  using T = typename Field::Value;
  if (*status != 0) return;
  const int order = m - 1;
  const int l = *pivot_column;
  const int first = static_cast<int>(blockIdx.x) * kStepThreads * kStepColumnsPerThread +
                    static_cast<int>(threadIdx.x);
  int column[kStepColumnsPerThread];
  T scaled[kStepColumnsPerThread];
#pragma unroll
  for (int t = 0; t < kStepColumnsPerThread; ++t) {
    const int j = first + t * kStepThreads;
    column[t] = j + (j >= l ? 1 : 0);
    scaled[t] = j < order ? scaled_row[column[t]] : T{};
  }
  const int row_begin = static_cast<int>(blockIdx.y) * kStepRowsPerBlock;
  const int row_end = min(order, row_begin + kStepRowsPerBlock);
  for (int i = row_begin; i < row_end; ++i) {
    const T* row = a + static_cast<int64_t>(i + 1) * m;
    const T multiplier = row[l];
    T* out = b + static_cast<int64_t>(i) * order;
#pragma unroll
    for (int t = 0; t < kStepColumnsPerThread; ++t) {
      const int j = first + t * kStepThreads;
      if (j < order) {
        const T v = field.MulSub(row[column[t]], multiplier, scaled[t]);
        out[j] = j < l ? field.Negate(v) : v;
      }
    }
  }
}

// What one step shares between its two kernels, in device memory: the scaled first row (order m),
// the pivot's column, the slot for the pivot, and the zero-row flag.
template <typename T>
struct StepScratch {
  T* scaled_row;
  int* pivot_column;
  T* pivot;
  int* status;
};

// Bytes a step from order m reads and writes: the pivot-row kernel reads and writes one row; the
// step kernel reads the m x m matrix and writes the (m-1) x (m-1) one.
template <typename T>
uint64_t PivotRowBytes(int64_t m) {
  return 2 * static_cast<uint64_t>(m) * sizeof(T);
}
template <typename T>
uint64_t CondensationStepBytes(int64_t m) {
  return static_cast<uint64_t>(m * m + (m - 1) * (m - 1)) * sizeof(T);
}

// The launchers of one step: PivotRowKernel on the order-m matrix a, then (m >= 2)
// CondensationStepKernel from a into b. Each queues one kernel on `stream` and returns the launch
// status.
template <class Field>
absl::Status LaunchPivotRow(cudaStream_t stream, const Field& field, const typename Field::Value* a,
                            int64_t m, const StepScratch<typename Field::Value>& scratch) {
  PivotRowKernel<Field>
      <<<1, kPivotRowThreads, 0, stream>>>(field, a, static_cast<int>(m), scratch.scaled_row,
                                           scratch.pivot_column, scratch.pivot, scratch.status);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(PivotRowKernel<Field>);
  return absl::OkStatus();
}

template <class Field>
absl::Status LaunchCondensationStep(cudaStream_t stream, const Field& field,
                                    const typename Field::Value* a, int64_t m,
                                    const StepScratch<typename Field::Value>& scratch,
                                    typename Field::Value* b) {
  const int64_t rows = m - 1;
  const dim3 grid(static_cast<unsigned>((rows + kStepThreads * kStepColumnsPerThread - 1) /
                                        (kStepThreads * kStepColumnsPerThread)),
                  static_cast<unsigned>((rows + kStepRowsPerBlock - 1) / kStepRowsPerBlock));
  CondensationStepKernel<Field><<<grid, kStepThreads, 0, stream>>>(
      field, a, static_cast<int>(m), scratch.scaled_row, scratch.pivot_column, b, scratch.status);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(CondensationStepKernel<Field>);
  return absl::OkStatus();
}

// Condenses the n x n row-major matrix in `matrix` (overwritten) down to its n pivots, one
// kernel per step. Adds the work to *stats.
template <class Field>
absl::StatusOr<EliminationOutcome<typename Field::Value>> StepwiseElimination(
    DeviceContext& context, DeviceBuffer& matrix, int64_t n, const Field& field,
    JobControl* control, EliminationWork* stats) {
  using T = typename Field::Value;
  const cudaStream_t stream = context.stream();
  const size_t order = static_cast<size_t>(n - 1);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer other,
                           context.Allocate(std::max<size_t>(order * order, 1) * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer scaled_row,
                           context.Allocate(static_cast<size_t>(n) * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer pivots,
                           context.Allocate(static_cast<size_t>(n) * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer pivot_column, context.Allocate(sizeof(int)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer status, context.Allocate(sizeof(int)));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(status.data(), 0, sizeof(int), stream));

  MATRIXD_ASSIGN_OR_RETURN(CheckInPacer pacer, CheckInPacer::Create());

  T* current = matrix.as<T>();
  T* next = other.as<T>();
  for (int64_t m = n; m >= 1; --m) {
    const int64_t step = n - m;
    const StepScratch<T> scratch{scaled_row.as<T>(), pivot_column.as<int>(), pivots.as<T>() + step,
                                 status.as<int>()};
    MATRIXD_RETURN_IF_ERROR(LaunchPivotRow(stream, field, current, m, scratch));
    stats->bytes_moved += PivotRowBytes<T>(m);
    if (m == 1) break;
    const int64_t rows = m - 1;
    MATRIXD_RETURN_IF_ERROR(LaunchCondensationStep(stream, field, current, m, scratch, next));
    std::swap(current, next);
    stats->bytes_moved += CondensationStepBytes<T>(m);
    stats->flops += Field::kFlopsPerUpdate * static_cast<double>(rows) * static_cast<double>(rows);
    if ((step + 1) % kStepsPerCheckIn == 0) {
      MATRIXD_RETURN_IF_ERROR(pacer.CheckIn(stream, control, EliminationProgress(rows, n)));
    }
  }
  return CollectOutcome<T>(context, status, pivots, n);
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_CONDENSATION_STEPS_CUH_
