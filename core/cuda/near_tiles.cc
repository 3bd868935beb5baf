// ComputeNearTiles (core/cuda/triangular_solve.h): the products D_p^-1 T_pk as cuBLAS products,
// one strided batch per k over the row blocks whose tile and neighbour are both whole blocks, and
// one product of its own for the (at most one, the last) pair that touches a cut last block.
#include <algorithm>
#include <complex>
#include <cstdint>
#include <span>
#include <vector>

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

// The whole-block products of a group of sets (one op, one leading dimension), in one batched
// call: op = N: C = D_p^-1 A(p, q); op = H: C = A(q, p) D_p^-1.
template <typename T>
struct NearProductGroup {
  bool adjoint = false;
  int64_t lda = 0;
  std::vector<const T*> left = {};
  std::vector<const T*> right = {};
  std::vector<T*> out = {};
};

}  // namespace

template <typename T>
cublasStatus_t ComputeNearTileSets(cublasHandle_t cublas, std::span<const NearTileSet<T>> sets,
                                   int block, int near, void* pointers, cudaStream_t stream) {
  using Traits = LibraryTraits<T>;
  using Device = typename Traits::Device;
  if (!IsTriangularSolveBlock(block) || near < 0 || near > kMaxNearTiles) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (!sets.empty() &&
      static_cast<int64_t>(sets.size()) * near * ((sets.front().triangle.n + block - 1) / block) >
          kMaxGroupedNearProducts) {
    for (const NearTileSet<T>& set : sets) {
      if (const cublasStatus_t status = ComputeNearTiles(cublas, set.triangle, block, set.inverse,
                                                         set.adjoint, near, set.near_tiles);
          status != CUBLAS_STATUS_SUCCESS) {
        return status;
      }
    }
    return CUBLAS_STATUS_SUCCESS;
  }
  const int64_t tile = static_cast<int64_t>(block) * block;
  std::vector<NearProductGroup<T>> groups;
  for (const NearTileSet<T>& set : sets) {
    const DeviceTriangle<T>& triangle = set.triangle;
    const int64_t n = triangle.n;
    const int64_t blocks = (n + block - 1) / block;
    const bool forward = triangle.lower != set.adjoint;
    auto group = std::find_if(groups.begin(), groups.end(), [&](const NearProductGroup<T>& g) {
      return g.adjoint == set.adjoint && g.lda == triangle.lda;
    });
    if (group == groups.end()) {
      groups.push_back({.adjoint = set.adjoint, .lda = triangle.lda});
      group = groups.end() - 1;
    }
    for (int k = 1; k <= near; ++k) {
      const int64_t first = forward ? k : 0;
      const int64_t last = forward ? blocks - 1 : blocks - 1 - k;
      T* out = set.near_tiles + (k - 1) * DiagonalInverseElements(n, block);
      for (int64_t p = first; p <= last; ++p) {
        const int64_t q = forward ? p - k : p + k;
        const T* d = set.inverse + p * tile;
        if (std::max(p, q) * block + block > n) {
          // A pair that touches the cut last block: a product of its own, as ComputeNearTiles.
          if (const cublasStatus_t status = NearTilesOfDistance(
                  cublas, triangle, block, set.inverse, set.adjoint, p, p, q - p, out);
              status != CUBLAS_STATUS_SUCCESS) {
            return status;
          }
          continue;
        }
        const T* t = set.adjoint ? triangle.a + q * block + p * block * triangle.lda
                                 : triangle.a + p * block + q * block * triangle.lda;
        group->left.push_back(set.adjoint ? t : d);
        group->right.push_back(set.adjoint ? d : t);
        group->out.push_back(out + p * tile);
      }
    }
  }
  // Every group's pointers in one copy: left, right and out arrays one group after another.
  std::vector<const void*> host;
  for (const NearProductGroup<T>& g : groups) {
    host.insert(host.end(), g.left.begin(), g.left.end());
    host.insert(host.end(), g.right.begin(), g.right.end());
    host.insert(host.end(), g.out.begin(), g.out.end());
  }
  if (host.empty()) return CUBLAS_STATUS_SUCCESS;
  if (cudaMemcpyAsync(pointers, host.data(), host.size() * sizeof(void*), cudaMemcpyHostToDevice,
                      stream) != cudaSuccess) {
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  const Device one = Traits::One();
  const Device zero = Traits::Zero();
  auto* at = static_cast<const void**>(pointers);
  for (const NearProductGroup<T>& g : groups) {
    const auto count = static_cast<int>(g.out.size());
    if (count == 0) continue;
    const auto* left = reinterpret_cast<const Device* const*>(at);
    const auto* right = reinterpret_cast<const Device* const*>(at + count);
    auto* out = reinterpret_cast<Device* const*>(const_cast<void**>(at + 2 * count));
    at += 3 * count;
    const int lda = static_cast<int>(g.lda);
    if (const cublasStatus_t status = Traits::gemm_batched(
            cublas, CUBLAS_OP_N, CUBLAS_OP_N, block, block, block, &one, left,
            g.adjoint ? lda : block, right, g.adjoint ? block : lda, &zero, out, block, count);
        status != CUBLAS_STATUS_SUCCESS) {
      return status;
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

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

#define MATRIXD_INSTANTIATE_NEAR_TILES(T)                                                         \
  template cublasStatus_t ComputeNearTiles<T>(cublasHandle_t, DeviceTriangle<T>, int, const T*,   \
                                              bool, int, T*);                                     \
  template cublasStatus_t ComputeNearTileSets<T>(cublasHandle_t, std::span<const NearTileSet<T>>, \
                                                 int, int, void*, cudaStream_t);
MATRIXD_INSTANTIATE_NEAR_TILES(float)
MATRIXD_INSTANTIATE_NEAR_TILES(double)
MATRIXD_INSTANTIATE_NEAR_TILES(std::complex<float>)
MATRIXD_INSTANTIATE_NEAR_TILES(std::complex<double>)
#undef MATRIXD_INSTANTIATE_NEAR_TILES

}  // namespace matrixd::cuda
