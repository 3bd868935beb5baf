#include <algorithm>
#include <complex>
#include <cstdint>
#include <cuda/atomic>

#include "core/cuda/triangular_solve.h"

// The synchronization-free dense triangular solve (the scheme of Liu et al.'s sparse SpTRSV, on
// dense row blocks), with MAGMA's inverted diagonal blocks (magmablas_dtrsv on dtrtri_diag):
// the chain from one row block to the next is then a 64 x 64 product instead of 64 dependent
// substitution steps, and that chain, not the bandwidth, bounds a one-vector solve.
//
// Solve order: op(A) is lower triangular when A is lower and op = N, or A is upper and op = H;
// then row blocks go first to last ("forward"), otherwise last to first. The ticket counter hands
// out steps in that order to thread blocks as they start, so a block only ever waits for blocks
// that are already running: no deadlock whatever the scheduler does. Blocks finish in step order
// (each waits for the step before it), so one counter `solved` says which parts of x are ready.
//
// Tile of op(A) for row block p and column block q (both kBlock wide, cut at n):
// op = N: M(i, j) = A(p B + i, q B + j), column-major from a + p B + q B lda;
// op = H: M(i, j) = conj(A(q B + j, p B + i)), i.e. tile[j + i lda] from a + q B + p B lda.
// Either way warps read along the contiguous dimension of A (see TileOf below).

