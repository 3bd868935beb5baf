// The CPU backend's resident matrix: the bytes in host memory, used in place as an operand.
#ifndef MATRIXD_CORE_CPU_RESIDENT_MATRIX_H_
#define MATRIXD_CORE_CPU_RESIDENT_MATRIX_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/matrix.h"
#include "core/resident_matrix.h"

namespace matrixd::cpu {

// A zero-filled rows x cols matrix in host memory. RESOURCE_EXHAUSTED when the allocation fails.
absl::StatusOr<std::unique_ptr<ResidentMatrix>> MakeHostResidentMatrix(int64_t rows, int64_t cols,
                                                                       DType dtype);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_RESIDENT_MATRIX_H_
