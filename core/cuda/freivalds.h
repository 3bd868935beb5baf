// Freivalds' check (core/freivalds.h) of a product on one CUDA device, on the device buffers the
// product left behind (before C is downloaded): the thin products through cuBLAS gemm and the
// Frobenius norms through cuBLAS nrm2, on the context's stream, in full precision whatever math
// mode the product ran with.
#ifndef MATRIXD_CORE_CUDA_FREIVALDS_H_
#define MATRIXD_CORE_CUDA_FREIVALDS_H_

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/freivalds.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// Checks that c holds op(A) op(B) (op: the plain transpose when asked for) to within the rounding
// of a floating-point product. REQUIRES: a, b and c are in `context`'s device's memory (their
// `data` device addresses, `space` whatever), row-major, and the caller has made the context's
// device current. INVALID_ARGUMENT, naming the operand, for dtypes or shapes that do not make
// c = op(a) op(b); RESOURCE_EXHAUSTED when the vectors (O((m + k + n) s) elements) do not fit.
// Waits for the stream.
absl::StatusOr<ProductCheck> CheckProduct(const MatrixView& a, const MatrixView& b,
                                          const MatrixView& c, bool transpose_a, bool transpose_b,
                                          DeviceContext& context, const FreivaldsOptions& options);

// A product's verify step: CheckProduct of c = op(a) op(b) as `options` (a Multiply's) describes
// it, with FreivaldsSeed(options.deterministic), into result->check, timed as the kernel record
// "freivalds". Same requirements and errors as CheckProduct.
absl::Status VerifyProduct(const MatrixView& a, const MatrixView& b, const MatrixView& c,
                           const MultiplyOptions& options, DeviceContext& context,
                           MultiplyResult* result);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_FREIVALDS_H_