namespace matrixd::cuda {
namespace {

constexpr int kBlock = kTriangularSolveBlock;
constexpr int kThreads = 256;
constexpr int kWarpSize = 32;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kPerThread = kBlock * kBlock / kThreads;  // tile elements a thread holds
static_assert(kBlock % kWarps == 0 && kBlock % kWarpSize == 0 && kThreads % kBlock == 0);

template <typename T>
struct DeviceOf {
  using type = T;
};
template <>
struct DeviceOf<std::complex<float>> {
  using type = float2;
};
template <>
struct DeviceOf<std::complex<double>> {
  using type = double2;
};
template <typename T>
using DeviceType = typename DeviceOf<T>::type;

// ---- Arithmetic on float, double, float2 and double2 (complex) ----

template <typename E>
__device__ __forceinline__ E Zero() {
  return E{};
}
template <typename E>
__device__ __forceinline__ E One();
template <>
__device__ __forceinline__ float One<float>() {
  return 1.0f;
}
template <>
__device__ __forceinline__ double One<double>() {
  return 1.0;
}
template <>
__device__ __forceinline__ float2 One<float2>() {
  return make_float2(1.0f, 0.0f);
}
template <>
__device__ __forceinline__ double2 One<double2>() {
  return make_double2(1.0, 0.0);
}

__device__ __forceinline__ float Conj(float x) { return x; }
__device__ __forceinline__ double Conj(double x) { return x; }
__device__ __forceinline__ float2 Conj(float2 z) { return make_float2(z.x, -z.y); }
__device__ __forceinline__ double2 Conj(double2 z) { return make_double2(z.x, -z.y); }

__device__ __forceinline__ float Add(float a, float b) { return a + b; }
__device__ __forceinline__ double Add(double a, double b) { return a + b; }
__device__ __forceinline__ float2 Add(float2 a, float2 b) {
  return make_float2(a.x + b.x, a.y + b.y);
}
__device__ __forceinline__ double2 Add(double2 a, double2 b) {
  return make_double2(a.x + b.x, a.y + b.y);
}

__device__ __forceinline__ float Sub(float a, float b) { return a - b; }
__device__ __forceinline__ double Sub(double a, double b) { return a - b; }
__device__ __forceinline__ float2 Sub(float2 a, float2 b) {
  return make_float2(a.x - b.x, a.y - b.y);
}
__device__ __forceinline__ double2 Sub(double2 a, double2 b) {
  return make_double2(a.x - b.x, a.y - b.y);
}

// c + a b.
__device__ __forceinline__ float MulAdd(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double MulAdd(double a, double b, double c) { return fma(a, b, c); }
__device__ __forceinline__ float2 MulAdd(float2 a, float2 b, float2 c) {
  return make_float2(fmaf(-a.y, b.y, fmaf(a.x, b.x, c.x)), fmaf(a.y, b.x, fmaf(a.x, b.y, c.y)));
}
__device__ __forceinline__ double2 MulAdd(double2 a, double2 b, double2 c) {
  return make_double2(fma(-a.y, b.y, fma(a.x, b.x, c.x)), fma(a.y, b.x, fma(a.x, b.y, c.y)));
}

// c - a b.
template <typename E>
__device__ __forceinline__ E MulSub(E a, E b, E c) {
  return Sub(c, MulAdd(a, b, Zero<E>()));
}

// num / den; complex division scaled by den's larger part so |den|^2 neither overflows nor
// underflows.
__device__ __forceinline__ float Divide(float num, float den) { return num / den; }
__device__ __forceinline__ double Divide(double num, double den) { return num / den; }
template <typename C>
__device__ __forceinline__ C DivideComplex(C num, C den) {
  const auto scale = fmax(fabs(den.x), fabs(den.y));
  const auto re = den.x / scale;
  const auto im = den.y / scale;
  const auto norm = (re * re + im * im) * scale;
  C q;
  q.x = (num.x * re + num.y * im) / norm;
  q.y = (num.y * re - num.x * im) / norm;
  return q;
}
__device__ __forceinline__ float2 Divide(float2 num, float2 den) { return DivideComplex(num, den); }
__device__ __forceinline__ double2 Divide(double2 num, double2 den) {
  return DivideComplex(num, den);
}

__device__ __forceinline__ float ShuffleDown(float v, int offset) {
  return __shfl_down_sync(0xffffffffu, v, offset);
}
__device__ __forceinline__ double ShuffleDown(double v, int offset) {
  return __shfl_down_sync(0xffffffffu, v, offset);
}
__device__ __forceinline__ float2 ShuffleDown(float2 v, int offset) {
  return make_float2(ShuffleDown(v.x, offset), ShuffleDown(v.y, offset));
}
__device__ __forceinline__ double2 ShuffleDown(double2 v, int offset) {
  return make_double2(ShuffleDown(v.x, offset), ShuffleDown(v.y, offset));
}

// Lane 0 gets the warp's sum.
template <typename E>
__device__ __forceinline__ E WarpSum(E v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v = Add(v, ShuffleDown(v, offset));
  return v;
}

// Rows of the block that starts at row `first` of n.
__device__ __forceinline__ int BlockRows(int64_t n, int64_t first) {
  return n - first < kBlock ? static_cast<int>(n - first) : kBlock;
}

// ---- Diagonal blocks ----

// Thread j of block p: column j of the inverse of diagonal block p, by substitution on e_j,
// written straight into `inverse` (the thread reads back only what it wrote).
template <typename E>
__global__ void __launch_bounds__(kBlock)
    InvertDiagonalBlocksKernel(const E* a, int64_t n, int64_t lda, bool lower, bool unit,
                               E* inverse) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kBlock;
  const int rows = BlockRows(n, first);
  const E* d = a + first + first * lda;  // D(i, k) = d[i + k lda]
  E* y = inverse + static_cast<int64_t>(blockIdx.x) * kBlock * kBlock + threadIdx.x * kBlock;
  const int j = static_cast<int>(threadIdx.x);
  for (int i = 0; i < kBlock; ++i) y[i] = Zero<E>();
  if (j >= rows) return;
  // D y = e_j: y_i = 0 on the side of j away from the triangle.
  if (lower) {
    for (int i = j; i < rows; ++i) {
      E s = i == j ? One<E>() : Zero<E>();
      for (int k = j; k < i; ++k) s = MulSub(d[i + k * lda], y[k], s);
      y[i] = unit ? s : Divide(s, d[i + i * lda]);
    }
  } else {
    for (int i = j; i >= 0; --i) {
      E s = i == j ? One<E>() : Zero<E>();
      for (int k = i + 1; k <= j; ++k) s = MulSub(d[i + k * lda], y[k], s);
      y[i] = unit ? s : Divide(s, d[i + i * lda]);
    }
  }
}

// ---- The solve ----

// A tile of op(A) (kBlock x kBlock, zero beyond rows x cols) in registers, and the thread's part
// of its product with a vector. Two layouts, both coalesced:
// op = N: thread t holds row i = t % kBlock, columns j = g kPerThread + k (g = t / kBlock);
// op = H: lane l of warp w holds rows i = w + kWarps r and columns j = l + 32 h.
template <typename E, bool kAdjoint>
struct Tile;

template <typename E>
struct Tile<E, false> {
  E m[kPerThread];

