// ComputeNearTiles (core/cuda/triangular_solve.h): the products D_p^-1 T_pk as cuBLAS products,
// one strided batch per k over the row blocks whose tile and neighbour are both whole blocks, and
// one product of its own for the (at most one, the last) pair that touches a cut last block.
#include <algorithm>
#include <complex>
#include <cstdint>

#include "core/cuda/library_types.h"
#include "core/cuda/triangular_solve.h"

namespace matrixd::cuda {
namespace {

// The products for one k: row blocks p (and their neighbours q) in [first, last], all in A.
template <typename T>
cublasStatus_t NearTilesOfDistance(cublasHandle_t cublas, const DeviceTriangle<T>& triangle,
                                   int block, const T* inverse, bool adjoint, int64_t first,
                                   int64_t last, int64_t step_to_neighbour, T* out) {
  using Traits = LibraryTraits<T>;
  using Device = typename Traits::Device;
  const int64_t n = triangle.n;
  const int64_t lda = triangle.lda;
  const int64_t tile = static_cast<int64_t>(block) * block;
  const Device one = Traits::One();
  const Device zero = Traits::Zero();
  const auto* a = reinterpret_cast<const Device*>(triangle.a);
  const auto* inv = reinterpret_cast<const Device*>(inverse);
  auto* c = reinterpret_cast<Device*>(out);
  const auto rows_of = [&](int64_t p) {
    return static_cast<int>(std::min<int64_t>(block, n - p * block));
  };
  // One product: op = N: D_p^-1 A(p, q) (rows_p x cols_q); op = H: A(q, p) D_p^-1 (cols_q x
  // rows_p).
  const auto product = [&](int64_t p, int count) {
    const int64_t q = p + step_to_neighbour;
    const int rp = rows_of(p);
    const int cq = rows_of(q);
    const Device* d = inv + p * tile;
    if (!adjoint) {
      const Device* t = a + p * block + q * block * lda;
      if (count == 1) {
        return Traits::gemm(cublas, CUBLAS_OP_N, CUBLAS_OP_N, rp, cq, rp, &one, d, block, t,
                            static_cast<int>(lda), &zero, c + p * tile, block);
      }
      return Traits::gemm_strided_batched(
          cublas, CUBLAS_OP_N, CUBLAS_OP_N, block, block, block, &one, d, block, tile, t,
          static_cast<int>(lda), block + block * lda, &zero, c + p * tile, block, tile, count);
    }
    const Device* t = a + q * block + p * block * lda;
    if (count == 1) {
      return Traits::gemm(cublas, CUBLAS_OP_N, CUBLAS_OP_N, cq, rp, rp, &one, t,
                          static_cast<int>(lda), d, block, &zero, c + p * tile, block);
    }
    return Traits::gemm_strided_batched(cublas, CUBLAS_OP_N, CUBLAS_OP_N, block, block, block, &one,
                                        t, static_cast<int>(lda), block + block * lda, d, block,
                                        tile, &zero, c + p * tile, block, tile, count);
  };
  // p and its neighbour grow together and the range ends at the last block (forward: p = last;
  // backward: its neighbour), so only the last pair can touch a cut last block.
  const bool last_cut = n % block != 0;
  const int64_t whole = last - first + (last_cut ? 0 : 1);  // pairs [first, first + whole)
  if (whole > 0) {
    if (const cublasStatus_t status = product(first, static_cast<int>(whole));
        status != CUBLAS_STATUS_SUCCESS) {
      return status;
    }
  }
  if (last_cut) return product(last, 1);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

template <typename T>
cublasStatus_t ComputeNearTiles(cublasHandle_t cublas, DeviceTriangle<T> triangle, int block,
                                const T* inverse, bool adjoint, int near, T* near_tiles) {
  if (!IsTriangularSolveBlock(block) || near < 0 || near > kMaxNearTiles) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const int64_t blocks = (triangle.n + block - 1) / block;
  const bool forward = triangle.lower != adjoint;
  for (int k = 1; k <= near; ++k) {
    // Forward: block p's neighbour k steps before is p - k; backward, p + k.
    const int64_t first = forward ? k : 0;
    const int64_t last = forward ? blocks - 1 : blocks - 1 - k;
    T* out = near_tiles + (k - 1) * DiagonalInverseElements(triangle.n, block);
    if (first > last) continue;
    if (const cublasStatus_t status = NearTilesOfDistance(cublas, triangle, block, inverse, adjoint,
                                                          first, last, forward ? -k : k, out);
        status != CUBLAS_STATUS_SUCCESS) {
      return status;
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

#define MATRIXD_INSTANTIATE_NEAR_TILES(T)                                                       \
  template cublasStatus_t ComputeNearTiles<T>(cublasHandle_t, DeviceTriangle<T>, int, const T*, \
                                              bool, int, T*);
MATRIXD_INSTANTIATE_NEAR_TILES(float)
MATRIXD_INSTANTIATE_NEAR_TILES(double)
MATRIXD_INSTANTIATE_NEAR_TILES(std::complex<float>)
MATRIXD_INSTANTIATE_NEAR_TILES(std::complex<double>)
#undef MATRIXD_INSTANTIATE_NEAR_TILES

}  // namespace matrixd::cuda
