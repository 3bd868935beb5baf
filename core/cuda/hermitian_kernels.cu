#include <algorithm>
#include <complex>

#include "core/cuda/device_element.cuh"
#include "core/cuda/hermitian_kernels.h"

namespace matrixd::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpSize = 32;
constexpr int kTile = 32;
constexpr int kTileRows = 8;  // a tile's threads: kTile x kTileRows, each kTile / kTileRows rows
constexpr int kTileThreads = kTile * kTileRows;

// The most matrices one launch takes along the grid's y or z (its limit).
constexpr int64_t kMaxGridMembers = 65535;

// Matrix member0 + blockIdx.y of `count` entries at a + that times count.
template <typename E>
__global__ void __launch_bounds__(kThreads)
    LargestMagnitudeKernel(const E* __restrict__ a, int64_t count, int64_t member0,
                           unsigned long long* __restrict__ largest_bits) {
  const int64_t member = member0 + blockIdx.y;
  const E* m = a + member * count;
  double largest = 0.0;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * kThreads) {
    largest = fmax(largest, Magnitude(m[i]));
  }
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    largest = fmax(largest, __shfl_down_sync(0xffffffffu, largest, offset));
  }
  if (threadIdx.x % kWarpSize == 0) {
    atomicMax(largest_bits + member,
              static_cast<unsigned long long>(__double_as_longlong(largest)));
  }
}

// Block (bx, by) of matrix member0 + blockIdx.z compares its tile (by, bx) with the mirror of tile
// (bx, by), for bx >= by.
template <typename E>
__global__ void __launch_bounds__(kTileThreads)
    FirstMismatchKernel(const E* __restrict__ a, int64_t n, int64_t member0,
                        const unsigned long long* __restrict__ largest_bits, double factor,
                        unsigned long long* __restrict__ first) {
  if (blockIdx.x < blockIdx.y) return;
  const int64_t member = member0 + blockIdx.z;
  a += member * n * n;
  __shared__ E mirror[kTile][kTile + 1];
  const int64_t row0 = int64_t{blockIdx.y} * kTile;  // i of this tile
  const int64_t col0 = int64_t{blockIdx.x} * kTile;  // j of this tile
  // mirror[c][r] = A[col0 + r][row0 + c]: the tile's transpose, read row by row (coalesced).
  for (int r = threadIdx.y; r < kTile; r += kTileRows) {
    const int64_t i = col0 + r;
    const int64_t j = row0 + threadIdx.x;
    if (i < n && j < n) mirror[threadIdx.x][r] = a[i * n + j];
  }
  __syncthreads();
  const double tolerance =
      factor * __longlong_as_double(static_cast<long long>(largest_bits[member]));
  for (int r = threadIdx.y; r < kTile; r += kTileRows) {
    const int64_t i = row0 + r;
    const int64_t j = col0 + threadIdx.x;
    if (i >= n || j >= n || j < i) continue;
    const E upper = a[i * n + j];
    const E lower = mirror[r][threadIdx.x];  // A[j][i]
    if (Magnitude(Sub(upper, Conj(lower))) > tolerance) {
      atomicMin(first + member, static_cast<unsigned long long>(i * n + j));
    }
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchLargestMagnitude(const T* a, int64_t count, int64_t members,
                                   unsigned long long* largest_bits, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  using E = DeviceType<T>;
  const auto blocks =
      static_cast<unsigned>(std::min<int64_t>((count + kThreads - 1) / kThreads, 4096));
  for (int64_t member0 = 0; member0 < members; member0 += kMaxGridMembers) {
    const auto along = static_cast<unsigned>(std::min(members - member0, kMaxGridMembers));
    LargestMagnitudeKernel<E><<<dim3(blocks, along), kThreads, 0, stream>>>(
        reinterpret_cast<const E*>(a), count, member0, largest_bits);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchFirstHermitianMismatch(const T* a, int64_t n, int64_t members,
                                         const unsigned long long* largest_bits, double factor,
                                         unsigned long long* first, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  using E = DeviceType<T>;
  const auto tiles = static_cast<unsigned>((n + kTile - 1) / kTile);
  for (int64_t member0 = 0; member0 < members; member0 += kMaxGridMembers) {
    const auto along = static_cast<unsigned>(std::min(members - member0, kMaxGridMembers));
    FirstMismatchKernel<E><<<dim3(tiles, tiles, along), dim3(kTile, kTileRows), 0, stream>>>(
        reinterpret_cast<const E*>(a), n, member0, largest_bits, factor, first);
  }
  return cudaGetLastError();
}

#define MATRIXD_HERMITIAN_KERNELS(T)                                                              \
  template cudaError_t LaunchLargestMagnitude<T>(const T*, int64_t, int64_t, unsigned long long*, \
                                                 cudaStream_t);                                   \
  template cudaError_t LaunchFirstHermitianMismatch<T>(const T*, int64_t, int64_t,                \
                                                       const unsigned long long*, double,         \
                                                       unsigned long long*, cudaStream_t);
MATRIXD_HERMITIAN_KERNELS(float)
MATRIXD_HERMITIAN_KERNELS(double)
MATRIXD_HERMITIAN_KERNELS(std::complex<float>)
MATRIXD_HERMITIAN_KERNELS(std::complex<double>)
#undef MATRIXD_HERMITIAN_KERNELS

}  // namespace matrixd::cuda