  // The thread's partial sum of its row.
  struct Sums {
    E value = Zero<E>();
  };

  __device__ __forceinline__ void Load(const E* tile, int64_t ld, int rows, int cols) {
    const int i = static_cast<int>(threadIdx.x) % kBlock;
    const int j0 = static_cast<int>(threadIdx.x) / kBlock * kPerThread;
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const int j = j0 + k;
      m[k] = i < rows && j < cols ? tile[i + j * ld] : Zero<E>();
    }
  }

  // sums += M v, v(j) for j < kBlock.
  template <typename Vector>
  __device__ __forceinline__ void MultiplyAdd(Vector v, Sums& sums) const {
    const int j0 = static_cast<int>(threadIdx.x) / kBlock * kPerThread;
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) sums.value = MulAdd(m[k], v(j0 + k), sums.value);
  }

  // out[i] := row i's sum over all threads, then sums := 0. Every thread calls it; out is
  // visible to all on return. partial: kThreads elements of shared memory.
  static __device__ __forceinline__ void Reduce(Sums& sums, E* partial, E* out) {
    partial[threadIdx.x] = sums.value;
    __syncthreads();
    if (threadIdx.x < kBlock) {
      E s = partial[threadIdx.x];
#pragma unroll
      for (int g = 1; g < kThreads / kBlock; ++g) s = Add(s, partial[threadIdx.x + g * kBlock]);
      out[threadIdx.x] = s;
    }
    __syncthreads();
    sums.value = Zero<E>();
  }
};

template <typename E>
struct Tile<E, true> {
  static constexpr int kRowsPerWarp = kBlock / kWarps;
  static constexpr int kColumnsPerLane = kBlock / kWarpSize;
  static_assert(kRowsPerWarp * kColumnsPerLane == kPerThread);
  E m[kRowsPerWarp][kColumnsPerLane];

  struct Sums {
    E value[kRowsPerWarp] = {};
  };

  __device__ __forceinline__ void Load(const E* tile, int64_t ld, int rows, int cols) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int i = warp + kWarps * r;
#pragma unroll
      for (int h = 0; h < kColumnsPerLane; ++h) {
        const int j = lane + kWarpSize * h;
        m[r][h] = i < rows && j < cols ? Conj(tile[j + i * ld]) : Zero<E>();
      }
    }
  }

  template <typename Vector>
  __device__ __forceinline__ void MultiplyAdd(Vector v, Sums& sums) const {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    E vj[kColumnsPerLane];
#pragma unroll
    for (int h = 0; h < kColumnsPerLane; ++h) vj[h] = v(lane + kWarpSize * h);
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
#pragma unroll
      for (int h = 0; h < kColumnsPerLane; ++h) {
        sums.value[r] = MulAdd(m[r][h], vj[h], sums.value[r]);
      }
    }
  }

  static __device__ __forceinline__ void Reduce(Sums& sums, E* /*partial*/, E* out) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const E s = WarpSum(sums.value[r]);
      if (lane == 0) out[warp + kWarps * r] = s;
      sums.value[r] = Zero<E>();
    }
    __syncthreads();
  }
};

// The address of op(A)'s tile (row block `row0`, column block `col0`) in A; see the top.
template <bool kAdjoint, typename E>
__device__ __forceinline__ const E* TileOf(const E* a, int64_t lda, int64_t row0, int64_t col0) {
  return kAdjoint ? a + col0 + row0 * lda : a + row0 + col0 * lda;
}

