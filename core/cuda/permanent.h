// Permanents on the GPU (SUperman): Gray-code Ryser and Glynn, the iteration space split into
// contiguous chunks per thread, launched in slices so that a long job reports progress and stops
// between slices when cancelled.
#ifndef MATRIXD_CORE_CUDA_PERMANENT_H_
#define MATRIXD_CORE_CUDA_PERMANENT_H_

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// The largest order the CUDA permanent takes (its walks are instantiated up to this order).
inline constexpr int kMaxPermanentOrder = 48;

// The real sparse walk's head rows, process-wide (a tuning knob: matrixd_bench's
// --perm_head_rows sweeps it). -1 (the default): the head walk with the head size of
// cpu::ChooseHeadWalk; 0: the block walk; 8, 12, 16 or 20 (walk::kHeadWalkRows): the head walk
// with that many head rows. Where the asked size does not fit the matrix (order at most the head
// size, or no column of a low bit inside the head), the block walk runs.
void SetSparsePermanentHeadRows(int head_rows);

// See Backend::Permanent. Fills stats except backend/device/seconds. With a state_dir, the walk
// records its finished parts there and a walk of the same matrix and options asked again resumes
// from them (core/walk_checkpoint.h), giving the uninterrupted value bit for bit.
absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                          DeviceContext& context, JobControl* control,
                                          const std::string& state_dir = {});

// The same with the walk split into equal shares over `contexts` (one GPU each, REQUIRES: not
// empty), run at once from one thread each, for every dtype one context takes (float32, float64,
// complex64, complex128, int64). The shares' double-double sums (real and imaginary parts apart)
// are added in share order, so the value does not depend on the timing: it equals one GPU's to
// within the double-double rounding of that addition (~2^-104 relative to the sum's magnitude, so
// almost always bit for bit after the rounding to double). INT64's walks modulo primes add the
// shares' sums mod each prime: exactly one GPU's value. A checkpoint under state_dir holds the
// walk's items, whichever share walked them: a split walk resumes from it on any number of GPUs.
// The kernel record's seconds are the slowest share's.
absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                          std::span<DeviceContext* const> contexts,
                                          JobControl* control, const std::string& state_dir = {});

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_PERMANENT_H_
