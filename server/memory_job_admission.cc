#include "server/memory_job_admission.h"

#include "absl/strings/str_cat.h"

namespace matrixd::server {

absl::Status MemoryJobAdmission::CheckFits(const JobSpec& spec) {
  if (spec.device_bytes <= memory_.capacity()) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      spec.op, " needs about ", spec.device_bytes, " bytes of device memory; the limit is ",
      memory_.capacity(), " bytes (--device_memory_limit)"));
}

}  // namespace matrixd::server
