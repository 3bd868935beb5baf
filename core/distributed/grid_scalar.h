// The element types of the grid's ScaLAPACK jobs, so that a job is written once as a template:
// each type's MPI datatype, its p?gemm (float32, float64, complex64, complex128) and its p?getrf
// and p?getrs (float64 and complex128: the determinant widens float32 and complex64 first, as the
// CPU backend does), as overloads; and the switch from a DType to the template's element type.
// REQUIRES for every call: the arguments ScaLAPACK documents for the routine.
#ifndef MATRIXD_CORE_DISTRIBUTED_GRID_SCALAR_H_
#define MATRIXD_CORE_DISTRIBUTED_GRID_SCALAR_H_

#include <mpi.h>

#include <complex>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/distributed/scalapack.h"
#include "core/matrix.h"

namespace matrixd::distributed {

template <typename T>
MPI_Datatype MpiElement();
template <>
inline MPI_Datatype MpiElement<float>() {
  return MPI_FLOAT;
}
template <>
inline MPI_Datatype MpiElement<double>() {
  return MPI_DOUBLE;
}
template <>
inline MPI_Datatype MpiElement<std::complex<float>>() {
  return MPI_C_FLOAT_COMPLEX;
}
template <>
inline MPI_Datatype MpiElement<std::complex<double>>() {
  return MPI_C_DOUBLE_COMPLEX;
}

// ScaLAPACK's letter of the type, as in p?gemm: s, d, c, z.
template <typename T>
constexpr char ScalapackLetter() {
  switch (DTypeOf<T>()) {
    case DType::kFloat32:
      return 's';
    case DType::kFloat64:
      return 'd';
    case DType::kComplex64:
      return 'c';
    default:
      return 'z';
  }
}

// C = op(A) op(B) (alpha 1, beta 0), whole distributed matrices (ia = ja = 1).
#define MATRIXD_GRID_GEMM(T, routine)                                                              \
  inline void Gemm(char trans_a, char trans_b, int m, int n, int k, const T* a, const int* desc_a, \
                   const T* b, const int* desc_b, T* c, const int* desc_c) {                       \
    const int one = 1;                                                                             \
    const T alpha(1);                                                                              \
    const T beta(0);                                                                               \
    routine(&trans_a, &trans_b, &m, &n, &k, &alpha, a, &one, &one, desc_a, b, &one, &one, desc_b,  \
            &beta, c, &one, &one, desc_c);                                                         \
  }
MATRIXD_GRID_GEMM(float, psgemm_)
MATRIXD_GRID_GEMM(double, pdgemm_)
MATRIXD_GRID_GEMM(std::complex<float>, pcgemm_)
MATRIXD_GRID_GEMM(std::complex<double>, pzgemm_)
#undef MATRIXD_GRID_GEMM

// LU with partial pivoting of the whole n x n A in place; returns ScaLAPACK's info.
inline int Getrf(int n, double* a, const int* desc_a, int* ipiv) {
  const int one = 1;
  int info = 0;
  pdgetrf_(&n, &n, a, &one, &one, desc_a, ipiv, &info);
  return info;
}
inline int Getrf(int n, std::complex<double>* a, const int* desc_a, int* ipiv) {
  const int one = 1;
  int info = 0;
  pzgetrf_(&n, &n, a, &one, &one, desc_a, ipiv, &info);
  return info;
}

// X with A X = B from Getrf's factors, overwriting b; returns ScaLAPACK's info.
inline int Getrs(int n, int nrhs, const double* a, const int* desc_a, const int* ipiv, double* b,
                 const int* desc_b) {
  const char trans = 'N';
  const int one = 1;
  int info = 0;
  pdgetrs_(&trans, &n, &nrhs, a, &one, &one, desc_a, ipiv, b, &one, &one, desc_b, &info);
  return info;
}
inline int Getrs(int n, int nrhs, const std::complex<double>* a, const int* desc_a, const int* ipiv,
                 std::complex<double>* b, const int* desc_b) {
  const char trans = 'N';
  const int one = 1;
  int info = 0;
  pzgetrs_(&trans, &n, &nrhs, a, &one, &one, desc_a, ipiv, b, &one, &one, desc_b, &info);
  return info;
}

// f(T{}) for the element type T of `dtype` (float32, float64, complex64, complex128); for another
// dtype, INVALID_ARGUMENT naming it. F returns an absl::Status or absl::StatusOr.
template <typename F>
auto WithGridScalar(DType dtype, F&& f) -> decltype(f(double{})) {
  switch (dtype) {
    case DType::kFloat32:
      return f(float{});
    case DType::kFloat64:
      return f(double{});
    case DType::kComplex64:
      return f(std::complex<float>{});
    case DType::kComplex128:
      return f(std::complex<double>{});
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "dtype ", std::string(DTypeName(dtype)),
          " has no ScaLAPACK routine; the grid takes float32, float64, complex64 or complex128"));
  }
}

}  // namespace matrixd::distributed

#endif  // MATRIXD_CORE_DISTRIBUTED_GRID_SCALAR_H_
