// The reactor of a Watch call on the gRPC callback API: sends the job's state at once, then each
// change of state as it happens and each change of progress at most every `interval`, and
// finishes (OK) after the finished job's update. A client that goes away ends the call
// (CANCELLED); the job keeps running. No thread waits: the job's state listener and a
// grpc::Alarm wake the reactor.
#ifndef MATRIXD_SERVER_WATCH_REACTOR_H_
#define MATRIXD_SERVER_WATCH_REACTOR_H_

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "matrixd/v1/matrixd.pb.h"
#include "server/job.h"

namespace matrixd::server {

class WatchReactor final : public grpc::ServerWriteReactor<v1::JobUpdate> {
 public:
  // Owns itself: deleted once gRPC is done with the call and no alarm is pending.
  WatchReactor(std::shared_ptr<Job> job, absl::Duration interval);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // Lets the job's state listener reach the reactor until OnDone switches it off.
  class Link {
   public:
    explicit Link(WatchReactor* reactor) : reactor_(reactor) {}
    void Wake();
    void Detach();

   private:
    absl::Mutex mutex_;
    WatchReactor* reactor_ ABSL_GUARDED_BY(mutex_);
  };

  ~WatchReactor() override = default;

  // A change of state, or the alarm.
  void Wake();
  void OnAlarm();
  // Writes the job's update when it is due, else sets the alarm for the next look.
  void PumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const std::shared_ptr<Job> job_;
  const absl::Duration interval_;
  const std::shared_ptr<Link> link_;

  absl::Mutex mutex_;
  std::unique_ptr<grpc::Alarm> alarm_ ABSL_GUARDED_BY(mutex_);
  v1::JobUpdate update_ ABSL_GUARDED_BY(mutex_);  // the write in flight
  bool writing_ ABSL_GUARDED_BY(mutex_) = false;
  bool alarm_set_ ABSL_GUARDED_BY(mutex_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mutex_) = false;  // the client went away
  bool finished_ ABSL_GUARDED_BY(mutex_) = false;   // Finish was called
  bool done_ ABSL_GUARDED_BY(mutex_) = false;       // OnDone came: the alarm deletes
  bool sent_ ABSL_GUARDED_BY(mutex_) = false;
  bool sent_final_ ABSL_GUARDED_BY(mutex_) = false;
  v1::JobState sent_state_ ABSL_GUARDED_BY(mutex_) = v1::JOB_STATE_UNSPECIFIED;
  double sent_progress_ ABSL_GUARDED_BY(mutex_) = 0.0;
  absl::Time sent_at_ ABSL_GUARDED_BY(mutex_) = absl::InfinitePast();
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_WATCH_REACTOR_H_
