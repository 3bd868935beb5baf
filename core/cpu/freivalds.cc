#include "core/cpu/freivalds.h"

#include <complex>

#include "core/cpu/lapack_types.h"
#include "core/status_macros.h"

namespace matrixd::cpu {
namespace {

CBLAS_TRANSPOSE Op(bool transpose) { return transpose ? CblasTrans : CblasNoTrans; }

template <typename T>
double FrobeniusNorm(const MatrixView& x) {
  return static_cast<double>(Lapack<T>::lange(LAPACK_ROW_MAJOR, 'F', static_cast<blasint>(x.rows),
                                              static_cast<blasint>(x.cols), x.As<T>().data(),
                                              static_cast<blasint>(x.cols)));
}

// Each gemm below has s columns on the right, so it streams its big operand once (memory-bound,
// as s separate gemv calls would not be: they would read it s times).
template <typename T>
ProductCheck CheckTyped(const MatrixView& a, const MatrixView& b, const MatrixView& c,
                        bool transpose_a, bool transpose_b, const ProductShape& shape,
                        const FreivaldsOptions& options) {
  const blasint s = options.vectors;
  const auto m = static_cast<blasint>(shape.m);
  const auto k = static_cast<blasint>(shape.k);
  const auto n = static_cast<blasint>(shape.n);
  const Matrix x = FreivaldsVectors(shape.n, options.vectors, options.seed, a.dtype);
  Matrix y(shape.k, s, a.dtype);
  Matrix z(shape.m, s, a.dtype);
  Matrix w(shape.m, s, a.dtype);
  const T one = 1;
  const T zero = 0;
  Gemm<T>(Op(transpose_b), CblasNoTrans, k, s, n, one, b.As<T>().data(),
          static_cast<blasint>(b.cols), x.As<T>().data(), s, zero, y.As<T>().data(), s);
  Gemm<T>(Op(transpose_a), CblasNoTrans, m, s, k, one, a.As<T>().data(),
          static_cast<blasint>(a.cols), y.As<T>().data(), s, zero, z.As<T>().data(), s);
  Gemm<T>(CblasNoTrans, CblasNoTrans, m, s, n, one, c.As<T>().data(), n, x.As<T>().data(), s, zero,
          w.As<T>().data(), s);
  return FreivaldsVerdict(z.view(), w.view(), FrobeniusNorm<T>(a), FrobeniusNorm<T>(b), shape.k,
                          shape.n, options);
}

}  // namespace

absl::StatusOr<ProductCheck> CheckProduct(const MatrixView& a, const MatrixView& b,
                                          const MatrixView& c, bool transpose_a, bool transpose_b,
                                          const FreivaldsOptions& options) {
  MATRIXD_ASSIGN_OR_RETURN(const ProductShape shape,
                           FreivaldsShape(a, b, c, transpose_a, transpose_b, options));
  switch (a.dtype) {
    case DType::kFloat32:
      return CheckTyped<float>(a, b, c, transpose_a, transpose_b, shape, options);
    case DType::kComplex64:
      return CheckTyped<std::complex<float>>(a, b, c, transpose_a, transpose_b, shape, options);
    case DType::kComplex128:
      return CheckTyped<std::complex<double>>(a, b, c, transpose_a, transpose_b, shape, options);
    default:
      return CheckTyped<double>(a, b, c, transpose_a, transpose_b, shape, options);
  }
}

}  // namespace matrixd::cpu
