// The kernels around cuBLAS/cuSOLVER's batched factorizations: each works on a batch of `batch`
// small matrices of one shape stored one after the other (matrix b at element offset
// b * rows * cols), one thread per element or per matrix column over the whole batch. Each
// launcher queues its kernel on `stream` and returns the launch status (cudaGetLastError); none
// synchronises.
#ifndef MATRIXD_CORE_CUDA_BATCH_KERNELS_H_
#define MATRIXD_CORE_CUDA_BATCH_KERNELS_H_

#include <cuda_runtime.h>

#include <complex>
#include <cstddef>
#include <cstdint>

#include "core/cuda/dense_kernels.h"

namespace matrixd::cuda {

// pointers[b] = base + b * stride_bytes for b in [0, count): the pointer arrays the batched
// library routines take, built on the device.
cudaError_t LaunchFillPointers(void** pointers, void* base, size_t stride_bytes, int64_t count,
                               cudaStream_t stream);

// For each matrix: dst = src^T, src rows x cols column-major (leading dimension rows), dst
// cols x rows column-major (leading dimension cols). As with LaunchTranspose, this turns the
// row-major matrices of the host into the column-major ones of the libraries and back.
// REQUIRES: element_size 4, 8 or 16; src and dst do not overlap.
cudaError_t LaunchBatchedTranspose(const void* src, int64_t rows, int64_t cols, int64_t batch,
                                   void* dst, size_t element_size, cudaStream_t stream);

// Sets to zero the entries strictly above (Triangle::kUpper) or below (kLower) the diagonal of
// each row-major rows x cols matrix. REQUIRES: element_size 4, 8 or 16.
cudaError_t LaunchBatchedZeroStrictTriangle(void* data, int64_t rows, int64_t cols, int64_t batch,
                                            size_t element_size, Triangle triangle,
                                            cudaStream_t stream);

// r = the upper triangle of the first k rows of each geqrf factor, as a row-major k x cols matrix
// with zeros below the diagonal. factors: column-major rows x cols (leading dimension rows).
// REQUIRES: element_size 4, 8 or 16; k <= rows.
cudaError_t LaunchBatchedUpperTriangle(const void* factors, int64_t rows, int64_t cols, int64_t k,
                                       int64_t batch, void* r, size_t element_size,
                                       cudaStream_t stream);

// q = the first k columns of Q = H(0) H(1) ... H(k-1), as a row-major rows x k matrix, from the
// Householder reflectors of geqrf (LAPACK's storage: v_i below the diagonal of column i of the
// column-major rows x cols factors, with an implicit 1 on the diagonal; tau: k per matrix). The
// batched counterpart of orgqr/ungqr, which cuBLAS lacks. REQUIRES: k = min(rows, cols).
cudaError_t LaunchBatchedFormQ(const float* factors, const float* tau, int rows, int cols, int k,
                               int64_t batch, float* q, cudaStream_t stream);
cudaError_t LaunchBatchedFormQ(const double* factors, const double* tau, int rows, int cols, int k,
                               int64_t batch, double* q, cudaStream_t stream);
cudaError_t LaunchBatchedFormQ(const std::complex<float>* factors, const std::complex<float>* tau,
                               int rows, int cols, int k, int64_t batch, std::complex<float>* q,
                               cudaStream_t stream);
cudaError_t LaunchBatchedFormQ(const std::complex<double>* factors, const std::complex<double>* tau,
                               int rows, int cols, int k, int64_t batch, std::complex<double>* q,
                               cudaStream_t stream);

// Lowers *first to base + i for the smallest i in [0, count) whose component of `data` (float32
// words for component_size 4, float64 words for 8; a complex number is two) is Inf or NaN, and
// leaves it alone when all are finite: the device's side of core/validation.h's finiteness scan,
// run on each chunk of an operand as it arrives. Start *first at UINT64_MAX.
// REQUIRES: component_size 4 or 8; data aligned to it.
cudaError_t LaunchFirstNonFinite(const void* data, int64_t count, size_t component_size,
                                 uint64_t base, unsigned long long* first, cudaStream_t stream);

// For each n x n LU factorisation of getrfBatched (column-major, 1-based pivots ipiv, n per
// matrix): permutation[b * n + i] = the row of A that row i of L U came from (0-based), and
// singular_column[b] = the first j with U[j, j] exactly zero, or -1. nonfinite[b] = 1 when the
// matrix is singular and its factors hold an Inf or NaN (a division by that zero pivot), else 0.
cudaError_t LaunchBatchedLuSummary(const float* lu, const int* ipiv, int n, int64_t batch,
                                   int64_t* permutation, int* singular_column, int* nonfinite,
                                   cudaStream_t stream);
cudaError_t LaunchBatchedLuSummary(const double* lu, const int* ipiv, int n, int64_t batch,
                                   int64_t* permutation, int* singular_column, int* nonfinite,
                                   cudaStream_t stream);
cudaError_t LaunchBatchedLuSummary(const std::complex<float>* lu, const int* ipiv, int n,
                                   int64_t batch, int64_t* permutation, int* singular_column,
                                   int* nonfinite, cudaStream_t stream);
cudaError_t LaunchBatchedLuSummary(const std::complex<double>* lu, const int* ipiv, int n,
                                   int64_t batch, int64_t* permutation, int* singular_column,
                                   int* nonfinite, cudaStream_t stream);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_BATCH_KERNELS_H_
