// Freivalds' check (core/freivalds.h) of a product on the CPU: the thin products through CBLAS
// gemm, the Frobenius norms through LAPACKE ?lange.
#ifndef MATRIXD_CORE_CPU_FREIVALDS_H_
#define MATRIXD_CORE_CPU_FREIVALDS_H_

#include "absl/status/statusor.h"
#include "core/freivalds.h"
#include "core/matrix.h"

namespace matrixd::cpu {

// Checks that c holds op(A) op(B) (op: the plain transpose when asked for) to within the rounding
// of a floating-point product. REQUIRES: host views. INVALID_ARGUMENT, naming the operand, when
// the dtypes are not one floating dtype or the shapes do not make c = op(a) op(b).
absl::StatusOr<ProductCheck> CheckProduct(const MatrixView& a, const MatrixView& b,
                                          const MatrixView& c, bool transpose_a, bool transpose_b,
                                          const FreivaldsOptions& options);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_FREIVALDS_H_