// Waits until `solved` >= needed and returns the count seen. Thread 0 polls with acquire loads;
// the barrier passes what it saw (and the ordering) to the rest of the block. The two slots
// alternate so that thread 0 never overwrites a value another thread has yet to read.
__device__ __forceinline__ int WaitUntilSolved(unsigned* solved, int needed, int* seen, int& slot) {
  if (threadIdx.x == 0) {
    ::cuda::atomic_ref<unsigned, ::cuda::thread_scope_device> counter(*solved);
    unsigned value = counter.load(::cuda::memory_order_acquire);
    while (value < static_cast<unsigned>(needed))
      value = counter.load(::cuda::memory_order_acquire);
    seen[slot] = static_cast<int>(value);
  }
  __syncthreads();
  const int ready = seen[slot];
  slot ^= 1;
  return ready;
}

// sync[0]: the ticket counter; sync[1]: steps solved (x published for them).
template <typename E, bool kAdjoint>
__global__ void __launch_bounds__(kThreads)
    TriangularSolveKernel(const E* a, int64_t n, int64_t lda, bool forward, const E* inverse,
                          const E* b, E* x, unsigned* sync) {
  __shared__ int step_shared;
  __shared__ int seen[2];
  __shared__ E partial[kThreads];
  __shared__ E sums_shared[kBlock];
  __shared__ E residual[kBlock];
  using TileT = Tile<E, kAdjoint>;

  if (threadIdx.x == 0) step_shared = static_cast<int>(atomicAdd(&sync[0], 1u));
  __syncthreads();
  const int step = step_shared;
  const int blocks = static_cast<int>(gridDim.x);
  const auto block_of = [&](int s) { return forward ? s : blocks - 1 - s; };
  const int64_t row0 = static_cast<int64_t>(block_of(step)) * kBlock;
  const int rows = BlockRows(n, row0);
  const E* diagonal_inverse = inverse + static_cast<int64_t>(block_of(step)) * kBlock * kBlock;

  // The tiles of the solved part one ahead of their use, so that the next tile's loads are in
  // flight while the block waits for (and multiplies by) the current one's x; after the last,
  // the diagonal block's inverse.
  const auto load = [&](TileT& tile, int s) {
    if (s < step) {
      const int64_t col0 = static_cast<int64_t>(block_of(s)) * kBlock;
      tile.Load(TileOf<kAdjoint>(a, lda, row0, col0), lda, rows, BlockRows(n, col0));
    } else {
      tile.Load(diagonal_inverse, kBlock, rows, rows);
    }
  };
  TileT current;
  TileT next;
  typename TileT::Sums sums;
  load(current, 0);
  int ready = 0;
  int slot = 0;
  for (int s = 0; s < step; ++s) {
    load(next, s + 1);
    if (ready <= s) ready = WaitUntilSolved(&sync[1], s + 1, seen, slot);
    const int64_t col0 = static_cast<int64_t>(block_of(s)) * kBlock;
    const int cols = BlockRows(n, col0);
    // .cg: x was written by other blocks during this kernel; L1 is not coherent with them.
    current.MultiplyAdd([&](int j) { return j < cols ? __ldcg(x + col0 + j) : Zero<E>(); }, sums);
    current = next;
  }
  TileT::Reduce(sums, partial, sums_shared);
  if (threadIdx.x < kBlock) {
    residual[threadIdx.x] = static_cast<int>(threadIdx.x) < rows
                                ? Sub(b[row0 + threadIdx.x], sums_shared[threadIdx.x])
                                : Zero<E>();
  }
  __syncthreads();
  current.MultiplyAdd([&](int j) { return residual[j]; }, sums);
  TileT::Reduce(sums, partial, sums_shared);
  if (static_cast<int>(threadIdx.x) < rows) {
    x[row0 + threadIdx.x] = sums_shared[threadIdx.x];
    __threadfence();
  }
  // Publish: each writer's fence, then the barrier, then thread 0's fence and store (the pattern
  // of cooperative groups' grid sync, with the writers' own fences on top).
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    ::cuda::atomic_ref<unsigned, ::cuda::thread_scope_device>(sync[1]).store(
        static_cast<unsigned>(step + 1), ::cuda::memory_order_relaxed);
  }
}

