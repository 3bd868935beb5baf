#include "server/job_update.h"

#include <string>

namespace matrixd::server {

v1::JobState ToProto(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return v1::JOB_STATE_QUEUED;
    case JobState::kRunning:
      return v1::JOB_STATE_RUNNING;
    case JobState::kSucceeded:
      return v1::JOB_STATE_SUCCEEDED;
    case JobState::kFailed:
      return v1::JOB_STATE_FAILED;
    case JobState::kCancelled:
      return v1::JOB_STATE_CANCELLED;
  }
  return v1::JOB_STATE_UNSPECIFIED;
}

v1::JobUpdate ToJobUpdate(const Job& job) { return ToJobUpdate(job, job.Snapshot()); }

v1::JobUpdate ToJobUpdate(const Job& job, const JobSnapshot& snapshot) {
  v1::JobUpdate update;
  // The holder has only its result field set, and no longer changes once the job has succeeded.
  if (snapshot.state == JobState::kSucceeded && job.result() != nullptr) update = *job.result();
  update.set_job_id(job.id());
  update.set_state(ToProto(snapshot.state));
  update.set_progress(snapshot.progress);
  update.set_eta_seconds(snapshot.eta.has_value() ? absl::ToDoubleSeconds(*snapshot.eta) : -1.0);
  update.set_queued_seconds(absl::ToDoubleSeconds(snapshot.queued));
  update.set_running_seconds(absl::ToDoubleSeconds(snapshot.running));
  if (snapshot.state == JobState::kFailed || snapshot.state == JobState::kCancelled) {
    update.mutable_error()->set_code(static_cast<int>(snapshot.status.code()));
    update.mutable_error()->set_message(std::string(snapshot.status.message()));
  }
  return update;
}

}  // namespace matrixd::server
