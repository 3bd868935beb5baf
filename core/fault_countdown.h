// A test hook for injected failures (leveldb's FaultInjectionTestEnv, as a counter): code that can
// fail checks Fire() at the point where it would; a test arms the countdown so that the n-th check
// from then on fires, once. Disarmed (the default), a check is one relaxed atomic load, so the
// hook stays compiled into release builds. Thread-safe: of concurrent checks exactly one fires.
#ifndef MATRIXD_CORE_FAULT_COUNTDOWN_H_
#define MATRIXD_CORE_FAULT_COUNTDOWN_H_

#include <atomic>
#include <cstdint>

namespace matrixd {

class FaultCountdown {
 public:
  // The `nth` next Fire() (1 = the very next) returns true; every other returns false.
  // nth <= 0 disarms.
  void Arm(int64_t nth) { remaining_.store(nth > 0 ? nth : 0, std::memory_order_release); }
  void Disarm() { remaining_.store(0, std::memory_order_release); }
  bool armed() const { return remaining_.load(std::memory_order_acquire) > 0; }
  // How many times it has fired since it was made.
  int64_t fired() const { return fired_.load(std::memory_order_acquire); }

  // Whether the failure happens at this check.
  bool Fire() {
    int64_t remaining = remaining_.load(std::memory_order_relaxed);
    while (remaining > 0) {
      if (remaining_.compare_exchange_weak(remaining, remaining - 1, std::memory_order_acq_rel,
                                           std::memory_order_relaxed)) {
        if (remaining != 1) return false;
        fired_.fetch_add(1, std::memory_order_acq_rel);
        return true;
      }
    }
    return false;
  }

 private:
  std::atomic<int64_t> remaining_{0};  // checks until the failure, counting it; 0: disarmed
  std::atomic<int64_t> fired_{0};
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_FAULT_COUNTDOWN_H_
