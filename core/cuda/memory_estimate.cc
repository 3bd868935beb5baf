#include "core/cuda/memory_estimate.h"

#include <algorithm>

#include "core/cuda/exact_determinant.h"
#include "core/cuda/freivalds.h"
#include "core/freivalds.h"

namespace matrixd::cuda {
namespace {

// Small buffers (pivots, info words, summaries) and the pool's 2 MiB mapping granularity.
constexpr uint64_t kMargin = uint64_t{4} << 20;

uint64_t Elements(const MatrixView& m) {
  return static_cast<uint64_t>(std::max<int64_t>(m.size(), 0));
}

// Bytes per element of the precision the dense factorisations compute in: float32 and complex64
// inputs of a determinant are widened to double precision, as on the CPU.
uint64_t WideElementSize(DType dtype) { return IsComplex(dtype) ? 16 : 8; }

// cuSOLVER's getrf/potrf/geqrf+orgqr workspaces are panels of the matrix: a generous bound of
// 512 columns of the longer side.
uint64_t LibraryWorkspace(int64_t rows, int64_t cols, uint64_t element_size) {
  return static_cast<uint64_t>(std::max(rows, cols)) * 512 * element_size;
}

}  // namespace

uint64_t DeterminantDeviceBytes(const MatrixView& a, const DeterminantOptions& options) {
  const uint64_t n2 = Elements(a);
  // Residues mod p live in 64-bit words: the uploaded INT64 entries and the working matrix.
  const uint64_t modular = 2 * n2 * sizeof(uint64_t);
  if (options.modulus > 0) return modular + kMargin;
  const uint64_t wide = WideElementSize(a.dtype);
  // The input, its row-scaled widened copy, and getrf's workspace (condensation needs no
  // workspace but may keep a second copy).
  const uint64_t floating =
      a.byte_size() + n2 * wide + std::max(n2 * wide, LibraryWorkspace(a.rows, a.cols, wide));
  // An INT64 determinant may go on to the exact value: the entries and a batch of residue
  // matrices, one per prime (core/cuda/exact_determinant.h). Its host bytes are read for
  // Hadamard's bound (an INT64 determinant is always given host bytes).
  uint64_t peak = floating;
  if (a.dtype == DType::kInt64) {
    peak = std::max(floating, modular);
    if (!a.on_device() && a.rows == a.cols && a.rows >= 1) {
      const uint64_t exact = ExactDeterminantDeviceBytes(a.rows, PlanExactDeterminant(a, options));
      // Then the entries are uploaded once and kept through the floating-point phase too.
      if (exact > 0) peak = std::max(peak, floating + a.byte_size());
      peak = std::max(peak, exact);
    }
  }
  return peak + kMargin;
}

uint64_t FactorizeDeviceBytes(const MatrixView& a, const FactorizeOptions& options,
                              const MatrixView* rhs) {
  const uint64_t element = ElementSize(a.dtype);
  const int64_t matrices = std::max<int64_t>(options.batch_count, 1);
  const int64_t rows = a.rows / matrices;
  // Staging (layout change), factors, and R or a second copy for QR; the right-hand side staged
  // and solved; one workspace (a batch's matrices are factorized together or one after another).
  // Refinement keeps B, X, the residual and the previous X, and a row-major copy of A next to the
  // factors; cuSOLVER IRS's workspace (a low-precision copy of A) fits in `workspace`'s share.
  const uint64_t rhs_bytes =
      rhs != nullptr ? (options.refine.enabled ? 5 : 2) * rhs->byte_size() : 0;
  const uint64_t workspace = LibraryWorkspace(rows, a.cols, element);
  // A batch adds, per matrix, pointer arrays (two), 32- and 64-bit pivots and status words.
  const uint64_t per_matrix =
      options.batch_count > 0
          ? static_cast<uint64_t>(matrices) *
                (2 * sizeof(void*) +
                 static_cast<uint64_t>(a.cols) * (sizeof(int) + sizeof(int64_t)) + 4 * sizeof(int))
          : 0;
  return 3 * a.byte_size() + rhs_bytes + workspace + per_matrix + kMargin;
}

uint64_t MultiplyDeviceBytes(const MatrixView& a, const MatrixView& b,
                             const MultiplyOptions& options) {
  const int64_t m = options.transpose_a ? a.cols : a.rows;
  const int64_t n = options.transpose_b ? b.rows : b.cols;
  const uint64_t c = static_cast<uint64_t>(std::max<int64_t>(m, 0)) *
                     static_cast<uint64_t>(std::max<int64_t>(n, 0)) * ElementSize(a.dtype);
  // Freivalds' check (options.verify): its vectors and the thin products' partial sums and
  // scratch (core/cuda/freivalds.h), A's pieces where A is uploaded.
  const uint64_t check =
      options.verify ? ProductCheckDeviceBytes(a, b, options.transpose_a, options.transpose_b,
                                               kFreivaldsVectors, !a.on_device())
                     : 0;
  // Block-sparse products keep block lists and per-block partial products; UINT32 products split
  // the operands into exactly representable pieces: allow twice the dense operands.
  if (options.block_size > 0 || a.dtype == DType::kUInt32) {
    return 2 * (a.byte_size() + b.byte_size() + c + check) + kMargin;
  }
  // A dense product reads operands already in device memory (resident matrices) in place.
  const auto copied = [](const MatrixView& x) { return x.on_device() ? 0 : x.byte_size(); };
  return copied(a) + copied(b) + c + check + kMargin;
}

uint64_t PermanentDeviceBytes(const MatrixView& a, const PermanentOptions& /*options*/) {
  // The matrix (widened to complex double at most) and per-block partial sums.
  return Elements(a) * 16 + (uint64_t{16} << 20) + kMargin;
}

}  // namespace matrixd::cuda
