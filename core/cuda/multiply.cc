#include "core/cuda/multiply.h"

#include <algorithm>
#include <complex>
#include <cstddef>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/block_sparse.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/device_operand.h"
#include "core/cuda/device_view.h"
#include "core/cuda/freivalds.h"
#include "core/cuda/kernel_timer.h"
#include "core/cuda/library_types.h"
#include "core/cuda/resident_matrix.h"
#include "core/cuda/scoped_math_mode.h"
#include "core/cuda/uint32_gemm.h"

namespace matrixd::cuda {
namespace {

// A's upload: in the row pieces `check` asks for (its part on each running beside the rest of
// the upload), then joined so that the product has the device to itself; in one copy without a
// check or where it takes A whole.
absl::Status UploadA(const MatrixView& a, DeviceBuffer& device_a, ProductCheckInFlight* check,
                     DeviceContext& context) {
  if (check == nullptr || check->a_pieces().empty()) {
    return context.Upload(a.data, device_a, a.byte_size());
  }
  const size_t row_bytes = static_cast<size_t>(a.cols) * ElementSize(a.dtype);
  for (size_t piece = 0; piece < check->a_pieces().size(); ++piece) {
    const RowRange rows = check->a_pieces()[piece];
    const size_t offset = static_cast<size_t>(rows.first) * row_bytes;
    MATRIXD_RETURN_IF_ERROR(context.StagedUpload(a.data + offset,
                                                 static_cast<char*>(device_a.data()) + offset,
                                                 static_cast<size_t>(rows.count) * row_bytes));
    MATRIXD_RETURN_IF_ERROR(check->APieceLanded(piece));
  }
  return check->JoinBeforeProduct();
}

// C = op(A) op(B) with A, B, C row-major. A row-major array read column-major is its transpose,
// so cuBLAS computes C^T = op(B)^T op(A)^T in its column-major terms: gemm with B and A swapped
// and the same op flags (B's buffer read column-major is B^T, so op(B)^T is B^T as stored for no
// transpose, and (B^T)^T for a transpose). No data is moved to change the layout.
template <typename T>
absl::StatusOr<MultiplyResult> DenseMultiply(const MatrixView& a, const MatrixView& b,
                                             const MultiplyOptions& options,
                                             DeviceContext& context) {
  using Traits = LibraryTraits<T>;
  const int64_t m = options.transpose_a ? a.cols : a.rows;
  const int64_t k = options.transpose_a ? a.rows : a.cols;
  const int64_t n = options.transpose_b ? b.rows : b.cols;
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (m > kIntMax || n > kIntMax || k > kIntMax || a.cols > kIntMax || b.cols > kIntMax) {
    return absl::InvalidArgumentError(
        absl::StrCat("product of ", m, "x", k, " and ", k, "x", n, " exceeds cuBLAS's int range"));
  }

  MultiplyResult result;
  const size_t c_bytes = static_cast<size_t>(m) * static_cast<size_t>(n) * sizeof(T);
  // C straight into the caller's resident matrix when it lives on this device: no round trip.
  void* const c_out = InPlaceOutput(options.output, c_bytes, a.dtype, context);
  if (c_out == nullptr) result.c = Matrix::ForOverwrite(m, n, a.dtype);  // downloaded in full
  // An operand already in this device's memory (a resident matrix) is read in place, unless C is
  // written over it; the others are uploaded into buffers of their own.
  const auto in_place = [&](const MatrixView& x) {
    if (!InPlaceOnDevice(x, context)) return false;
    if (c_out == nullptr) return true;
    const auto* c_begin = static_cast<const std::byte*>(c_out);
    return x.data + x.byte_size() <= c_begin || c_begin + c_bytes <= x.data;
  };
  const bool a_in_place = in_place(a);
  const bool b_in_place = in_place(b);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_a, context.Allocate(a_in_place ? 0 : a.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_b, context.Allocate(b_in_place ? 0 : b.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_c, context.Allocate(c_out != nullptr ? 0 : c_bytes));
  const void* const a_data = a_in_place ? a.data : device_a.data();
  const void* const b_data = b_in_place ? b.data : device_b.data();
  void* const c_target = c_out != nullptr ? c_out : device_c.data();
  // The operands and C on the device, as Freivalds' check reads them.
  const MatrixView check_a = DeviceMatrixView(a.rows, a.cols, a.dtype, a_data);
  const MatrixView check_b = DeviceMatrixView(b.rows, b.cols, a.dtype, b_data);
  const MatrixView check_c = DeviceMatrixView(m, n, a.dtype, c_target);
  // B first: the check's part that reads only B then runs while A is uploaded (freivalds.h).
  if (!b_in_place) MATRIXD_RETURN_IF_ERROR(context.Upload(b.data, device_b, b.byte_size()));
  std::unique_ptr<ProductCheckInFlight> check;
  if (options.verify) {
    MATRIXD_ASSIGN_OR_RETURN(check, BeginVerifyProduct(check_a, check_b, check_c, options, context,
                                                       /*a_upload_follows=*/!a_in_place));
  }
  if (!a_in_place) MATRIXD_RETURN_IF_ERROR(UploadA(a, device_a, check.get(), context));

  MATRIXD_ASSIGN_OR_RETURN(KernelTimer gemm_timer, KernelTimer::Start(context.stream()));
  {
    // TF32 tensor cores only when asked for, and only for this call: the handle is shared by
    // every operation on this device.
    cublasMath_t mode = CUBLAS_DEFAULT_MATH;
    if constexpr (std::is_same_v<T, float>) {
      if (options.allow_tf32) mode = CUBLAS_TF32_TENSOR_OP_MATH;
    }
    MATRIXD_ASSIGN_OR_RETURN(ScopedMathMode math_mode, ScopedMathMode::Set(context.cublas(), mode));
    const typename Traits::Device one = Traits::One();
    const typename Traits::Device zero = Traits::Zero();
    MATRIXD_CUDA_RETURN_IF_ERROR(Traits::gemm(
        context.cublas(), options.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
        options.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
        static_cast<int>(k), &one, static_cast<const typename Traits::Device*>(b_data),
        static_cast<int>(b.cols), static_cast<const typename Traits::Device*>(a_data),
        static_cast<int>(a.cols), &zero, LibraryPointer<T>(c_target), static_cast<int>(n)));
  }
  MATRIXD_RETURN_IF_ERROR(gemm_timer.Stop());
  const double flops_per_update = std::is_same_v<T, float> || std::is_same_v<T, double> ? 2.0 : 8.0;
  result.stats.flops =
      flops_per_update * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  result.stats.bytes_moved = a.byte_size() + b.byte_size() + c_bytes;
  if (std::is_same_v<T, float> && options.allow_tf32) result.stats.precision = "tf32";
  if (check != nullptr) {
    // Before C leaves the device (or while it stays in the resident output), and queued before
    // anything here waits for the product, so that the check follows it on the device at once.
    MATRIXD_RETURN_IF_ERROR(
        FinishVerifyProduct(*check, check_a, check_b, check_c, options, context, &result));
  }
  MATRIXD_RETURN_IF_ERROR(gemm_timer.AppendTo(&result.stats, "cublas_gemm",
                                              result.stats.bytes_moved, result.stats.flops));
  // The product's record first, the check's after it.
  std::rotate(result.stats.kernels.begin(), result.stats.kernels.end() - 1,
              result.stats.kernels.end());
  if (c_out != nullptr) {
    // The caller names the matrix next; other streams may read it then.
    MATRIXD_RETURN_IF_ERROR(context.Synchronize());
  } else
    MATRIXD_RETURN_IF_ERROR(
        context.Download(device_c, result.c.mutable_bytes(), result.c.byte_size()));
  return result;
}

}  // namespace

absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                        const MultiplyOptions& options, DeviceContext& context,
                                        JobControl* control) {
  if (IsCancelled(control)) return absl::CancelledError("multiply cancelled");
  if (a.dtype != b.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("b.dtype is ", std::string(DTypeName(b.dtype)),
                                                   "; want a.dtype ",
                                                   std::string(DTypeName(a.dtype))));
  }
  if (!IsFloating(a.dtype) && a.dtype != DType::kUInt32) {
    return absl::InvalidArgumentError(
        absl::StrCat("a.dtype is ", std::string(DTypeName(a.dtype)),
                     "; want float32, float64, complex64, complex128 or uint32"));
  }
  if (options.verify && !IsFloating(a.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("verify is set but a.dtype is ", std::string(DTypeName(a.dtype)),
                     "; Freivalds' check takes float32, float64, complex64 or complex128"));
  }
  const int64_t a_cols = options.transpose_a ? a.rows : a.cols;
  const int64_t b_rows = options.transpose_b ? b.cols : b.rows;
  if (a_cols != b_rows || a.size() == 0 || b.size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("op(a) has ", a_cols, " columns and op(b) ",
                                                   b_rows, " rows; want equal and non-zero"));
  }
  absl::StatusOr<MultiplyResult> result;
  if (options.block_size > 0) {
    result = BlockSparseMultiply(a, b, options, context, control);
  } else if (a.dtype == DType::kUInt32) {
    result = Uint32Multiply(a, b, options, context, control);
  } else {
    result = VisitFloatingType(a.dtype, [&](auto type) {
      return DenseMultiply<typename decltype(type)::type>(a, b, options, context);
    });
    if (!result.ok()) {
      result = absl::Status(
          result.status().code(),
          absl::StrCat("cuBLAS gemm of ", std::string(DTypeName(a.dtype)), " ", a.rows, "x", a.cols,
                       " by ", b.rows, "x", b.cols, ": ", result.status().message()));
    }
  }
  if (result.ok()) ReportProgress(control, 1.0);
  return result;
}

}  // namespace matrixd::cuda
