// The small kernels that the cuSOLVER/cuBLAS paths need around the library calls: layout changes
// (row-major host data, column-major libraries), triangle clean-up, and the reduction of an LU
// factorisation to its determinant. Each launcher queues its kernel on `stream`
// and returns the launch status (cudaGetLastError); none synchronises.
#ifndef MATRIXD_CORE_CUDA_DENSE_KERNELS_H_
#define MATRIXD_CORE_CUDA_DENSE_KERNELS_H_

#include <cuda_runtime.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/cuda/device_span.h"

namespace matrixd::cuda {

// dst = src^T. src is rows x cols, column-major with leading dimension src_ld (element (i, j) at
// src[i + j * src_ld]); dst is cols x rows, column-major with leading dimension dst_ld (element
// (j, i) at dst[j + i * dst_ld]). Since a row-major matrix is its transpose read column-major,
// this also turns row-major into column-major and back.
// REQUIRES: element_size 4, 8 or 16; src_ld >= rows; dst_ld >= cols; src and dst do not overlap;
// pointers aligned to element_size.
cudaError_t LaunchTranspose(const void* src, int64_t rows, int64_t cols, int64_t src_ld, void* dst,
                            int64_t dst_ld, size_t element_size, cudaStream_t stream);

// dst[0, bytes) = src[0, bytes) with 16-byte loads and stores, four in flight per thread: the
// device-to-device bandwidth our memory-bound kernels are measured against (tests/bench).
// REQUIRES: src and dst 16-byte aligned and not overlapping; bytes % 16 == 0.
cudaError_t LaunchCopy(const void* src, void* dst, size_t bytes, cudaStream_t stream);

// Sets to zero the entries strictly above (Triangle::kUpper) or strictly below (kLower) the
// diagonal of a dense row-major rows x cols matrix. REQUIRES: element_size 4, 8 or 16.
enum class Triangle { kUpper, kLower };
cudaError_t LaunchZeroStrictTriangle(void* data, int64_t rows, int64_t cols, size_t element_size,
                                     Triangle triangle, cudaStream_t stream);

// The typed forms of LaunchTranspose and LaunchZeroStrictTriangle, for elements of 4, 8 or 16
// bytes: cudaErrorInvalidValue when a span holds fewer elements than its shape reaches.
template <typename T>
cudaError_t LaunchTranspose(DeviceSpan<T> src, int64_t rows, int64_t cols, int64_t src_ld,
                            DeviceSpan<std::remove_const_t<T>> dst, int64_t dst_ld,
                            cudaStream_t stream) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16);
  if (rows > 0 && cols > 0 &&
      (src.size() < static_cast<size_t>(src_ld * (cols - 1) + rows) ||
       dst.size() < static_cast<size_t>(dst_ld * (rows - 1) + cols))) {
    return cudaErrorInvalidValue;
  }
  return LaunchTranspose(src.data(), rows, cols, src_ld, dst.data(), dst_ld, sizeof(T), stream);
}
template <typename T>
cudaError_t LaunchZeroStrictTriangle(DeviceSpan<T> data, int64_t rows, int64_t cols,
                                     Triangle triangle, cudaStream_t stream) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16);
  if (rows > 0 && cols > 0 && data.size() < static_cast<size_t>(rows * cols)) {
    return cudaErrorInvalidValue;
  }
  return LaunchZeroStrictTriangle(data.data(), rows, cols, sizeof(T), triangle, stream);
}

// The few numbers a determinant by LU comes down to, in device memory: det(A) =
// (-1)^odd_swaps * (mantissa_real + i mantissa_imag) * 2^(exponent2 + row_exponent2), unless a
// pivot or a row is exactly zero (det = 0). LaunchScaleRows fills the row_ fields (by atomic
// adds: zero the struct first), LaunchLuPivotSummary the others.
struct DeterminantSummary {
  double mantissa_real;  // product of the non-zero pivots, max(|re|, |im|) in [0.5, 1) (or 1)
  double mantissa_imag;
  long long exponent2;
  long long row_exponent2;  // sum of the powers of two taken out of the rows
  int zero_rows;
  int odd_swaps;         // parity of getrf's row interchanges, 0 or 1
  int zero_pivots;       // diagonal entries of U exactly zero
  int nonfinite_pivots;  // Inf or NaN on the diagonal (element growth overflowed)
  int info;              // getrf's info, copied
};

