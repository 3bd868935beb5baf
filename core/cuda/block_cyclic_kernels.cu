#include <cmath>
#include <cstdint>

#include "core/cuda/block_cyclic_kernels.h"

namespace matrixd::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 15;

// ScaLAPACK's INDXL2G for square blocks and source process 0.
__device__ int64_t GlobalIndex(int64_t local, int64_t block, int procs, int coord) {
  return ((local / block) * procs + coord) * block + local % block;
}

// splitmix64's finaliser over a key mixing (seed, i, j): a uniform 64-bit value per element.
__device__ uint64_t HashElement(uint64_t seed, int64_t i, int64_t j) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(i) * 0xD1B54A32D192ED03ULL +
               static_cast<uint64_t>(j) * 0x8CB92BA72F3D8DD7ULL;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return x;
}

__device__ double Element(GeneratedMatrix matrix, uint64_t seed, int64_t n, int64_t i, int64_t j) {
  if (matrix == GeneratedMatrix::kUniform) {
    return static_cast<double>(HashElement(seed, i, j) >> 11) * 0x1.0p-52 - 1.0;
  }
  const int64_t row = n - 1 - i;  // row i holds row n-1-i of the tridiagonal matrix
  if (row == j) return 2.0;
  if (row - j == 1 || j - row == 1) return -1.0;
  return 0.0;
}

__global__ void GenerateKernel(BlockCyclicPart part, GeneratedMatrix matrix, uint64_t seed,
                               double* data) {
  const int64_t count = part.local_rows * part.local_cols;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < count;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t li = e % part.local_rows;
    const int64_t lj = e / part.local_rows;
    const int64_t i = GlobalIndex(li, part.block, part.grid_rows, part.grid_row);
    const int64_t j = GlobalIndex(lj, part.block, part.grid_cols, part.grid_col);
    data[li + lj * part.ld] = Element(matrix, seed, part.rows, i, j);
  }
}

__device__ double WarpSum(double v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

__device__ unsigned long long WarpMax(unsigned long long v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const unsigned long long other = __shfl_down_sync(0xffffffffu, v, offset);
    v = other > v ? other : v;
  }
  return v;
}

// A diagonal entry's share of the summary fields, for real (double) and complex (double2) LU
// factors: whether it is zero or finite, log|d|, and field [1]'s term (negative: 1; complex: arg).
__device__ bool IsZero(double d) { return d == 0.0; }
__device__ bool IsZero(double2 d) { return d.x == 0.0 && d.y == 0.0; }
__device__ bool IsFinite(double d) { return isfinite(d); }
__device__ bool IsFinite(double2 d) { return isfinite(d.x) && isfinite(d.y); }
__device__ double LogAbs(double d) { return log(fabs(d)); }
__device__ double LogAbs(double2 d) { return log(hypot(d.x, d.y)); }
__device__ double SignTerm(double d) { return d < 0.0 ? 1.0 : 0.0; }
__device__ double SignTerm(double2 d) { return atan2(d.y, d.x); }

// One thread per global diagonal index; the owner of A(k, k) is process (kb mod P, kb mod Q) for
// the block kb = k / block. One atomic per warp and quantity.
template <typename T>
__global__ void DiagonalSummaryKernel(BlockCyclicPart part, const T* data, double* summary) {
  const int64_t n = part.rows < part.cols ? part.rows : part.cols;
  double log_sum = 0.0;
  double signs = 0.0;
  double zeros = 0.0;
  double nonfinite = 0.0;
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < n;
       k += int64_t{gridDim.x} * blockDim.x) {
    const int64_t kb = k / part.block;
    if (kb % part.grid_rows != part.grid_row || kb % part.grid_cols != part.grid_col) continue;
    const int64_t offset = k % part.block;
    const int64_t li = (kb / part.grid_rows) * part.block + offset;
    const int64_t lj = (kb / part.grid_cols) * part.block + offset;
    const T d = data[li + lj * part.ld];
    if (IsZero(d)) {
      zeros += 1.0;
    } else if (!IsFinite(d)) {
      nonfinite += 1.0;
    } else {
      log_sum += LogAbs(d);
      signs += SignTerm(d);
    }
  }
  log_sum = WarpSum(log_sum);
  signs = WarpSum(signs);
  zeros = WarpSum(zeros);
  nonfinite = WarpSum(nonfinite);
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&summary[0], log_sum);
    atomicAdd(&summary[1], signs);
    atomicAdd(&summary[2], zeros);
    atomicAdd(&summary[3], nonfinite);
  }
}