template <typename E>
__global__ void PermuteVectorKernel(const E* src, const int* rows, int64_t n, bool scatter,
                                    E* dst) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (scatter) {
      dst[rows[i]] = src[i];
    } else {
      dst[i] = src[rows[i]];
    }
  }
}

int BlocksOf(int64_t n) { return static_cast<int>((n + kBlock - 1) / kBlock); }

}  // namespace

template <typename T>
cudaError_t LaunchInvertDiagonalBlocks(DeviceTriangle<T> triangle, T* inverse,
                                       cudaStream_t stream) {
  using E = DeviceType<T>;
  if (triangle.n <= 0) return cudaSuccess;
  InvertDiagonalBlocksKernel<E><<<BlocksOf(triangle.n), kBlock, 0, stream>>>(
      reinterpret_cast<const E*>(triangle.a), triangle.n, triangle.lda, triangle.lower,
      triangle.unit_diagonal, reinterpret_cast<E*>(inverse));
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchTriangularSolve(DeviceTriangle<T> triangle, const T* inverse, bool adjoint,
                                  const T* b, T* x, void* sync, cudaStream_t stream) {
  using E = DeviceType<T>;
  if (triangle.n <= 0) return cudaSuccess;
  if (const cudaError_t reset = cudaMemsetAsync(sync, 0, kTriangularSolveSyncBytes, stream);
      reset != cudaSuccess) {
    return reset;
  }
  const bool forward = triangle.lower != adjoint;
  const auto* a = reinterpret_cast<const E*>(triangle.a);
  const auto* inv = reinterpret_cast<const E*>(inverse);
  const auto* in = reinterpret_cast<const E*>(b);
  auto* out = reinterpret_cast<E*>(x);
  auto* counters = static_cast<unsigned*>(sync);
  if (adjoint) {
    TriangularSolveKernel<E, true><<<BlocksOf(triangle.n), kThreads, 0, stream>>>(
        a, triangle.n, triangle.lda, forward, inv, in, out, counters);
  } else {
    TriangularSolveKernel<E, false><<<BlocksOf(triangle.n), kThreads, 0, stream>>>(
        a, triangle.n, triangle.lda, forward, inv, in, out, counters);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchPermuteVector(const T* src, const int* rows, int64_t n, bool scatter, T* dst,
                                cudaStream_t stream) {
  using E = DeviceType<T>;
  if (n <= 0) return cudaSuccess;
  constexpr int kPermuteThreads = 256;
  const int blocks =
      static_cast<int>(std::min<int64_t>((n + kPermuteThreads - 1) / kPermuteThreads, 1024));
  PermuteVectorKernel<E><<<blocks, kPermuteThreads, 0, stream>>>(
      reinterpret_cast<const E*>(src), rows, n, scatter, reinterpret_cast<E*>(dst));
  return cudaGetLastError();
}

#define MATRIXD_INSTANTIATE_TRIANGULAR_SOLVE(T)                                                  \
  template cudaError_t LaunchInvertDiagonalBlocks<T>(DeviceTriangle<T>, T*, cudaStream_t);       \
  template cudaError_t LaunchTriangularSolve<T>(DeviceTriangle<T>, const T*, bool, const T*, T*, \
                                                void*, cudaStream_t);                            \
  template cudaError_t LaunchPermuteVector<T>(const T*, const int*, int64_t, bool, T*,           \
                                              cudaStream_t);
MATRIXD_INSTANTIATE_TRIANGULAR_SOLVE(float)
MATRIXD_INSTANTIATE_TRIANGULAR_SOLVE(double)
MATRIXD_INSTANTIATE_TRIANGULAR_SOLVE(std::complex<float>)
MATRIXD_INSTANTIATE_TRIANGULAR_SOLVE(std::complex<double>)
#undef MATRIXD_INSTANTIATE_TRIANGULAR_SOLVE

}  // namespace matrixd::cuda
