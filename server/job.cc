#include "server/job.h"

#include <algorithm>
#include <utility>

namespace matrixd::server {

JobState FinalState(const absl::Status& status) {
  if (status.ok()) return JobState::kSucceeded;
  return status.code() == absl::StatusCode::kCancelled ? JobState::kCancelled : JobState::kFailed;
}

Job::Job(std::string id, JobSpec spec, bool large, absl::Time submitted)
    : id_(std::move(id)),
      op_(std::move(spec.op)),
      owner_(std::move(spec.owner)),
      estimated_flops_(spec.estimated_flops),
      device_bytes_(spec.device_bytes),
      device_span_(spec.device_span),
      deadline_(spec.deadline),
      large_(large),
      pinned_device_(spec.pinned_device),
      submitted_(submitted),
      result_(std::move(spec.result)),
      coalescible_(std::move(spec.coalescible)),
      work_(std::move(spec.work)),
      on_finished_(std::move(spec.on_finished)) {
  if (pinned_device_ != JobControl::kAnyDevice) control_.set_device_index(pinned_device_);
}

JobSnapshot Job::Snapshot() const {
  const absl::Time now = absl::Now();
  JobSnapshot snapshot;
  absl::MutexLock lock(&mutex_);
  snapshot.state = state_;
  snapshot.status = status_;
  snapshot.progress = state_ == JobState::kSucceeded ? 1.0 : control_.progress();
  const absl::Time left_queue = std::min({started_, finished_, now});
  snapshot.queued = left_queue - submitted_;
  if (started_ != absl::InfiniteFuture()) snapshot.running = std::min(finished_, now) - started_;
  // A linear extrapolation: the backends report progress in equal units of work.
  if (state_ == JobState::kRunning && snapshot.progress > 0.0) {
    snapshot.eta = snapshot.running * ((1.0 - snapshot.progress) / snapshot.progress);
  }
  return snapshot;
}

JobState Job::state() const {
  absl::MutexLock lock(&mutex_);
  return state_;
}

bool Job::AwaitFinished(absl::Time until) const {
  absl::MutexLock lock(&mutex_);
  auto finished = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return IsFinished(state_); };
  return mutex_.AwaitWithDeadline(absl::Condition(&finished), until);
}

JobState Job::AwaitStateOtherThan(JobState seen, absl::Time until) const {
  absl::MutexLock lock(&mutex_);
  auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return state_ != seen; };
  mutex_.AwaitWithDeadline(absl::Condition(&changed), until);
  return state_;
}

absl::Status Job::status() const {
  absl::MutexLock lock(&mutex_);
  return status_;
}

void Job::AddStateListener(JobStateListener listener) {
  absl::MutexLock lock(&mutex_);
  if (!IsFinished(state_)) listeners_.push_back(std::move(listener));
}

std::vector<JobStateListener> Job::MarkRunning(absl::Time now) {
  absl::MutexLock lock(&mutex_);
  state_ = JobState::kRunning;
  started_ = now;
  return listeners_;
}

bool Job::RequestStop(absl::Status reason) {
  absl::MutexLock lock(&mutex_);
  if (!stop_reason_.ok() || IsFinished(state_)) return false;
  stop_reason_ = std::move(reason);
  control_.Cancel();
  return true;
}

bool Job::stop_requested() const {
  absl::MutexLock lock(&mutex_);
  return !stop_reason_.ok();
}

std::vector<JobStateListener> Job::Finish(absl::Status status, absl::Time now) {
  absl::MutexLock lock(&mutex_);
  // The backend says only "cancelled"; the reason we stopped it (a deadline, a Cancel call, the
  // client going away) is the better answer. Work that finished before it noticed keeps its result.
  if (status.code() == absl::StatusCode::kCancelled && !stop_reason_.ok()) status = stop_reason_;
  state_ = FinalState(status);
  status_ = std::move(status);
  finished_ = now;
  std::vector<JobStateListener> listeners;
  listeners.swap(listeners_);
  return listeners;
}

}  // namespace matrixd::server
