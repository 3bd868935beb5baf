// Triangular solves with one or two right-hand sides that read the triangle at memory bandwidth,
// for the device condition estimator (core/cuda/factor_solves.h): cuBLAS trsv and cuSOLVER getrs
// with one vector are latency-bound, and getrs with two costs three times one (issue 15). One
// launch per solve, its columns together (the triangle read once for both; complex128 one launch
// a column, its registers being full): thread blocks take the triangle's row blocks in solve
// order from a ticket counter, fold in the parts of x already solved as they become ready, and
// apply the inverse of their diagonal block, inverted once beforehand; with near tiles
// (ComputeNearTiles, once per triangle and operation) the last few blocks of x are applied
// through tiles already multiplied by that inverse, so that little work remains between one
// block's x and the next.
// Triangles are column-major with leading dimension lda; blocks of vectors are column-major with
// leading dimension n. Each launcher queues its work on `stream` and returns the launch status;
// none synchronises. T is float, double, std::complex<float> or std::complex<double>.
#ifndef MATRIXD_CORE_CUDA_TRIANGULAR_SOLVE_H_
#define MATRIXD_CORE_CUDA_TRIANGULAR_SOLVE_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>

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

// The most triangles one LaunchInvertDiagonalBlocks below takes.
inline constexpr int kMaxInvertedTriangles = 2;

// The same for up to kMaxInvertedTriangles triangles of one order at once (LU's two factors):
// inverses[k] for triangles[k]. cudaErrorInvalidValue as above, and when there are more
// triangles than that, their orders differ or the spans' sizes do.
template <typename T>
cudaError_t LaunchInvertDiagonalBlocks(std::span<const DeviceTriangle<T>> triangles, int block,
                                       std::span<T* const> inverses, cudaStream_t stream);

// The most near tiles a solve takes.
inline constexpr int kMaxNearTiles = 2;

// Elements of `near` near tiles of an n x n triangle with `block`-row blocks.
inline int64_t NearTileElements(int64_t n, int block, int near) {
  return near * DiagonalInverseElements(n, block);
}

// near_tiles := for k = 1 .. near and each row block p, D_p^-1 T_pk, where D_p is op(A)'s
// diagonal block p and T_pk the tile of op(A) in block row p against the block solved k steps
// before p (op = A, or A^H when `adjoint`; none for the first k blocks in solve order), by cuBLAS
// products queued on the handle's stream; `inverse` from LaunchInvertDiagonalBlocks with the same
// block. Stored at near_tiles + ((k - 1) blocks + p) block^2, column-major with leading dimension
// block; for op = H as its adjoint, A's tile times D_p^-1 (the solve reads it transposed). A
// zero pivot gives Inf/NaN, as in the inverse. REQUIRES: near_tiles holds NearTileElements(n,
// block, near) elements of device memory. Returns the first cuBLAS error.
template <typename T>
cublasStatus_t ComputeNearTiles(cublasHandle_t cublas, DeviceTriangle<T> triangle, int block,
                                const T* inverse, bool adjoint, int near, T* near_tiles);

// One triangle's near tiles for ComputeNearTileSets: ComputeNearTiles' arguments.
template <typename T>
struct NearTileSet {
  DeviceTriangle<T> triangle = {};
  const T* inverse = nullptr;
  bool adjoint = false;
  T* near_tiles = nullptr;
};

// Bytes of device memory ComputeNearTileSets needs for the pointers of `sets` sets of order n.
inline int64_t NearTileSetPointerBytes(int64_t n, int block, int near, int sets) {
  return 3 * static_cast<int64_t>(sizeof(void*)) * sets * near * ((n + block - 1) / block);
}

// Up to this many products (sets x near x row blocks), ComputeNearTileSets batches them together;
// beyond, one set at a time. On an H100 (docs/benchmarks.md, 2026-11-28) an LU's four sets at
// n = 4096 (244 products) took 68-78 us together against 90-141 one by one, at 8192 (500) about
// the same, at 16384 (1012) 253 against 202.
inline constexpr int64_t kMaxGroupedNearProducts = 256;

// ComputeNearTiles for every set (all of one order, block and near): the same products. Up to
// kMaxGroupedNearProducts of them, those of whole blocks of all the sets that share an op and a
// leading dimension go in one batched cuBLAS call (LU's four sets in two launches instead of
// eight, each filling more of the device), the few that touch a cut last block one by one;
// beyond, ComputeNearTiles for each set in turn. Their pointers go to `pointers`
// (NearTileSetPointerBytes of device memory, unused by anything else until the products have
// run) by a copy queued on `stream`, the handle's stream. CUBLAS_STATUS_INVALID_VALUE as
// ComputeNearTiles, CUBLAS_STATUS_EXECUTION_FAILED when the pointers' copy fails, else the first
// cuBLAS error.
template <typename T>
cublasStatus_t ComputeNearTileSets(cublasHandle_t cublas, std::span<const NearTileSet<T>> sets,
                                   int block, int near, void* pointers, cudaStream_t stream);

// The most right-hand sides one solve takes.
inline constexpr int kMaxTriangularSolveColumns = 2;

// Thread-block clusters of a solve: consecutive row blocks in one cluster hand x to each other
// through shared memory (triangular_solve.cu). At most 16 (past 8, where the device allows such
// clusters); kTriangularSolveCluster by default.
inline constexpr int kMaxTriangularSolveCluster = 16;
inline constexpr int kTriangularSolveCluster = 8;

// x := op(A)^-1 b with op(A) = A, or its conjugate transpose when `adjoint`, b and x n x
// `columns` blocks, column-major with leading dimension n (contiguous vectors), and `inverse` from
// LaunchInvertDiagonalBlocks on the same triangle with the same block; with near > 0 (at most
// kMaxNearTiles), `near_tiles` from ComputeNearTiles on the same triangle, block and `adjoint`
// with at least `near` tiles. x may be b (in place); otherwise they must not overlap. `sync` is
// kTriangularSolveSyncBytes of device memory, zero (see above), used by no concurrent solve; a
// solve that does not run to completion (a launch error, a fault) may leave it nonzero. The row
// blocks go `cluster` to a thread-block cluster (capped at their number; clusters of 1 where the
// device cannot place them): the same bits whatever the cluster.
// cudaErrorInvalidValue unless IsTriangularSolveBlock(block), 0 <= near <= kMaxNearTiles
// (near_tiles not null when near > 0), 1 <= columns <= kMaxTriangularSolveColumns and
// 1 <= cluster <= kMaxTriangularSolveCluster.
template <typename T>
cudaError_t LaunchTriangularSolve(DeviceTriangle<T> triangle, int block, const T* inverse,
                                  bool adjoint, const T* b, T* x, void* sync, cudaStream_t stream,
                                  const T* near_tiles = nullptr, int near = 0, int columns = 1,
                                  int cluster = kTriangularSolveCluster);

// dst[i] := src[rows[i]] (gather), or dst[rows[i]] := src[i] when `scatter`, i < n, in each of
// `columns` columns of n (column-major, leading dimension n); rows is a permutation of [0, n).
// src and dst must not overlap.
template <typename T>
cudaError_t LaunchPermuteVector(const T* src, const int* rows, int64_t n, bool scatter, T* dst,
                                cudaStream_t stream, int columns = 1);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_TRIANGULAR_SOLVE_H_
