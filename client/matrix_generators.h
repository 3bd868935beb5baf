// Test and demo matrices for matrixctl: seeded random, block-sparse random, Hilbert, all-ones.
#ifndef MATRIXD_CLIENT_MATRIX_GENERATORS_H_
#define MATRIXD_CLIENT_MATRIX_GENERATORS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "matrixd/v1/matrix.pb.h"

namespace matrixd {

// Independent uniform entries: real and imaginary parts in [-1, 1) for floating dtypes, integers
// in [-9, 9] for INT64, all of [0, 2^32) for UINT32. The same seed gives the same matrix.
// REQUIRES: rows, cols >= 0 and dtype is not DTYPE_UNSPECIFIED.
v1::Matrix RandomMatrix(int64_t rows, int64_t cols, v1::DType dtype, uint64_t seed);

// A grid of block_size x block_size blocks (edge blocks smaller): each block is filled as by
// RandomMatrix with probability `density`, else left all zero.
// REQUIRES: block_size > 0, 0 <= density <= 1.
v1::Matrix RandomBlockSparseMatrix(int64_t rows, int64_t cols, v1::DType dtype, uint64_t seed,
                                   int64_t block_size, double density);

// The n x n Hilbert matrix, H[i][j] = 1 / (i + j + 1): famously ill-conditioned, with a known
// determinant. INVALID_ARGUMENT for the integer dtypes.
absl::StatusOr<v1::Matrix> HilbertMatrix(int64_t n, v1::DType dtype);

// The rows x cols matrix of ones (its permanent, when square, is n!).
v1::Matrix OnesMatrix(int64_t rows, int64_t cols, v1::DType dtype);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_MATRIX_GENERATORS_H_
