// The scheduler's admission policy for device memory: a job starts only when the device memory it
// stated (JobSpec::device_bytes) fits under the device-memory limit next to the running jobs'.
#ifndef MATRIXD_SERVER_MEMORY_JOB_ADMISSION_H_
#define MATRIXD_SERVER_MEMORY_JOB_ADMISSION_H_

#include "absl/status/status.h"
#include "server/job.h"
#include "server/memory_admission.h"
#include "server/scheduler.h"

namespace matrixd::server {

class MemoryJobAdmission final : public JobAdmission {
 public:
  // `memory` (one device's admission) must outlive this policy.
  explicit MemoryJobAdmission(MemoryAdmission& memory) : memory_(memory) {}

  // RESOURCE_EXHAUSTED, naming both sizes, for a job that needs more than the whole limit.
  absl::Status CheckFits(const JobSpec& spec) override;
  bool TryAdmit(const Job& job) override { return memory_.TryReserve(job.device_bytes()); }
  void Release(const Job& job) override { memory_.Unreserve(job.device_bytes()); }

 private:
  MemoryAdmission& memory_;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_MEMORY_JOB_ADMISSION_H_
