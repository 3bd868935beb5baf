#include "core/cpu/copy_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>

#include "absl/status/status.h"

namespace matrixd::cpu {

absl::StatusOr<double> MeasureCopyBandwidth(size_t bytes, int repeats) {
  if (bytes == 0 || repeats < 1) {
    return absl::InvalidArgumentError("copy bandwidth: want bytes > 0 and repeats >= 1");
  }
  const std::unique_ptr<unsigned char[]> source(new unsigned char[bytes]);
  const std::unique_ptr<unsigned char[]> target(new unsigned char[bytes]);
  std::memset(source.get(), 1, bytes);
  std::memcpy(target.get(), source.get(), bytes);
  double fastest = std::numeric_limits<double>::infinity();
  for (int i = 0; i < repeats; ++i) {
    // Alternate the direction so that no copy can be skipped as a repeat of the previous one.
    unsigned char* from = i % 2 == 0 ? source.get() : target.get();
    unsigned char* to = i % 2 == 0 ? target.get() : source.get();
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(to, from, bytes);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fastest = std::min(fastest, seconds);
  }
  // Keep the copies observable.
  volatile unsigned char sink = source[bytes - 1] ^ target[bytes / 2];
  static_cast<void>(sink);
  if (!(fastest > 0.0)) return absl::InternalError("copy bandwidth: the copy took no time");
  return 2.0 * static_cast<double>(bytes) / fastest;
}

}  // namespace matrixd::cpu
