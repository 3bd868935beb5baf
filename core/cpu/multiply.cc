#include "core/cpu/multiply.h"

#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cpu/block_sparse.h"
#include "core/cpu/freivalds.h"
#include "core/cpu/lapack_types.h"
#include "core/status_macros.h"

namespace matrixd::cpu {
namespace {

// Rows of C per task of the dense UINT32 product: enough to reuse each panel of B many times.
constexpr int64_t kRowsPerTask = 128;
// Below this many multiply-adds a UINT32 product is done before threads would have started.
constexpr double kSmallProduct = 1 << 20;

int64_t CeilDiv(int64_t x, int64_t d) { return x / d + (x % d != 0 ? 1 : 0); }

// The transpose of x as a new row-major matrix, in square tiles so that both the reads and the
// writes stay within a few cache lines at a time.
template <typename T>
Matrix Transposed(const MatrixView& x) {
  constexpr int64_t kTile = 32;
  Matrix t(x.cols, x.rows, x.dtype);
  const T* src = x.As<T>().data();
  T* dst = t.As<T>().data();
  for (int64_t i0 = 0; i0 < x.rows; i0 += kTile) {
    const int64_t i1 = std::min(x.rows, i0 + kTile);
    for (int64_t j0 = 0; j0 < x.cols; j0 += kTile) {
      const int64_t j1 = std::min(x.cols, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = j0; j < j1; ++j) dst[j * x.rows + i] = src[i * x.cols + j];
      }
    }
  }
  return t;
}

// op(x): x itself, or its transpose materialised in `storage`.
template <typename T>
MatrixView Op(const MatrixView& x, bool transpose, Matrix& storage) {
  if (!transpose) return x;
  storage = Transposed<T>(x);
  return storage.view();
}

absl::StatusOr<MultiplyResult> DenseUInt32(const MatrixView& a, const MatrixView& b,
                                           const MultiplyOptions& options, int threads,
                                           JobControl* control) {
  Matrix a_storage;
  Matrix b_storage;
  const MatrixView op_a = Op<uint32_t>(a, options.transpose_a, a_storage);
  const MatrixView op_b = Op<uint32_t>(b, options.transpose_b, b_storage);
  const int64_t m = op_a.rows;
  const int64_t k = op_a.cols;
  const int64_t n = op_b.cols;
  MultiplyResult result;
  result.c = Matrix(m, n, a.dtype);
  // Cleared explicitly: Matrix's storage (std::max_align_t) can keep stale padding bytes.
  std::memset(result.c.mutable_bytes(), 0, result.c.byte_size());
  const uint32_t* a_data = op_a.As<uint32_t>().data();
  const uint32_t* b_data = op_b.As<uint32_t>().data();
  uint32_t* c_data = result.c.As<uint32_t>().data();
  const bool small =
      static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) < kSmallProduct;
  const bool completed =
      RunParallel(CeilDiv(m, kRowsPerTask), small ? 1 : threads, control, [&](int64_t task) {
        const int64_t i0 = task * kRowsPerTask;
        MultiplyAddUInt32(std::min(kRowsPerTask, m - i0), n, k, a_data + i0 * k, k, b_data, n,
                          c_data + i0 * n, n);
      });
  if (!completed) return absl::CancelledError("multiplication cancelled");
  result.stats.flops =
      2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return result;
}