// dst = src in double (complex<double>) precision with each row scaled by a power of two so that
// its largest entry (by max(|re|, |im|)) lies in [1, 2): exact, and it keeps LU away from
// overflow and underflow whatever the input's range (rows of 1e300 next to rows of 1e-300).
// src and dst are dense row-major rows x cols and do not overlap. Adds the powers taken out to
// summary->row_exponent2 and counts zero rows in summary->zero_rows. With row_abs_sums (rows
// doubles of device memory), row_abs_sums[i] := the sum of |dst row i|'s entries (modulus for
// complex), the same bits as LaunchColumnAbsSums (norm_kernels.h) gives of dst read as a
// column-major cols x rows matrix: the 1-norm of the matrix a determinant factors, from the pass
// that writes it.
cudaError_t LaunchScaleRows(const float* src, double* dst, int64_t rows, int64_t cols,
                            DeterminantSummary* summary, cudaStream_t stream,
                            double* row_abs_sums = nullptr);
cudaError_t LaunchScaleRows(const double* src, double* dst, int64_t rows, int64_t cols,
                            DeterminantSummary* summary, cudaStream_t stream,
                            double* row_abs_sums = nullptr);
cudaError_t LaunchScaleRows(const int64_t* src, double* dst, int64_t rows, int64_t cols,
                            DeterminantSummary* summary, cudaStream_t stream,
                            double* row_abs_sums = nullptr);
cudaError_t LaunchScaleRows(const std::complex<float>* src, std::complex<double>* dst, int64_t rows,
                            int64_t cols, DeterminantSummary* summary, cudaStream_t stream,
                            double* row_abs_sums = nullptr);
cudaError_t LaunchScaleRows(const std::complex<double>* src, std::complex<double>* dst,
                            int64_t rows, int64_t cols, DeterminantSummary* summary,
                            cudaStream_t stream, double* row_abs_sums = nullptr);

// Reduces the n x n LU factors of getrf (column-major, leading dimension lda, 1-based ipiv, info
// on the device) into *summary (device memory), leaving the row_ fields alone. One block; a few
// microseconds for n = 16384.
cudaError_t LaunchLuPivotSummary(const double* lu, int n, int lda, const int* ipiv, const int* info,
                                 DeterminantSummary* summary, cudaStream_t stream);
cudaError_t LaunchLuPivotSummary(const std::complex<double>* lu, int n, int lda, const int* ipiv,
                                 const int* info, DeterminantSummary* summary, cudaStream_t stream);

// The same for `count` n x n matrices stacked in src/dst/lu, one summary each (summaries[b]
// for matrix b, zeroed first): row scaling, then the summary of getrfBatched's factors (each
// n x n, leading dimension n, ipiv n per matrix, one info per matrix).
cudaError_t LaunchBatchedScaleRows(const float* src, double* dst, int64_t count, int64_t n,
                                   DeterminantSummary* summaries, cudaStream_t stream);
cudaError_t LaunchBatchedScaleRows(const double* src, double* dst, int64_t count, int64_t n,
                                   DeterminantSummary* summaries, cudaStream_t stream);
cudaError_t LaunchBatchedScaleRows(const std::complex<float>* src, std::complex<double>* dst,
                                   int64_t count, int64_t n, DeterminantSummary* summaries,
                                   cudaStream_t stream);
cudaError_t LaunchBatchedScaleRows(const std::complex<double>* src, std::complex<double>* dst,
                                   int64_t count, int64_t n, DeterminantSummary* summaries,
                                   cudaStream_t stream);
cudaError_t LaunchBatchedLuPivotSummary(const double* lu, int64_t count, int n, const int* ipiv,
                                        const int* info, DeterminantSummary* summaries,
                                        cudaStream_t stream);
cudaError_t LaunchBatchedLuPivotSummary(const std::complex<double>* lu, int64_t count, int n,
                                        const int* ipiv, const int* info,
                                        DeterminantSummary* summaries, cudaStream_t stream);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_DENSE_KERNELS_H_
