// Shared between the caller of a long operation and the operation itself: the caller may ask it to
// stop and may say which device it should run on; the operation reports the fraction done.
// Thread-safe.
#ifndef MATRIXD_CORE_JOB_CONTROL_H_
#define MATRIXD_CORE_JOB_CONTROL_H_

#include <atomic>

namespace matrixd {

class JobControl {
 public:
  // Asks the operation to stop at its next check; it then returns absl::CancelledError.
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

  // Fraction of the work done, in [0, 1].
  void ReportProgress(double fraction) { progress_.store(fraction, std::memory_order_relaxed); }
  double progress() const { return progress_.load(std::memory_order_relaxed); }

  // The device to run on, as an index into Backend::DeviceMemory() (where admission reserved the
  // job's memory), or kAnyDevice to let the backend choose. Backends without devices ignore it.
  static constexpr int kAnyDevice = -1;
  void set_device_index(int index) { device_index_.store(index, std::memory_order_relaxed); }
  int device_index() const { return device_index_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> cancelled_{false};
  std::atomic<double> progress_{0.0};
  std::atomic<int> device_index_{kAnyDevice};
};

// True when `control` is set and was cancelled; operations accept a null control.
inline bool IsCancelled(const JobControl* control) {
  return control != nullptr && control->cancelled();
}
inline void ReportProgress(JobControl* control, double fraction) {
  if (control != nullptr) control->ReportProgress(fraction);
}

}  // namespace matrixd

#endif  // MATRIXD_CORE_JOB_CONTROL_H_
