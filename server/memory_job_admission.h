// The scheduler's admission policy for device memory, over one or more devices: a job starts only
// when the device memory it stated (JobSpec::device_bytes) fits under some device's limit next to
// the jobs already admitted there. The job is placed on that device (JobControl::device_index),
// preferring the device with the fewest admitted jobs, then the one with the most room. A job
// pinned to a device (JobSpec::pinned_device, deterministic requests) goes there or waits. A job
// over several devices (JobSpec::device_span) starts only when its memory fits on each of the
// devices it spans, and holds it on all of them.
#ifndef MATRIXD_SERVER_MEMORY_JOB_ADMISSION_H_
#define MATRIXD_SERVER_MEMORY_JOB_ADMISSION_H_

#include <functional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/job.h"
#include "server/memory_admission.h"
#include "server/scheduler.h"

namespace matrixd::server {

class MemoryJobAdmission final : public JobAdmission {
 public:
  // `devices[i]` admits to the backend's device i (Backend::DeviceMemory() order); each must
  // outlive this policy. REQUIRES: not empty.
  explicit MemoryJobAdmission(std::vector<MemoryAdmission*> devices);

  // Called when a job fits on no device: may free `bytes` on device `index` (spilling idle
  // resident matrices) and returns what it freed; the job is then tried once more. Called under
  // the scheduler's lock. REQUIRES: set before the scheduler starts.
  using Reclaimer = std::function<uint64_t(int index, uint64_t bytes)>;
  void set_reclaimer(Reclaimer reclaimer) { reclaimer_ = std::move(reclaimer); }

  // RESOURCE_EXHAUSTED, naming both sizes, for a job that needs more than the largest limit (for a
  // job over several devices: than the smallest limit among them, or more devices than there
  // are).
  absl::Status CheckFits(const JobSpec& spec) override;
  bool TryAdmit(Job& job) override;
  void Release(const Job& job) override;

  // Jobs admitted to device `index` and not yet released.
  int admitted_jobs(int index) const;

 private:
  // TryAdmit for a job over the first job.device_span() devices: all of them, or none.
  bool TryAdmitSpan(Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Reserves `bytes` on devices [0, span); none when one has not the room.
  bool TryReserveSpan(int span, uint64_t bytes);

  const std::vector<MemoryAdmission*> devices_;
  Reclaimer reclaimer_;
  mutable absl::Mutex mutex_;
  std::vector<int> admitted_jobs_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_MEMORY_JOB_ADMISSION_H_
