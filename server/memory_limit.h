// The value of --device_memory_limit: a share of each device's memory ("90%") or a size ("60GiB",
// "64G", "1500000000").
#ifndef MATRIXD_SERVER_MEMORY_LIMIT_H_
#define MATRIXD_SERVER_MEMORY_LIMIT_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/backend.h"

namespace matrixd::server {

// "P%" with 0 < P <= 100 sets fraction = P / 100; a number with an optional unit sets bytes:
// B, K/KB, M/MB, G/GB, T/TB (powers of 1000) or Ki/KiB, Mi/MiB, Gi/GiB, Ti/TiB (powers of 1024).
// INVALID_ARGUMENT for anything else, zero, or a size above 2^63.
absl::StatusOr<DeviceMemoryLimit> ParseDeviceMemoryLimit(absl::string_view text);

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_MEMORY_LIMIT_H_
