// Permanents on the CPU: Ryser's and Glynn's formulas in Gray-code order, O(2^n n), split over
// `threads` threads; real, complex, and exact for INT64 matrices.
#ifndef MATRIXD_CORE_CPU_PERMANENT_H_
#define MATRIXD_CORE_CPU_PERMANENT_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cpu {

// The largest order the CPU permanent takes (its walks pad rows to 4 chains in 64 lanes).
inline constexpr int kMaxPermanentOrder = 62;

// See Backend::Permanent. Reports progress and checks for cancellation between chunks.
// Fills result.stats.bytes_moved and .flops, not the timing. With a non-empty `state_dir`, the
// finished chunks are checkpointed to a file there (core/walk_checkpoint.h): the same permanent
// asked again after a crash or a cancellation resumes from them and gives the same value, bit for
// bit; the file is removed when the walk completes.
absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                          int threads, JobControl* control,
                                          const std::string& state_dir = "");

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_PERMANENT_H_
