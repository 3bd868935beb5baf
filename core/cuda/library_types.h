// The cuSOLVER and cuBLAS entry points of each floating element type, so that the dense paths are
// written once as templates over the host element type (float, double, std::complex<float>,
// std::complex<double>) instead of four times by hand.
#ifndef MATRIXD_CORE_CUDA_LIBRARY_TYPES_H_
#define MATRIXD_CORE_CUDA_LIBRARY_TYPES_H_

#include <cuComplex.h>
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <complex>
#include <type_traits>

#include "core/matrix.h"

namespace matrixd::cuda {

// LibraryTraits<T>: `Device` is the type the libraries take (std::complex<float> and cuComplex
// share one layout, so a device buffer of T is passed as Device* by reinterpret_cast);
// `Real` the type of its norms (nrm2's result); `kAdjoint` is the conjugate transpose (plain
// transpose for real types); the function pointers are the legacy 32-bit-index cuSOLVER/cuBLAS
// routines of that type (S, D, C, Z), the *_batched ones those that take a batch of small matrices
// at once. Matrices are at most 2^28 elements (core/validation.h), so every dimension and batch
// count fits an int.
template <typename T>
struct LibraryTraits;

template <>
struct LibraryTraits<float> {
  using Device = float;
  using Real = float;
  static constexpr cublasOperation_t kAdjoint = CUBLAS_OP_T;
  static Device One() { return 1.0f; }
  static Device Zero() { return 0.0f; }
  static constexpr auto getrf_buffer_size = &cusolverDnSgetrf_bufferSize;
  static constexpr auto getrf = &cusolverDnSgetrf;
  static constexpr auto getrs = &cusolverDnSgetrs;
  static constexpr auto potrf_buffer_size = &cusolverDnSpotrf_bufferSize;
  static constexpr auto potrf = &cusolverDnSpotrf;
  static constexpr auto potrs = &cusolverDnSpotrs;
  static constexpr auto geqrf_buffer_size = &cusolverDnSgeqrf_bufferSize;
  static constexpr auto geqrf = &cusolverDnSgeqrf;
  static constexpr auto orgqr_buffer_size = &cusolverDnSorgqr_bufferSize;
  static constexpr auto orgqr = &cusolverDnSorgqr;
  static constexpr auto ormqr_buffer_size = &cusolverDnSormqr_bufferSize;
  static constexpr auto ormqr = &cusolverDnSormqr;
  static constexpr auto gemm = &cublasSgemm;
  static constexpr auto trsm = &cublasStrsm;
  static constexpr auto getrf_batched = &cublasSgetrfBatched;
  static constexpr auto getrs_batched = &cublasSgetrsBatched;
  static constexpr auto potrf_batched = &cusolverDnSpotrfBatched;
  static constexpr auto geqrf_batched = &cublasSgeqrfBatched;
  static constexpr auto trsm_batched = &cublasStrsmBatched;
  static constexpr auto gemm_strided_batched = &cublasSgemmStridedBatched;
  static constexpr auto gemm_batched = &cublasSgemmBatched;
  static constexpr auto nrm2 = &cublasSnrm2;  // Frobenius norm over the packed elements
};

template <>
struct LibraryTraits<double> {
  using Device = double;
  using Real = double;
  static constexpr cublasOperation_t kAdjoint = CUBLAS_OP_T;
  static Device One() { return 1.0; }
  static Device Zero() { return 0.0; }
  static constexpr auto getrf_buffer_size = &cusolverDnDgetrf_bufferSize;
  static constexpr auto getrf = &cusolverDnDgetrf;
  static constexpr auto getrs = &cusolverDnDgetrs;
  static constexpr auto potrf_buffer_size = &cusolverDnDpotrf_bufferSize;
  static constexpr auto potrf = &cusolverDnDpotrf;
  static constexpr auto potrs = &cusolverDnDpotrs;
  static constexpr auto geqrf_buffer_size = &cusolverDnDgeqrf_bufferSize;
  static constexpr auto geqrf = &cusolverDnDgeqrf;
  static constexpr auto orgqr_buffer_size = &cusolverDnDorgqr_bufferSize;
  static constexpr auto orgqr = &cusolverDnDorgqr;
  static constexpr auto ormqr_buffer_size = &cusolverDnDormqr_bufferSize;
  static constexpr auto ormqr = &cusolverDnDormqr;
  static constexpr auto gemm = &cublasDgemm;
  static constexpr auto trsm = &cublasDtrsm;
  static constexpr auto getrf_batched = &cublasDgetrfBatched;
  static constexpr auto getrs_batched = &cublasDgetrsBatched;
  static constexpr auto potrf_batched = &cusolverDnDpotrfBatched;
  static constexpr auto geqrf_batched = &cublasDgeqrfBatched;
  static constexpr auto trsm_batched = &cublasDtrsmBatched;
  static constexpr auto gemm_strided_batched = &cublasDgemmStridedBatched;
  static constexpr auto gemm_batched = &cublasDgemmBatched;
  static constexpr auto nrm2 = &cublasDnrm2;  // Frobenius norm over the packed elements
};

template <>
struct LibraryTraits<std::complex<float>> {
  using Device = cuComplex;
  using Real = float;
  static constexpr cublasOperation_t kAdjoint = CUBLAS_OP_C;
  static Device One() { return make_cuComplex(1.0f, 0.0f); }
  static Device Zero() { return make_cuComplex(0.0f, 0.0f); }
  static constexpr auto getrf_buffer_size = &cusolverDnCgetrf_bufferSize;
  static constexpr auto getrf = &cusolverDnCgetrf;
  static constexpr auto getrs = &cusolverDnCgetrs;
  static constexpr auto potrf_buffer_size = &cusolverDnCpotrf_bufferSize;
  static constexpr auto potrf = &cusolverDnCpotrf;
  static constexpr auto potrs = &cusolverDnCpotrs;
  static constexpr auto geqrf_buffer_size = &cusolverDnCgeqrf_bufferSize;
  static constexpr auto geqrf = &cusolverDnCgeqrf;
  static constexpr auto orgqr_buffer_size = &cusolverDnCungqr_bufferSize;
  static constexpr auto orgqr = &cusolverDnCungqr;
  static constexpr auto ormqr_buffer_size = &cusolverDnCunmqr_bufferSize;
  static constexpr auto ormqr = &cusolverDnCunmqr;
  static constexpr auto gemm = &cublasCgemm;
  static constexpr auto trsm = &cublasCtrsm;
  static constexpr auto getrf_batched = &cublasCgetrfBatched;
  static constexpr auto getrs_batched = &cublasCgetrsBatched;
  static constexpr auto potrf_batched = &cusolverDnCpotrfBatched;
  static constexpr auto geqrf_batched = &cublasCgeqrfBatched;
  static constexpr auto trsm_batched = &cublasCtrsmBatched;
  static constexpr auto gemm_strided_batched = &cublasCgemmStridedBatched;
  static constexpr auto gemm_batched = &cublasCgemmBatched;
  static constexpr auto nrm2 = &cublasScnrm2;  // Frobenius norm over the packed elements
};

template <>
struct LibraryTraits<std::complex<double>> {
  using Device = cuDoubleComplex;
  using Real = double;
  static constexpr cublasOperation_t kAdjoint = CUBLAS_OP_C;
  static Device One() { return make_cuDoubleComplex(1.0, 0.0); }
  static Device Zero() { return make_cuDoubleComplex(0.0, 0.0); }
  static constexpr auto getrf_buffer_size = &cusolverDnZgetrf_bufferSize;
  static constexpr auto getrf = &cusolverDnZgetrf;
  static constexpr auto getrs = &cusolverDnZgetrs;
  static constexpr auto potrf_buffer_size = &cusolverDnZpotrf_bufferSize;
  static constexpr auto potrf = &cusolverDnZpotrf;
  static constexpr auto potrs = &cusolverDnZpotrs;
  static constexpr auto geqrf_buffer_size = &cusolverDnZgeqrf_bufferSize;
  static constexpr auto geqrf = &cusolverDnZgeqrf;
  static constexpr auto orgqr_buffer_size = &cusolverDnZungqr_bufferSize;
  static constexpr auto orgqr = &cusolverDnZungqr;
  static constexpr auto ormqr_buffer_size = &cusolverDnZunmqr_bufferSize;
  static constexpr auto ormqr = &cusolverDnZunmqr;
  static constexpr auto gemm = &cublasZgemm;
  static constexpr auto trsm = &cublasZtrsm;
  static constexpr auto getrf_batched = &cublasZgetrfBatched;
  static constexpr auto getrs_batched = &cublasZgetrsBatched;
  static constexpr auto potrf_batched = &cusolverDnZpotrfBatched;
  static constexpr auto geqrf_batched = &cublasZgeqrfBatched;
  static constexpr auto trsm_batched = &cublasZtrsmBatched;
  static constexpr auto gemm_strided_batched = &cublasZgemmStridedBatched;
  static constexpr auto gemm_batched = &cublasZgemmBatched;
  static constexpr auto nrm2 = &cublasDznrm2;  // Frobenius norm over the packed elements
};

// A device pointer of host element type T as the libraries take it.
template <typename T>
typename LibraryTraits<T>::Device* LibraryPointer(void* data) {
  return static_cast<typename LibraryTraits<T>::Device*>(data);
}

// Calls visit(std::type_identity<T>{}) with the host element type T of a floating dtype and
// returns its result. REQUIRES: IsFloating(dtype).
template <typename Visitor>
auto VisitFloatingType(DType dtype, Visitor&& visit) {
  switch (dtype) {
    case DType::kFloat32:
      return visit(std::type_identity<float>{});
    case DType::kFloat64:
      return visit(std::type_identity<double>{});
    case DType::kComplex64:
      return visit(std::type_identity<std::complex<float>>{});
    default:
      return visit(std::type_identity<std::complex<double>>{});
  }
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_LIBRARY_TYPES_H_
