#include "server/memory_admission.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace matrixd::server {

// ---- MemoryReservation ----

MemoryReservation::MemoryReservation(MemoryReservation&& other) noexcept
    : admission_(std::exchange(other.admission_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

MemoryReservation& MemoryReservation::operator=(MemoryReservation&& other) noexcept {
  if (this != &other) {
    Release();
    admission_ = std::exchange(other.admission_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void MemoryReservation::Release() {
  if (admission_ != nullptr) admission_->Give(bytes_);
  admission_ = nullptr;
  bytes_ = 0;
}

// ---- MemoryAdmission ----

MemoryAdmission::MemoryAdmission(uint64_t capacity_bytes, const Options& options)
    : capacity_(capacity_bytes), options_(options) {}

uint64_t MemoryAdmission::reserved() const {
  absl::MutexLock lock(&mutex_);
  return reserved_;
}

int MemoryAdmission::waiting() const {
  absl::MutexLock lock(&mutex_);
  return static_cast<int>(waiters_.size());
}

bool MemoryAdmission::Admissible(std::list<Waiter>::const_iterator waiter, absl::Time now) const {
  if (reserved_ + waiter->bytes > capacity_) return false;
  return waiter == waiters_.begin() || now - waiters_.front().since < options_.starvation_limit;
}

absl::StatusOr<MemoryReservation> MemoryAdmission::Acquire(uint64_t bytes, absl::Time deadline,
                                                           const JobControl* control) {
  if (bytes == 0) return MemoryReservation();
  if (bytes > capacity_) {
    return absl::ResourceExhaustedError(absl::StrCat("the job needs ", bytes,
                                                     " bytes of device memory; the limit is ",
                                                     capacity_, " bytes (--device_memory_limit)"));
  }
  absl::MutexLock lock(&mutex_);
  const auto self = waiters_.insert(waiters_.end(), Waiter{bytes, absl::Now()});
  absl::Status failure;
  while (true) {
    const absl::Time now = absl::Now();
    if (Admissible(self, now)) break;
    if (IsCancelled(control)) {
      failure = absl::CancelledError("cancelled while waiting for device memory");
      break;
    }
    if (now >= deadline) {
      failure = absl::DeadlineExceededError(
          absl::StrCat("deadline passed while waiting for ", bytes, " bytes of device memory (",
                       reserved_, " of ", capacity_, " bytes reserved by running jobs)"));
      break;
    }
    // Short waits: cancellation and the starvation limit change nothing the mutex sees.
    released_.WaitWithDeadline(&mutex_, std::min(deadline, now + options_.cancellation_poll));
  }
  waiters_.erase(self);
  // Whoever this waiter held back (as the oldest) may go now.
  released_.SignalAll();
  if (!failure.ok()) return failure;
  reserved_ += bytes;
  return MemoryReservation(this, bytes);
}

bool MemoryAdmission::TryReserve(uint64_t bytes) {
  if (bytes == 0) return true;
  absl::MutexLock lock(&mutex_);
  if (reserved_ + bytes > capacity_) return false;
  if (!waiters_.empty() && absl::Now() - waiters_.front().since >= options_.starvation_limit) {
    return false;
  }
  reserved_ += bytes;
  return true;
}

void MemoryAdmission::ReserveHeld(uint64_t bytes) {
  absl::MutexLock lock(&mutex_);
  reserved_ += bytes;
}

void MemoryAdmission::Give(uint64_t bytes) {
  absl::MutexLock lock(&mutex_);
  reserved_ -= std::min(bytes, reserved_);
  released_.SignalAll();
}

}  // namespace matrixd::server
