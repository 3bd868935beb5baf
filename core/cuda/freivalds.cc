#include "core/cuda/freivalds.h"

#include <cublas_v2.h>

#include <complex>
#include <cstddef>

#include "core/cuda/cuda_status.h"
#include "core/cuda/kernel_timer.h"
#include "core/cuda/library_types.h"
#include "core/cuda/scoped_math_mode.h"
#include "core/status_macros.h"

namespace matrixd::cuda {
namespace {

template <typename T>
const typename LibraryTraits<T>::Device* Const(const void* data) {
  return static_cast<const typename LibraryTraits<T>::Device*>(data);
}

// Row-major out (rows x s) = op(M) X with X row-major (inner x s): in cuBLAS's column-major
// terms out^T = X^T op(M)^T, and M's row-major buffer read column-major is M^T, so op(M)^T is the
// buffer under the same op flag (as DenseMultiply in multiply.cc).
template <typename T>
absl::Status ThinProduct(DeviceContext& context, bool transpose, int rows, int inner, int s,
                         const void* m, int ldm, const void* x, void* out) {
  using Traits = LibraryTraits<T>;
  const typename Traits::Device one = Traits::One();
  const typename Traits::Device zero = Traits::Zero();
  MATRIXD_CUDA_RETURN_IF_ERROR(Traits::gemm(
      context.cublas(), CUBLAS_OP_N, transpose ? CUBLAS_OP_T : CUBLAS_OP_N, s, rows, inner, &one,
      Const<T>(x), s, Const<T>(m), ldm, &zero, LibraryPointer<T>(out), s));
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<ProductCheck> CheckTyped(const MatrixView& a, const MatrixView& b,
                                        const MatrixView& c, bool transpose_a, bool transpose_b,
                                        const ProductShape& shape, DeviceContext& context,
                                        const FreivaldsOptions& options) {
  using Traits = LibraryTraits<T>;
  const int s = options.vectors;
  const auto m = static_cast<int>(shape.m);
  const auto k = static_cast<int>(shape.k);
  const auto n = static_cast<int>(shape.n);
  const Matrix x = FreivaldsVectors(shape.n, s, options.seed, a.dtype);
  Matrix z(shape.m, s, a.dtype);
  Matrix w(shape.m, s, a.dtype);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_x, context.Allocate(x.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_y,
                           context.Allocate(static_cast<size_t>(k) * s * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_z, context.Allocate(z.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_w, context.Allocate(w.byte_size()));
  MATRIXD_RETURN_IF_ERROR(context.Upload(x.bytes(), device_x, x.byte_size()));
  // Full precision even when the product ran on TF32 tensor cores: the check must not share the
  // product's rounding.
  MATRIXD_ASSIGN_OR_RETURN(ScopedMathMode math_mode,
                           ScopedMathMode::Set(context.cublas(), CUBLAS_DEFAULT_MATH));
  MATRIXD_RETURN_IF_ERROR(ThinProduct<T>(context, transpose_b, k, n, s, b.data,
                                         static_cast<int>(b.cols), device_x.data(),
                                         device_y.data()));
  MATRIXD_RETURN_IF_ERROR(ThinProduct<T>(context, transpose_a, m, k, s, a.data,
                                         static_cast<int>(a.cols), device_y.data(),
                                         device_z.data()));
  MATRIXD_RETURN_IF_ERROR(
      ThinProduct<T>(context, false, m, n, s, c.data, n, device_x.data(), device_w.data()));
  // nrm2 with the handle's default host pointer mode waits for its result.
  typename Traits::Real norm_a = 0;
  typename Traits::Real norm_b = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(
      Traits::nrm2(context.cublas(), static_cast<int>(a.size()), Const<T>(a.data), 1, &norm_a));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      Traits::nrm2(context.cublas(), static_cast<int>(b.size()), Const<T>(b.data), 1, &norm_b));
  MATRIXD_RETURN_IF_ERROR(context.Download(device_z, z.mutable_bytes(), z.byte_size()));
  MATRIXD_RETURN_IF_ERROR(context.Download(device_w, w.mutable_bytes(), w.byte_size()));
  return FreivaldsVerdict(z.view(), w.view(), static_cast<double>(norm_a),
                          static_cast<double>(norm_b), shape.k, shape.n, options);
}

}  // namespace

absl::StatusOr<ProductCheck> CheckProduct(const MatrixView& a, const MatrixView& b,
                                          const MatrixView& c, bool transpose_a, bool transpose_b,
                                          DeviceContext& context, const FreivaldsOptions& options) {
  MATRIXD_ASSIGN_OR_RETURN(const ProductShape shape,
                           FreivaldsShape(a, b, c, transpose_a, transpose_b, options));
  return VisitFloatingType(a.dtype, [&](auto type) {
    return CheckTyped<typename decltype(type)::type>(a, b, c, transpose_a, transpose_b, shape,
                                                     context, options);
  });
}

absl::Status VerifyProduct(const MatrixView& a, const MatrixView& b, const MatrixView& c,
                           const MultiplyOptions& options, DeviceContext& context,
                           MultiplyResult* result) {
  const FreivaldsOptions freivalds{.seed = FreivaldsSeed(options.deterministic),
                                   .tf32 = options.allow_tf32};
  MATRIXD_ASSIGN_OR_RETURN(KernelTimer timer, KernelTimer::Start(context.stream()));
  MATRIXD_ASSIGN_OR_RETURN(result->check, CheckProduct(a, b, c, options.transpose_a,
                                                       options.transpose_b, context, freivalds));
  MATRIXD_RETURN_IF_ERROR(timer.Stop());
  const double m = static_cast<double>(c.rows);
  const double n = static_cast<double>(c.cols);
  const double k = static_cast<double>(options.transpose_a ? a.rows : a.cols);
  return timer.AppendTo(
      &result->stats, "freivalds", a.byte_size() + b.byte_size() + c.byte_size(),
      (IsComplex(a.dtype) ? 8.0 : 2.0) * freivalds.vectors * (k * n + m * k + m * n));
}

}  // namespace matrixd::cuda
