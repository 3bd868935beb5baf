// The yardstick for memory-bound CPU work: the bandwidth of a plain memcpy in main memory.
#ifndef MATRIXD_CORE_CPU_COPY_BANDWIDTH_H_
#define MATRIXD_CORE_CPU_COPY_BANDWIDTH_H_

#include <cstddef>

#include "absl/status/statusor.h"

namespace matrixd::cpu {

// Copies `bytes` between two buffers with one thread's memcpy, once to fault the pages in and then
// `repeats` times; returns (bytes read + bytes written) per second of the fastest copy. One
// thread: several cores together may exceed it. INVALID_ARGUMENT for bytes == 0 or repeats < 1.
absl::StatusOr<double> MeasureCopyBandwidth(size_t bytes = size_t{64} << 20, int repeats = 3);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_COPY_BANDWIDTH_H_
