// Admission of jobs to one device's memory: before a job starts it reserves the device memory it
// says it needs (Backend::*DeviceBytes); a reservation that does not fit waits until running jobs
// release theirs; one larger than the whole capacity fails at once. Acquire blocks; TryReserve
// is the non-blocking form for a scheduler (see server/memory_job_admission.h). Waiters are
// admitted in any order while they fit, except that once the longest waiter has waited
// `starvation_limit`, nobody overtakes it any more: small jobs fill the gaps, and a large one still
// starts in bounded time. Thread-safe.
#ifndef MATRIXD_SERVER_MEMORY_ADMISSION_H_
#define MATRIXD_SERVER_MEMORY_ADMISSION_H_

#include <cstdint>
#include <list>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/job_control.h"

namespace matrixd::server {

class MemoryAdmission;

// Bytes reserved through MemoryAdmission::Acquire, given back when destroyed (or by Release()).
// Move-only. A default-constructed reservation holds nothing.
class MemoryReservation {
 public:
  MemoryReservation() = default;
  MemoryReservation(MemoryReservation&& other) noexcept;
  MemoryReservation& operator=(MemoryReservation&& other) noexcept;
  MemoryReservation(const MemoryReservation&) = delete;
  MemoryReservation& operator=(const MemoryReservation&) = delete;
  ~MemoryReservation() { Release(); }

  uint64_t bytes() const { return bytes_; }
  // Gives the bytes back now; idempotent.
  void Release();

 private:
  friend class MemoryAdmission;
  MemoryReservation(MemoryAdmission* admission, uint64_t bytes)
      : admission_(admission), bytes_(bytes) {}

  MemoryAdmission* admission_ = nullptr;
  uint64_t bytes_ = 0;
};

class MemoryAdmission {
 public:
  struct Options {
    // After the oldest waiter has waited this long, later jobs no longer overtake it.
    absl::Duration starvation_limit = absl::Seconds(2);
    // How often a waiter looks at its JobControl for a cancellation.
    absl::Duration cancellation_poll = absl::Milliseconds(10);
  };

  // `capacity_bytes`: what the jobs on this device may reserve together (the device-memory
  // limit).
  explicit MemoryAdmission(uint64_t capacity_bytes) : MemoryAdmission(capacity_bytes, Options{}) {}
  MemoryAdmission(uint64_t capacity_bytes, const Options& options);
  // REQUIRES: every reservation has been released.
  ~MemoryAdmission() = default;
  MemoryAdmission(const MemoryAdmission&) = delete;
  MemoryAdmission& operator=(const MemoryAdmission&) = delete;

  // Reserves `bytes`, waiting while they do not fit. Returns at once with an empty reservation
  // for 0 bytes. RESOURCE_EXHAUSTED at once when bytes > capacity; DEADLINE_EXCEEDED when
  // `deadline` passes first; CANCELLED when `control` (may be null) is cancelled while waiting
  // (seen within Options::cancellation_poll).
  absl::StatusOr<MemoryReservation> Acquire(uint64_t bytes, absl::Time deadline,
                                            const JobControl* control);

  // Non-blocking, for a scheduler that keeps its own waiting line (JobAdmission): reserves
  // `bytes` and returns true when they fit now and no waiter of Acquire has passed the
  // starvation limit; false otherwise. Give the bytes back with Unreserve.
  bool TryReserve(uint64_t bytes);
  // Counts `bytes` already allocated under a running job's reservation, which it hands over (a
  // result it keeps where it computed it): reserved at once, past the capacity if need be, since
  // the job's reservation that covers them ends right after. Give them back with Unreserve.
  void ReserveHeld(uint64_t bytes);
  // Gives back bytes taken by TryReserve or ReserveHeld.
  void Unreserve(uint64_t bytes) { Give(bytes); }

  uint64_t capacity() const { return capacity_; }
  // Bytes held by live reservations.
  uint64_t reserved() const;
  // Jobs waiting in Acquire.
  int waiting() const;

 private:
  friend class MemoryReservation;
  struct Waiter {
    uint64_t bytes;
    absl::Time since;
  };

  void Give(uint64_t bytes);
  // True when `waiter` may take its bytes now.
  bool Admissible(std::list<Waiter>::const_iterator waiter, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const uint64_t capacity_;
  const Options options_;
  mutable absl::Mutex mutex_;
  absl::CondVar released_;
  uint64_t reserved_ ABSL_GUARDED_BY(mutex_) = 0;
  std::list<Waiter> waiters_ ABSL_GUARDED_BY(mutex_);  // oldest first
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_MEMORY_ADMISSION_H_
