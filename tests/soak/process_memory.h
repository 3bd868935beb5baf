// A process's resident memory as Linux reports it, for watching a server's memory under load.
#ifndef MATRIXD_TESTS_SOAK_PROCESS_MEMORY_H_
#define MATRIXD_TESTS_SOAK_PROCESS_MEMORY_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace matrixd::soak {

// The VmRSS of process `pid` (0: this process) in bytes, from /proc/PID/status. NOT_FOUND when
// the process or the line is missing (no /proc, or the process has ended).
absl::StatusOr<int64_t> ResidentSetBytes(int64_t pid);

}  // namespace matrixd::soak

#endif  // MATRIXD_TESTS_SOAK_PROCESS_MEMORY_H_
