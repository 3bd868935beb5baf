// The kernels around cuBLASMp and cuSOLVERMp on one rank's part of a 2-D block-cyclic matrix
// (square blocks, first block on process (0, 0), the part column-major with leading dimension
// `ld`): making a matrix in place from a seed, so that large distributed operands need no host
// transfer; reading the determinant's pieces off an LU factor's diagonal; comparing a part with
// the same matrix held whole. Each launcher queues its kernel on `stream` and returns the launch
// status (cudaGetLastError); none synchronises.
#ifndef MATRIXD_CORE_CUDA_BLOCK_CYCLIC_KERNELS_H_
#define MATRIXD_CORE_CUDA_BLOCK_CYCLIC_KERNELS_H_

#include <cuda_runtime.h>

#include <complex>
#include <cstdint>

namespace matrixd::cuda {

// One process's part of a rows x cols matrix dealt in block x block blocks over a grid_rows x
// grid_cols process grid; the process is at (grid_row, grid_col) and holds local_rows x local_cols
// elements at data[i + j * ld]. A whole matrix on one device is the 1 x 1 grid.
struct BlockCyclicPart {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t block = 1;
  int grid_rows = 1;
  int grid_cols = 1;
  int grid_row = 0;
  int grid_col = 0;
  int64_t local_rows = 0;
  int64_t local_cols = 0;
  int64_t ld = 1;
};

// What LaunchGenerate writes at global (i, j).
enum class GeneratedMatrix {
  kUniform,            // uniform in [-1, 1), a pure function of (seed, i, j)
  kReversedLaplacian,  // the tridiagonal (-1, 2, -1) matrix with its rows in reverse order: every
                       // elimination step must pivot; det = (-1)^floor(n/2) (n + 1)
};

// Writes the part's elements of `matrix`. The same (matrix, seed) gives the same global matrix on
// any grid, so a distributed result can be checked against a single-device one.
cudaError_t LaunchGenerate(const BlockCyclicPart& part, GeneratedMatrix matrix, uint64_t seed,
                           double* data, cudaStream_t stream);

// What LaunchDiagonalSummary adds up, as kDiagonalSummaryFields doubles (so that the ranks' sums
// travel in one all-reduce): [0] sum log|d| over the finite non-zero d, [1] the count of negative
// finite d (a complex matrix: the sum of arg(d) in radians, each in (-pi, pi], over the finite
// non-zero d), [2] the count of zero d, [3] of Inf or NaN d (a complex d: either part).
inline constexpr int kDiagonalSummaryFields = 4;

// Adds, over the global diagonal entries d = A(k, k) this part holds, the fields above to
// `summary`. The caller zeroes `summary` (kDiagonalSummaryFields doubles on the device) first.
cudaError_t LaunchDiagonalSummary(const BlockCyclicPart& part, const double* data, double* summary,
                                  cudaStream_t stream);
cudaError_t LaunchDiagonalSummary(const BlockCyclicPart& part, const std::complex<double>* data,
                                  double* summary, cudaStream_t stream);

// Sets result[0] = max |part(i, j) - whole(i, j)| over the part's elements and result[1] =
// max |whole(i, j)| over the same elements; NaN anywhere shows as a NaN. `whole` is the full
// rows x cols matrix, column-major with leading dimension part.rows, on the same device.
// `result` (2 doubles on the device) needs no zeroing.
cudaError_t LaunchCompareWithWhole(const BlockCyclicPart& part, const double* data,
                                   const double* whole, double* result, cudaStream_t stream);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_BLOCK_CYCLIC_KERNELS_H_