// Non-negative doubles (and NaN, whose bits are above +inf's) order as their bit patterns, so the
// maxima are unsigned integer maxima and a NaN wins.
__global__ void CompareWithWholeKernel(BlockCyclicPart part, const double* data,
                                       const double* whole, unsigned long long* result) {
  const int64_t count = part.local_rows * part.local_cols;
  unsigned long long max_difference = 0;
  unsigned long long max_reference = 0;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < count;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t li = e % part.local_rows;
    const int64_t lj = e / part.local_rows;
    const int64_t i = GlobalIndex(li, part.block, part.grid_rows, part.grid_row);
    const int64_t j = GlobalIndex(lj, part.block, part.grid_cols, part.grid_col);
    const double reference = whole[i + j * part.rows];
    const unsigned long long difference = static_cast<unsigned long long>(
        __double_as_longlong(fabs(data[li + lj * part.ld] - reference)));
    const unsigned long long magnitude =
        static_cast<unsigned long long>(__double_as_longlong(fabs(reference)));
    max_difference = difference > max_difference ? difference : max_difference;
    max_reference = magnitude > max_reference ? magnitude : max_reference;
  }
  max_difference = WarpMax(max_difference);
  max_reference = WarpMax(max_reference);
  if (threadIdx.x % 32 == 0) {
    atomicMax(&result[0], max_difference);
    atomicMax(&result[1], max_reference);
  }
}

int BlocksFor(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

template <typename T>
cudaError_t LaunchDiagonalSummaryOf(const BlockCyclicPart& part, const T* data, double* summary,
                                    cudaStream_t stream) {
  const int64_t n = part.rows < part.cols ? part.rows : part.cols;
  if (n == 0) return cudaSuccess;
  DiagonalSummaryKernel<<<BlocksFor(n), kThreads, 0, stream>>>(part, data, summary);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchGenerate(const BlockCyclicPart& part, GeneratedMatrix matrix, uint64_t seed,
                           double* data, cudaStream_t stream) {
  const int64_t count = part.local_rows * part.local_cols;
  if (count == 0) return cudaSuccess;
  GenerateKernel<<<BlocksFor(count), kThreads, 0, stream>>>(part, matrix, seed, data);
  return cudaGetLastError();
}

cudaError_t LaunchDiagonalSummary(const BlockCyclicPart& part, const double* data, double* summary,
                                  cudaStream_t stream) {
  return LaunchDiagonalSummaryOf(part, data, summary, stream);
}

cudaError_t LaunchDiagonalSummary(const BlockCyclicPart& part, const std::complex<double>* data,
                                  double* summary, cudaStream_t stream) {
  return LaunchDiagonalSummaryOf(part, reinterpret_cast<const double2*>(data), summary, stream);
}

cudaError_t LaunchCompareWithWhole(const BlockCyclicPart& part, const double* data,
                                   const double* whole, double* result, cudaStream_t stream) {
  auto* bits = reinterpret_cast<unsigned long long*>(result);
  if (cudaError_t code = cudaMemsetAsync(bits, 0, 2 * sizeof(double), stream);
      code != cudaSuccess) {
    return code;
  }
  const int64_t count = part.local_rows * part.local_cols;
  if (count == 0) return cudaSuccess;
  CompareWithWholeKernel<<<BlocksFor(count), kThreads, 0, stream>>>(part, data, whole, bits);
  return cudaGetLastError();
}

}  // namespace matrixd::cuda
