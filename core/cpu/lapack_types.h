// The LAPACKE and CBLAS routines of each floating-point element type, so that an algorithm is
// written once as a template: Lapack<T>::getrf is LAPACKE_sgetrf, _dgetrf, _cgetrf or _zgetrf.
// Include this header instead of <lapacke.h> and <cblas.h>.
#ifndef MATRIXD_CORE_CPU_LAPACK_TYPES_H_
#define MATRIXD_CORE_CPU_LAPACK_TYPES_H_

#include <complex>
#include <type_traits>

// std::complex for LAPACK's complex types: the same layout as Fortran's COMPLEX, and it keeps C99
// _Complex (not ISO C++) out of our code.
#ifndef LAPACK_COMPLEX_CUSTOM
#define LAPACK_COMPLEX_CUSTOM
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#endif
#include <cblas.h>
#include <lapacke.h>

namespace matrixd::cpu {

template <typename T>
inline constexpr bool kIsComplex = false;
template <typename R>
inline constexpr bool kIsComplex<std::complex<R>> = true;

// The routines of element type T. `orgqr` is ?ungqr for the complex types; `lange` returns the
// real norm of either, and the condition estimates (`gecon`, `pocon`, `trcon`) a real rcond.
template <typename T>
struct Lapack;

template <>
struct Lapack<float> {
  static constexpr auto getrf = &LAPACKE_sgetrf;
  static constexpr auto getrs = &LAPACKE_sgetrs;
  static constexpr auto potrf = &LAPACKE_spotrf;
  static constexpr auto potrs = &LAPACKE_spotrs;
  static constexpr auto geqrf = &LAPACKE_sgeqrf;
  static constexpr auto orgqr = &LAPACKE_sorgqr;
  static constexpr auto gemm = &cblas_sgemm;
  static constexpr auto trsm = &cblas_strsm;
  static constexpr auto trsv = &cblas_strsv;
  static constexpr auto gemv = &cblas_sgemv;
  static constexpr auto lange = &LAPACKE_slange;
  static constexpr auto gecon = &LAPACKE_sgecon;
  static constexpr auto pocon = &LAPACKE_spocon;
  static constexpr auto trcon = &LAPACKE_strcon;
};

template <>
struct Lapack<double> {
  static constexpr auto getrf = &LAPACKE_dgetrf;
  static constexpr auto getrs = &LAPACKE_dgetrs;
  static constexpr auto potrf = &LAPACKE_dpotrf;
  static constexpr auto potrs = &LAPACKE_dpotrs;
  static constexpr auto geqrf = &LAPACKE_dgeqrf;
  static constexpr auto orgqr = &LAPACKE_dorgqr;
  static constexpr auto gemm = &cblas_dgemm;
  static constexpr auto trsm = &cblas_dtrsm;
  static constexpr auto trsv = &cblas_dtrsv;
  static constexpr auto gemv = &cblas_dgemv;
  static constexpr auto lange = &LAPACKE_dlange;
  static constexpr auto gecon = &LAPACKE_dgecon;
  static constexpr auto pocon = &LAPACKE_dpocon;
  static constexpr auto trcon = &LAPACKE_dtrcon;
};

template <>
struct Lapack<std::complex<float>> {
  static constexpr auto getrf = &LAPACKE_cgetrf;
  static constexpr auto getrs = &LAPACKE_cgetrs;
  static constexpr auto potrf = &LAPACKE_cpotrf;
  static constexpr auto potrs = &LAPACKE_cpotrs;
  static constexpr auto geqrf = &LAPACKE_cgeqrf;
  static constexpr auto orgqr = &LAPACKE_cungqr;
  static constexpr auto gemm = &cblas_cgemm;
  static constexpr auto trsm = &cblas_ctrsm;
  static constexpr auto trsv = &cblas_ctrsv;
  static constexpr auto gemv = &cblas_cgemv;
  static constexpr auto lange = &LAPACKE_clange;
  static constexpr auto gecon = &LAPACKE_cgecon;
  static constexpr auto pocon = &LAPACKE_cpocon;
  static constexpr auto trcon = &LAPACKE_ctrcon;
};

template <>
struct Lapack<std::complex<double>> {
  static constexpr auto getrf = &LAPACKE_zgetrf;
  static constexpr auto getrs = &LAPACKE_zgetrs;
  static constexpr auto potrf = &LAPACKE_zpotrf;
  static constexpr auto potrs = &LAPACKE_zpotrs;
  static constexpr auto geqrf = &LAPACKE_zgeqrf;
  static constexpr auto orgqr = &LAPACKE_zungqr;
  static constexpr auto gemm = &cblas_zgemm;
  static constexpr auto trsm = &cblas_ztrsm;
  static constexpr auto trsv = &cblas_ztrsv;
  static constexpr auto gemv = &cblas_zgemv;
  static constexpr auto lange = &LAPACKE_zlange;
  static constexpr auto gecon = &LAPACKE_zgecon;
  static constexpr auto pocon = &LAPACKE_zpocon;
  static constexpr auto trcon = &LAPACKE_ztrcon;
};

// CBLAS takes real scalars by value and complex ones through a pointer.
template <typename T>
auto BlasScalar(const T& x) {
  if constexpr (kIsComplex<T>) {
    return static_cast<const void*>(&x);
  } else {
    return x;
  }
}

// C := alpha op(A) op(B) + beta C, row-major; op(A) is m x k, op(B) k x n.
template <typename T>
void Gemm(CBLAS_TRANSPOSE trans_a, CBLAS_TRANSPOSE trans_b, blasint m, blasint n, blasint k,
          T alpha, const T* a, blasint lda, const T* b, blasint ldb, T beta, T* c, blasint ldc) {
  Lapack<T>::gemm(CblasRowMajor, trans_a, trans_b, m, n, k, BlasScalar(alpha), a, lda, b, ldb,
                  BlasScalar(beta), c, ldc);
}

// B := A^-1 B, row-major, with A (m x m) upper triangular with a non-unit diagonal.
template <typename T>
void SolveUpperTriangular(blasint m, blasint n, const T* a, blasint lda, T* b, blasint ldb) {
  const T one = 1;
  Lapack<T>::trsm(CblasRowMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, m, n,
                  BlasScalar(one), a, lda, b, ldb);
}

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_LAPACK_TYPES_H_
