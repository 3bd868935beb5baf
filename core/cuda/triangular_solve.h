// Triangular solves with one right-hand side that read the triangle at memory bandwidth, for the
// device condition estimator (core/cuda/factor_solves.h): cuBLAS trsv and cuSOLVER getrs with one
// vector are latency-bound (issue 15). One launch per solve: thread blocks take the triangle's
// row blocks in solve order from a ticket counter, fold in the parts of x already solved as they
// become ready, and apply the inverse of their diagonal block, inverted once beforehand.
// Triangles are column-major with leading dimension lda; vectors are contiguous. Each launcher
// queues its work on `stream` and returns the launch status; none synchronises. T is float,
// double, std::complex<float> or std::complex<double>.
#ifndef MATRIXD_CORE_CUDA_TRIANGULAR_SOLVE_H_
#define MATRIXD_CORE_CUDA_TRIANGULAR_SOLVE_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace matrixd::cuda {

// Rows of one diagonal block (one thread block's share of the triangle): 64 (256 threads) or
// 128 (512 threads; fewer steps from one block to the next, more rows for each to read).
inline constexpr bool IsTriangularSolveBlock(int block) { return block == 64 || block == 128; }
// The block the estimator's solves use: 128, or 64 for std::complex<double> (whose 128-row tile
// would not fit a thread's registers).
template <typename T>
inline constexpr int kTriangularSolveBlock = sizeof(T) > 8 ? 64 : 128;

// An n x n triangle at `a`: the lower or upper one, with a unit diagonal (not read) or not.
// Entries outside it are never read.
template <typename T>
struct DeviceTriangle {
  const T* a = nullptr;
  int64_t n = 0;
  int64_t lda = 0;
  bool lower = false;
  bool unit_diagonal = false;
};

// Elements of the inverted diagonal blocks (`block` rows each) of an n x n triangle.
inline int64_t DiagonalInverseElements(int64_t n, int block) {
  const int64_t blocks = (n + block - 1) / block;
  return blocks * block * block;
}

// Bytes of the counters one solve uses: zero before the first solve (cudaMemsetAsync once, when
// allocated); each solve leaves them zero for the next.
inline constexpr size_t kTriangularSolveSyncBytes = 2 * sizeof(unsigned);

// inverse := the inverses of the triangle's block x block diagonal blocks (the last one smaller
// when n is not a multiple), each column-major with leading dimension `block`, zero outside the
// triangle and the block. A zero pivot gives Inf/NaN. cudaErrorInvalidValue unless
// IsTriangularSolveBlock(block). REQUIRES: inverse holds DiagonalInverseElements(n, block)
// elements of device memory.
template <typename T>
cudaError_t LaunchInvertDiagonalBlocks(DeviceTriangle<T> triangle, int block, T* inverse,
                                       cudaStream_t stream);

// x := op(A)^-1 b with op(A) = A, or its conjugate transpose when `adjoint`, and `inverse` from
// LaunchInvertDiagonalBlocks on the same triangle with the same block. x may be b (in place);
// otherwise they must not overlap. `sync` is kTriangularSolveSyncBytes of device memory, zero
// (see above), used by no concurrent solve; a solve that does not run to completion (a launch
// error, a fault) may leave it nonzero. cudaErrorInvalidValue unless IsTriangularSolveBlock(block).
template <typename T>
cudaError_t LaunchTriangularSolve(DeviceTriangle<T> triangle, int block, const T* inverse,
                                  bool adjoint, const T* b, T* x, void* sync, cudaStream_t stream);

// dst[i] := src[rows[i]] (gather), or dst[rows[i]] := src[i] when `scatter`, i < n; rows is a
// permutation of [0, n). src and dst must not overlap.
template <typename T>
cudaError_t LaunchPermuteVector(const T* src, const int* rows, int64_t n, bool scatter, T* dst,
                                cudaStream_t stream);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_TRIANGULAR_SOLVE_H_
