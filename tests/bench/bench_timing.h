// How matrixd_bench times a Backend call: medians over repeated runs of the operation's own clock
// (ComputeStats::seconds), the host's clock, and the kernels the operation timed itself
// (ComputeStats::kernels).
#ifndef MATRIXD_TESTS_BENCH_BENCH_TIMING_H_
#define MATRIXD_TESTS_BENCH_BENCH_TIMING_H_

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

namespace matrixd::bench {

// The middle value (the upper one of an even count). REQUIRES: values not empty.
double Median(std::vector<double> values);

struct Timing {
  double seconds = NAN;  // ComputeStats::seconds
  double wall = NAN;     // host clock around the call
  // Sum of the seconds of stats.kernels: the operation's device part as it records it; NaN when
  // it records no kernel.
  double device = NAN;
  std::string error;  // the first failure; the times are NaN then
};

// Runs `op` (returning a StatusOr of a result with .stats) `warm_up` times untimed, then `runs`
// times, and returns the medians. Stops at the first failure.
template <typename Op>
Timing TimeRuns(int warm_up, int runs, Op&& op) {
  Timing timing;
  std::vector<double> seconds, wall, device;
  for (int r = 0; r < warm_up + runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    auto result = op();
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result.ok()) {
      timing.error = std::string(result.status().ToString());
      return timing;
    }
    if (r < warm_up) continue;
    seconds.push_back(result->stats.seconds);
    wall.push_back(elapsed);
    if (!result->stats.kernels.empty()) {
      double sum = 0.0;
      for (const auto& record : result->stats.kernels) sum += record.seconds;
      device.push_back(sum);
    }
  }
  timing.seconds = Median(seconds);
  timing.wall = Median(wall);
  if (device.size() == seconds.size()) timing.device = Median(device);
  return timing;
}

// One warm-up run, then `repeats` timed ones: for our operations.
template <typename Op>
Timing TimeOperation(int repeats, Op&& op) {
  return TimeRuns(1, repeats, op);
}

// A single run without warm-up: for references that take seconds and have nothing to warm up.
template <typename Op>
Timing TimeOnce(Op&& op) {
  return TimeRuns(0, 1, op);
}

}  // namespace matrixd::bench

#endif  // MATRIXD_TESTS_BENCH_BENCH_TIMING_H_
