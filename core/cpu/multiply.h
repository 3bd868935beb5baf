// Dense products through CBLAS, UINT32 products with wrap-around, and block-sparse products that
// skip zero blocks, on the CPU.
#ifndef MATRIXD_CORE_CPU_MULTIPLY_H_
#define MATRIXD_CORE_CPU_MULTIPLY_H_

#include "absl/status/statusor.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cpu {

// See Backend::Multiply. Fills result.stats.bytes_moved and .flops, not the timing. Our own
// loops (UINT32, block-sparse) run on up to `threads` (>= 1) threads; CBLAS keeps OpenBLAS's own
// setting.
absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                        const MultiplyOptions& options, int threads,
                                        JobControl* control);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_MULTIPLY_H_
