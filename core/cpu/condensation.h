// Salem-Said condensation determinants on the CPU (the seed paper, sections 2 and 4): each step
// turns the order-m matrix into an order-(m-1) one whose determinant times one pivot is the old
// one. Column-major work arrays, two buffers swapped per step, as the paper's GPU code keeps them.
#ifndef MATRIXD_CORE_CPU_CONDENSATION_H_
#define MATRIXD_CORE_CPU_CONDENSATION_H_

#include <complex>
#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "core/cpu/progress_range.h"
#include "core/operations.h"
#include "core/scaled_number.h"

namespace matrixd::cpu {

// det(A) over the reals / complex numbers, A n x n row-major, with the paper's floating-point
// pivot: the non-zero first-row entry closest to 1. Adds its work to stats->flops and
// stats->bytes_moved. Returns CANCELLED when `progress` is cancelled between steps, OUT_OF_RANGE
// when element growth carried an entry past the double range.
// REQUIRES: a.size() == n * n, n >= 1, finite entries.
absl::StatusOr<ScaledNumber> CondensationDeterminant(std::span<const double> a, int64_t n,
                                                     const ProgressRange& progress,
                                                     ComputeStats* stats);
absl::StatusOr<ScaledNumber> CondensationDeterminant(std::span<const std::complex<double>> a,
                                                     int64_t n, const ProgressRange& progress,
                                                     ComputeStats* stats);

// det(A) mod p in [0, p), A n x n row-major residues in [0, p), with the paper's pivot over Z/p:
// the first non-zero entry of the first row. Stats and cancellation as above.
// REQUIRES: p prime, 2 <= p < 2^62; a.size() == n * n, n >= 1.
absl::StatusOr<uint64_t> ModularCondensationDeterminant(std::span<const uint64_t> a, int64_t n,
                                                        uint64_t p, const ProgressRange& progress,
                                                        ComputeStats* stats);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_CONDENSATION_H_
