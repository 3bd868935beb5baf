#include "server/watch_reactor.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "server/guarded.h"
#include "server/job_update.h"
#include "server/status_conversion.h"

namespace matrixd::server {
namespace {

// The alarm is only ever set in the future, so that gRPC cannot run it inline under our lock.
constexpr absl::Duration kMinimumAlarm = absl::Milliseconds(1);

}  // namespace

void WatchReactor::Link::Wake() {
  absl::MutexLock lock(&mutex_);
  if (reactor_ != nullptr) reactor_->Wake();
}

void WatchReactor::Link::Detach() {
  absl::MutexLock lock(&mutex_);
  reactor_ = nullptr;
}

WatchReactor::WatchReactor(std::shared_ptr<Job> job, absl::Duration interval)
    : job_(std::move(job)), interval_(interval), link_(std::make_shared<Link>(this)) {
  // Listening first: a change after the first look below still wakes the reactor.
  job_->AddStateListener([link = link_] { link->Wake(); });
  Wake();
}

void WatchReactor::Wake() {
  absl::MutexLock lock(&mutex_);
  PumpLocked();
}

void WatchReactor::OnAlarm() {
  bool delete_now = false;
  {
    absl::MutexLock lock(&mutex_);
    alarm_set_ = false;
    if (done_) {
      delete_now = true;
    } else {
      PumpLocked();
    }
  }
  if (delete_now) delete this;
}

void WatchReactor::OnWriteDone(bool ok) {
  absl::MutexLock lock(&mutex_);
  writing_ = false;
  if (!ok || cancelled_) {
    FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "Watch: the watcher went away"));
  } else if (sent_final_) {
    FinishLocked(grpc::Status::OK);
  } else {
    PumpLocked();
  }
}

void WatchReactor::OnCancel() {
  absl::MutexLock lock(&mutex_);
  cancelled_ = true;
  // A write in flight ends first (OnWriteDone finishes the call then).
  if (!writing_) {
    FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "Watch: the call was cancelled"));
  }
}

void WatchReactor::OnDone() {
  // Outside mutex_: a listener holds the link's lock while it takes mutex_.
  link_->Detach();
  bool delete_now = false;
  {
    absl::MutexLock lock(&mutex_);
    done_ = true;
    delete_now = !alarm_set_;
  }
  if (delete_now) delete this;
}

void WatchReactor::PumpLocked() {
  if (finished_ || writing_ || cancelled_) return;
  const absl::Status status = Guarded("Watch", [&]() -> absl::Status {
    const JobSnapshot snapshot = job_->Snapshot();
    v1::JobUpdate update = ToJobUpdate(*job_, snapshot);
    const absl::Time now = absl::Now();
    const bool state_changed = !sent_ || update.state() != sent_state_;
    const bool progress_changed = sent_ && update.progress() != sent_progress_;
    if (state_changed || (progress_changed && now >= sent_at_ + interval_)) {
      sent_ = true;
      sent_state_ = update.state();
      sent_progress_ = update.progress();
      sent_at_ = now;
      sent_final_ = IsFinished(snapshot.state);
      update_ = std::move(update);
      writing_ = true;
      StartWrite(&update_);
      return absl::OkStatus();
    }
    if (alarm_set_) return absl::OkStatus();
    // Progress is looked at every interval; a change of state wakes the reactor before that.
    const absl::Time at =
        std::max(progress_changed ? sent_at_ + interval_ : now + interval_, now + kMinimumAlarm);
    alarm_ = std::make_unique<grpc::Alarm>();
    alarm_set_ = true;
    alarm_->Set(absl::ToChronoTime(at), [this](bool /*fired*/) { OnAlarm(); });
    return absl::OkStatus();
  });
  if (!status.ok()) FinishLocked(ToGrpcStatus(status));
}

void WatchReactor::FinishLocked(const grpc::Status& status) {
  if (finished_) return;
  finished_ = true;
  Finish(status);
}

}  // namespace matrixd::server