// gemm reads the transposes in place through its flags.
template <typename T>
MultiplyResult DenseFloating(const MatrixView& a, const MatrixView& b,
                             const MultiplyOptions& options) {
  const int64_t m = options.transpose_a ? a.cols : a.rows;
  const int64_t k = options.transpose_a ? a.rows : a.cols;
  const int64_t n = options.transpose_b ? b.rows : b.cols;
  MultiplyResult result;
  result.c = Matrix(m, n, a.dtype);
  Gemm<T>(options.transpose_a ? CblasTrans : CblasNoTrans,
          options.transpose_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
          static_cast<blasint>(n), static_cast<blasint>(k), T(1), a.As<T>().data(),
          static_cast<blasint>(a.cols), b.As<T>().data(), static_cast<blasint>(b.cols), T(0),
          result.c.As<T>().data(), static_cast<blasint>(n));
  result.stats.flops = (kIsComplex<T> ? 8.0 : 2.0) * static_cast<double>(m) *
                       static_cast<double>(n) * static_cast<double>(k);
  return result;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs Freivalds' check of result.c and records the product and the check as two kernels (the
// backend records the whole operation as one only when no kernel is listed).
absl::Status VerifyProduct(const MatrixView& a, const MatrixView& b, const MultiplyOptions& options,
                           double product_seconds, MultiplyResult& result) {
  result.stats.kernels.push_back({.kernel = options.block_size > 0 ? "block_sparse_gemm" : "gemm",
                                  .seconds = product_seconds,
                                  .bytes = result.stats.bytes_moved,
                                  .flops = result.stats.flops});
  const auto start = std::chrono::steady_clock::now();
  const FreivaldsOptions freivalds{.seed = FreivaldsSeed(options.deterministic)};
  MATRIXD_ASSIGN_OR_RETURN(result.check, CheckProduct(a, b, result.c.view(), options.transpose_a,
                                                      options.transpose_b, freivalds));
  const double m = static_cast<double>(result.c.rows());
  const double n = static_cast<double>(result.c.cols());
  const double k = static_cast<double>(options.transpose_a ? a.rows : a.cols);
  result.stats.kernels.push_back(
      {.kernel = "freivalds",
       .seconds = SecondsSince(start),
       .bytes = a.byte_size() + b.byte_size() + result.c.byte_size(),
       .flops = (IsComplex(a.dtype) ? 8.0 : 2.0) * freivalds.vectors * (k * n + m * k + m * n)});
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<MultiplyResult> MultiplyTyped(const MatrixView& a, const MatrixView& b,
                                             const MultiplyOptions& options, int threads,
                                             JobControl* control) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<MultiplyResult> result;
  if (options.block_size > 0) {
    // Materialised transposes keep the block walk on plain row-major operands; the copies cost
    // O(n^2) next to the product's O(n^3).
    Matrix a_storage;
    Matrix b_storage;
    result = BlockSparseMultiply(Op<T>(a, options.transpose_a, a_storage),
                                 Op<T>(b, options.transpose_b, b_storage), options.block_size,
                                 threads, control);
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    result = DenseUInt32(a, b, options, threads, control);
  } else {
    result = DenseFloating<T>(a, b, options);
  }
  if (result.ok()) {
    result->stats.bytes_moved = a.byte_size() + b.byte_size() + result->c.byte_size();
    if (options.verify) {
      MATRIXD_RETURN_IF_ERROR(VerifyProduct(a, b, options, SecondsSince(start), *result));
    }
  }
  return result;
}

// The checks that keep BLAS and our loops inside their buffers; the rest is the caller's
// validation.
absl::Status CheckShapes(const MatrixView& a, const MatrixView& b, const MultiplyOptions& options) {
  if (b.dtype != a.dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("b.dtype is ", DTypeName(b.dtype), "; want a.dtype ", DTypeName(a.dtype)));
  }
  constexpr int64_t kMaxDim = std::numeric_limits<blasint>::max();
  for (const MatrixView* x : {&a, &b}) {
    if (x->rows < 1 || x->cols < 1 || x->rows > kMaxDim || x->cols > kMaxDim) {
      return absl::InvalidArgumentError(
          absl::StrCat("operand of shape ", x->rows, "x", x->cols, " is out of range"));
    }
  }
  const int64_t inner_a = options.transpose_a ? a.rows : a.cols;
  const int64_t inner_b = options.transpose_b ? b.cols : b.rows;
  if (inner_a != inner_b) {
    return absl::InvalidArgumentError(absl::StrCat("inner dimensions disagree: op(a) has ", inner_a,
                                                   " columns, op(b) ", inner_b, " rows"));
  }
  if (options.block_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("block_size is ", options.block_size, "; want 0 (dense) or > 0"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                        const MultiplyOptions& options, int threads,
                                        JobControl* control) {
  if (IsCancelled(control)) return absl::CancelledError("multiplication cancelled");
  MATRIXD_RETURN_IF_ERROR(CheckShapes(a, b, options));
  switch (a.dtype) {
    case DType::kFloat32:
      return MultiplyTyped<float>(a, b, options, threads, control);
    case DType::kFloat64:
      return MultiplyTyped<double>(a, b, options, threads, control);
    case DType::kComplex64:
      return MultiplyTyped<std::complex<float>>(a, b, options, threads, control);
    case DType::kComplex128:
      return MultiplyTyped<std::complex<double>>(a, b, options, threads, control);
    case DType::kUInt32:
      return MultiplyTyped<uint32_t>(a, b, options, threads, control);
    case DType::kInt64:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("a.dtype is ", DTypeName(a.dtype),
                   "; want float32, float64, complex64, complex128 or uint32"));
}

}  // namespace matrixd::cpu
