// The device half of Freivalds' check (freivalds.h) on one CUDA device: out = op(M) X for a
// row-major M and an X of a few vectors, reading M once near memory bandwidth (cuBLAS
// gemm with 8 columns and nrm2 moved about a fifth of it on an H100, docs/benchmarks.md), and the
// sum of |m_ij|^2 over M in the same pass. That sum comes as one partial per thread block, which
// the caller adds in index order: the same bits on every run (no atomics anywhere). op is the
// plain transpose (no conjugate), as in a product's options. Then the norms of Z - W per vector,
// so that only a few doubles come back to the host.
#ifndef MATRIXD_CORE_CUDA_THIN_PRODUCT_H_
#define MATRIXD_CORE_CUDA_THIN_PRODUCT_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "core/matrix.h"

namespace matrixd::cuda {

// Columns of X one pass over M takes; wider X goes in passes of this many (M read again, its
// squares summed in the first pass only).
inline constexpr int kThinColumns = 8;

// X and out are stored vector by vector (column-major: vector c of X at x + c * inner, inner =
// cols, or rows when transposed; of out at out + c * outer), so that the lanes of a warp read and
// write them contiguously.
struct ThinProductArgs {
  DType dtype = DType::kFloat64;  // float32, float64, complex64 or complex128
  const void* m = nullptr;        // device, row-major rows x cols (leading dimension cols)
  int64_t rows = 0;
  int64_t cols = 0;
  // false: out = M X (outer = rows, inner = cols); true: out = M^T X (outer = cols, inner = rows).
  bool transpose = false;
  const void* x = nullptr;  // device, s vectors of inner elements
  int s = 0;                // >= 1
  void* out = nullptr;      // device, s vectors of outer elements
  // Elements from one vector of out to the next (0: outer). M X only: a row piece of a taller
  // operand writes its rows of that operand's product (out at the piece's first row, out_stride
  // the operand's rows).
  int64_t out_stride = 0;
  // ThinProductPartials(dtype, rows, cols, transpose) doubles of device memory, or null: no
  // squares.
  double* square_partials = nullptr;
  // ThinProductScratchBytes(...) bytes of device memory (the transposed product's per-chunk
  // sums; for M X of few rows, the sums of each column segment); may be null when that is 0.
  void* scratch = nullptr;
  // M X: M's rows (and X's vectors) brought into shared memory by the copy engine's bulk copies
  // where every row and vector starts 16-byte aligned and rows are whole 16-byte units; the same
  // bits as without (false: each warp loads its rows itself, as for every other M).
  bool staged = true;
};

// How many partial sums of squares the product of an M of this dtype and shape writes.
int64_t ThinProductPartials(DType dtype, int64_t rows, int64_t cols, bool transpose);

// Device scratch the product needs (0 for M X whose rows fill the device).
size_t ThinProductScratchBytes(DType dtype, int64_t rows, int64_t cols, bool transpose);

// Queues the product's kernels on `stream` (does not synchronise). INVALID_ARGUMENT for a dtype
// that is not floating, an empty M or s < 1; the launch's CUDA status otherwise.
absl::Status LaunchThinProduct(const ThinProductArgs& args, cudaStream_t stream);

// norms[v] = ||z_v - w_v||_2 in double for the s vectors of `length` elements of z and w (device,
// vector by vector, `dtype` floating), scaled so that no square overflows or underflows; NaN where
// a difference is NaN, +inf where one is infinite. One block a vector, fixed order: the same bits
// on every run. Queued on `stream`; INVALID_ARGUMENT for a dtype that is not floating, length < 1
// or s < 1.
absl::Status LaunchDifferenceNorms(DType dtype, const void* z, const void* w, int64_t length, int s,
                                   double* norms, cudaStream_t stream);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_THIN_PRODUCT_H_
