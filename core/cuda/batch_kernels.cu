#include <algorithm>

#include "core/cuda/batch_kernels.h"
#include "core/cuda/device_element.cuh"
#include "core/cuda/element_bits.cuh"

namespace matrixd::cuda {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU several times over; larger batches loop (grid-stride).
constexpr int64_t kMaxBlocks = int64_t{1} << 16;

unsigned Blocks(int64_t count) {
  return static_cast<unsigned>(
      std::clamp<int64_t>((count + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

// The index of this thread in a grid-stride loop, and the stride.
__device__ __forceinline__ int64_t FirstIndex() {
  return blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
}
__device__ __forceinline__ int64_t GridStride() { return int64_t{gridDim.x} * blockDim.x; }

__global__ void FillPointersKernel(void** pointers, char* base, size_t stride_bytes,
                                   int64_t count) {
  for (int64_t b = FirstIndex(); b < count; b += GridStride()) {
    pointers[b] = base + static_cast<size_t>(b) * stride_bytes;
  }
}

// One thread per element of dst, so that the writes are coalesced; the strided reads stay
// within one small matrix and hit the cache. Batches are moved once per factorization, next to
// PCIe transfers many times slower, so no shared-memory tiling.
template <typename E>
__global__ void BatchedTransposeKernel(const E* __restrict__ src, int64_t rows, int64_t cols,
                                       int64_t count, E* __restrict__ dst) {
  const int64_t size = rows * cols;
  for (int64_t o = FirstIndex(); o < count; o += GridStride()) {
    const int64_t b = o / size;
    const int64_t within = o - b * size;
    const int64_t i = within / cols;  // dst element (j, i) sits at j + i * cols
    const int64_t j = within - i * cols;
    dst[o] = src[b * size + i + j * rows];
  }
}

template <typename E>
__global__ void BatchedZeroStrictTriangleKernel(E* data, int64_t rows, int64_t cols, int64_t count,
                                                bool upper) {
  const int64_t size = rows * cols;
  for (int64_t o = FirstIndex(); o < count; o += GridStride()) {
    const int64_t within = o % size;
    const int64_t r = within / cols;
    const int64_t c = within - r * cols;
    if (upper ? c > r : c < r) data[o] = E{};
  }
}

template <typename E>
__global__ void BatchedUpperTriangleKernel(const E* __restrict__ factors, int64_t rows,
                                           int64_t cols, int64_t k, int64_t count,
                                           E* __restrict__ r) {
  for (int64_t o = FirstIndex(); o < count; o += GridStride()) {
    const int64_t b = o / (k * cols);
    const int64_t within = o - b * k * cols;
    const int64_t i = within / cols;
    const int64_t j = within - i * cols;
    r[o] = j >= i ? factors[b * rows * cols + i + j * rows] : E{};
  }
}

// ---- Arithmetic beyond device_element.cuh (float2/double2 as complex numbers) ----

__device__ __forceinline__ float Mul(float a, float b) { return a * b; }
__device__ __forceinline__ double Mul(double a, double b) { return a * b; }
__device__ __forceinline__ float2 Mul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ __forceinline__ double2 Mul(double2 a, double2 b) {
  return make_double2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
// conj(a) * b.
__device__ __forceinline__ float ConjMul(float a, float b) { return a * b; }
__device__ __forceinline__ double ConjMul(double a, double b) { return a * b; }
__device__ __forceinline__ float2 ConjMul(float2 a, float2 b) {
  return make_float2(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
}
__device__ __forceinline__ double2 ConjMul(double2 a, double2 b) {
  return make_double2(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
}
__device__ __forceinline__ bool IsZero(float a) { return a == 0.0f; }
__device__ __forceinline__ bool IsZero(double a) { return a == 0.0; }
__device__ __forceinline__ bool IsZero(float2 a) { return a.x == 0.0f && a.y == 0.0f; }
__device__ __forceinline__ bool IsZero(double2 a) { return a.x == 0.0 && a.y == 0.0; }
__device__ __forceinline__ bool IsFinite(float a) { return isfinite(a); }
__device__ __forceinline__ bool IsFinite(double a) { return isfinite(a); }
__device__ __forceinline__ bool IsFinite(float2 a) { return isfinite(a.x) && isfinite(a.y); }
__device__ __forceinline__ bool IsFinite(double2 a) { return isfinite(a.x) && isfinite(a.y); }

// ---- Q from the reflectors ----

// One thread per column j of Q: Q e_j = H(0) H(1) ... H(j) e_j (H(i) e_j = e_j for i > j, since
// v_i is zero above row i), applied right to left in the output itself. Q is row-major, so the
// threads of a warp (consecutive j) read and write consecutive addresses; v_i and tau are read
// by all threads of one matrix at once.
template <typename E>
__global__ void BatchedFormQKernel(const E* __restrict__ factors, const E* __restrict__ tau,
                                   int rows, int cols, int k, int64_t count, E* __restrict__ q) {
  for (int64_t t = FirstIndex(); t < count; t += GridStride()) {
    const int64_t b = t / k;
    const int j = static_cast<int>(t - b * k);
    const E* v = factors + b * rows * cols;
    const E* tau_b = tau + b * k;
    E* x = q + b * rows * k + j;  // x[r * k] is Q[r, j]
    for (int r = 0; r < rows; ++r) x[int64_t{r} * k] = r == j ? One<E>() : Zero<E>();
    for (int i = j; i >= 0; --i) {
      // H(i) x = x - tau_i v_i (v_i^H x), v_i[i] = 1.
      const E* v_i = v + int64_t{i} * rows;
      E s = x[int64_t{i} * k];
      for (int r = i + 1; r < rows; ++r) s = Add(s, ConjMul(v_i[r], x[int64_t{r} * k]));
      const E scaled = Mul(tau_b[i], s);
      x[int64_t{i} * k] = Sub(x[int64_t{i} * k], scaled);
      for (int r = i + 1; r < rows; ++r) {
        x[int64_t{r} * k] = Sub(x[int64_t{r} * k], Mul(v_i[r], scaled));
      }
    }
  }
}

template <typename T>
cudaError_t FormQ(const T* factors, const T* tau, int rows, int cols, int k, int64_t batch, T* q,
                  cudaStream_t stream) {
  using E = DeviceType<T>;
  const int64_t count = batch * k;
  if (count == 0) return cudaSuccess;
  BatchedFormQKernel<E><<<Blocks(count), kThreads, 0, stream>>>(
      reinterpret_cast<const E*>(factors), reinterpret_cast<const E*>(tau), rows, cols, k, count,
      reinterpret_cast<E*>(q));
  return cudaGetLastError();
}

// ---- Finiteness ----

// Every exponent bit set: Inf or NaN. Each warp takes the minimum of its lanes' first hits and
// one lane lowers the global minimum, so a finite operand (the usual case) costs no atomics.
template <typename Bits>
__global__ void FirstNonFiniteKernel(const Bits* __restrict__ data, int64_t count, Bits exponent,
                                     uint64_t base, unsigned long long* first) {
  unsigned long long mine = ~0ull;
  for (int64_t i = FirstIndex(); i < count; i += GridStride()) {
    if ((data[i] & exponent) == exponent) {
      mine = base + static_cast<uint64_t>(i);
      break;  // later indices of this thread are larger
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const unsigned long long other = __shfl_down_sync(0xffffffffu, mine, offset);
    mine = other < mine ? other : mine;
  }
  if ((threadIdx.x & 31) == 0 && mine != ~0ull) atomicMin(first, mine);
}

// ---- LU summary ----

// One thread per matrix: the pivots replayed on the identity, and the first zero pivot.
template <typename E>
__global__ void BatchedLuSummaryKernel(const E* __restrict__ lu, const int* __restrict__ ipiv,
                                       int n, int64_t batch, int64_t* __restrict__ permutation,
                                       int* __restrict__ singular_column,
                                       int* __restrict__ nonfinite) {
  for (int64_t b = FirstIndex(); b < batch; b += GridStride()) {
    const E* a = lu + b * n * n;
    const int* pivots = ipiv + b * n;
    int64_t* p = permutation + b * n;
    for (int i = 0; i < n; ++i) p[i] = i;
    for (int i = 0; i < n; ++i) {
      const int other = pivots[i] - 1;
      if (other < 0 || other >= n) continue;  // never from getrf; keeps a bad pivot in bounds
      const int64_t swapped = p[i];
      p[i] = p[other];
      p[other] = swapped;
    }
    int column = -1;
    for (int j = 0; j < n && column < 0; ++j) {
      if (IsZero(a[j + int64_t{j} * n])) column = j;
    }
    int bad = 0;
    if (column >= 0) {
      for (int64_t e = 0; e < int64_t{n} * n && bad == 0; ++e) bad = IsFinite(a[e]) ? 0 : 1;
    }
    singular_column[b] = column;
    nonfinite[b] = bad;
  }
}

template <typename T>
cudaError_t LuSummary(const T* lu, const int* ipiv, int n, int64_t batch, int64_t* permutation,
                      int* singular_column, int* nonfinite, cudaStream_t stream) {
  using E = DeviceType<T>;
  if (batch == 0) return cudaSuccess;
  BatchedLuSummaryKernel<E><<<Blocks(batch), kThreads, 0, stream>>>(
      reinterpret_cast<const E*>(lu), ipiv, n, batch, permutation, singular_column, nonfinite);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchFillPointers(void** pointers, void* base, size_t stride_bytes, int64_t count,
                               cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  FillPointersKernel<<<Blocks(count), kThreads, 0, stream>>>(pointers, static_cast<char*>(base),
                                                             stride_bytes, count);
  return cudaGetLastError();
}

cudaError_t LaunchBatchedTranspose(const void* src, int64_t rows, int64_t cols, int64_t batch,
                                   void* dst, size_t element_size, cudaStream_t stream) {
  const int64_t count = rows * cols * batch;
  if (count == 0) return cudaSuccess;
  return ForElementSize(element_size, [&](auto bits) {
    using E = decltype(bits);
    BatchedTransposeKernel<E><<<Blocks(count), kThreads, 0, stream>>>(
        static_cast<const E*>(src), rows, cols, count, static_cast<E*>(dst));
    return cudaGetLastError();
  });
}

cudaError_t LaunchBatchedZeroStrictTriangle(void* data, int64_t rows, int64_t cols, int64_t batch,
                                            size_t element_size, Triangle triangle,
                                            cudaStream_t stream) {
  const int64_t count = rows * cols * batch;
  if (count == 0) return cudaSuccess;
  return ForElementSize(element_size, [&](auto bits) {
    using E = decltype(bits);
    BatchedZeroStrictTriangleKernel<E><<<Blocks(count), kThreads, 0, stream>>>(
        static_cast<E*>(data), rows, cols, count, triangle == Triangle::kUpper);
    return cudaGetLastError();
  });
}

cudaError_t LaunchBatchedUpperTriangle(const void* factors, int64_t rows, int64_t cols, int64_t k,
                                       int64_t batch, void* r, size_t element_size,
                                       cudaStream_t stream) {
  const int64_t count = k * cols * batch;
  if (count == 0) return cudaSuccess;
  return ForElementSize(element_size, [&](auto bits) {
    using E = decltype(bits);
    BatchedUpperTriangleKernel<E><<<Blocks(count), kThreads, 0, stream>>>(
        static_cast<const E*>(factors), rows, cols, k, count, static_cast<E*>(r));
    return cudaGetLastError();
  });
}

cudaError_t LaunchBatchedFormQ(const float* factors, const float* tau, int rows, int cols, int k,
                               int64_t batch, float* q, cudaStream_t stream) {
  return FormQ(factors, tau, rows, cols, k, batch, q, stream);
}
cudaError_t LaunchBatchedFormQ(const double* factors, const double* tau, int rows, int cols, int k,
                               int64_t batch, double* q, cudaStream_t stream) {
  return FormQ(factors, tau, rows, cols, k, batch, q, stream);
}
cudaError_t LaunchBatchedFormQ(const std::complex<float>* factors, const std::complex<float>* tau,
                               int rows, int cols, int k, int64_t batch, std::complex<float>* q,
                               cudaStream_t stream) {
  return FormQ(factors, tau, rows, cols, k, batch, q, stream);
}
cudaError_t LaunchBatchedFormQ(const std::complex<double>* factors, const std::complex<double>* tau,
                               int rows, int cols, int k, int64_t batch, std::complex<double>* q,
                               cudaStream_t stream) {
  return FormQ(factors, tau, rows, cols, k, batch, q, stream);
}

cudaError_t LaunchFirstNonFinite(const void* data, int64_t count, size_t component_size,
                                 uint64_t base, unsigned long long* first, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (component_size == 4) {
    FirstNonFiniteKernel<uint32_t><<<Blocks(count), kThreads, 0, stream>>>(
        static_cast<const uint32_t*>(data), count, 0x7f800000u, base, first);
  } else if (component_size == 8) {
    FirstNonFiniteKernel<uint64_t><<<Blocks(count), kThreads, 0, stream>>>(
        static_cast<const uint64_t*>(data), count, 0x7ff0000000000000ull, base, first);
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t LaunchBatchedLuSummary(const float* lu, const int* ipiv, int n, int64_t batch,
                                   int64_t* permutation, int* singular_column, int* nonfinite,
                                   cudaStream_t stream) {
  return LuSummary(lu, ipiv, n, batch, permutation, singular_column, nonfinite, stream);
}
cudaError_t LaunchBatchedLuSummary(const double* lu, const int* ipiv, int n, int64_t batch,
                                   int64_t* permutation, int* singular_column, int* nonfinite,
                                   cudaStream_t stream) {
  return LuSummary(lu, ipiv, n, batch, permutation, singular_column, nonfinite, stream);
}
cudaError_t LaunchBatchedLuSummary(const std::complex<float>* lu, const int* ipiv, int n,
                                   int64_t batch, int64_t* permutation, int* singular_column,
                                   int* nonfinite, cudaStream_t stream) {
  return LuSummary(lu, ipiv, n, batch, permutation, singular_column, nonfinite, stream);
}
cudaError_t LaunchBatchedLuSummary(const std::complex<double>* lu, const int* ipiv, int n,
                                   int64_t batch, int64_t* permutation, int* singular_column,
                                   int* nonfinite, cudaStream_t stream) {
  return LuSummary(lu, ipiv, n, batch, permutation, singular_column, nonfinite, stream);
}

}  // namespace matrixd::cuda
