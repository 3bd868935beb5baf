// Runs a long operation with a JobControl that a watcher thread cancels once the operation reports
// a given fraction done: how the checkpoint tests stop a walk part-way.
#ifndef MATRIXD_TESTS_CORE_CANCEL_AT_PROGRESS_H_
#define MATRIXD_TESTS_CORE_CANCEL_AT_PROGRESS_H_

#include <atomic>
#include <chrono>
#include <thread>

#include "core/job_control.h"

namespace matrixd::testing {

// run(control), with control cancelled once its progress reaches stop_at (never when stop_at >= 1).
template <typename Run>
auto RunCancellingAt(double stop_at, const Run& run) {
  JobControl control;
  std::atomic<bool> finished{false};
  std::thread watcher([&] {
    while (!finished.load() && stop_at < 1.0) {
      if (control.progress() >= stop_at) {
        control.Cancel();
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  auto result = run(control);
  finished.store(true);
  watcher.join();
  return result;
}

}  // namespace matrixd::testing

#endif  // MATRIXD_TESTS_CORE_CANCEL_AT_PROGRESS_H_
