// One request's trip through the scheduler (server/scheduler.h): its work, its JobControl (cancel,
// progress), its deadline, its state, and once it has finished, its status and (for an
// asynchronous job) its result. Shared by the scheduler, the call it answers and, for an
// asynchronous job, the registry that finds it by id and its watchers. Thread-safe.
#ifndef MATRIXD_SERVER_JOB_H_
#define MATRIXD_SERVER_JOB_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/job_control.h"
#include "matrixd/v1/matrixd.pb.h"
#include "server/coalescing.h"

namespace matrixd::server {

enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled };

inline bool IsFinished(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCancelled;
}

// The state a job ends in with this status: OK succeeded, CANCELLED cancelled, else failed.
JobState FinalState(const absl::Status& status);

// What a job computes. Called at most once, on a worker thread; may return early with CANCELLED
// once control.cancelled(). It may throw: the worker turns std::bad_alloc into
// RESOURCE_EXHAUSTED and any other exception into INTERNAL.
using JobWork = absl::AnyInvocable<absl::Status(JobControl& control)>;

// Told once how a job ended: with its final status once it has finished (it ran, was dropped
// unrun, or was cancelled), or with the error when Scheduler::Submit refused it. Runs on a
// scheduler thread or in the caller of Submit/Cancel, never under a scheduler or job lock: it may
// call into the scheduler, and into gRPC.
using JobDone = absl::AnyInvocable<void(const absl::Status& status)>;

// Called after each change of a job's state (it started, it finished), under no scheduler or job
// lock; the job's state has changed by then.
using JobStateListener = std::function<void()>;

struct JobSpec {
  // "determinant", "factorize", "multiply" or "permanent": names the job in messages and metrics.
  std::string op;
  // Estimated floating-point (or modular) operations: picks the scheduler's lane.
  double estimated_flops = 0.0;
  // Device memory the job allocates at its peak (for admission); 0 for none. On each device of a
  // job that spans several (device_span).
  uint64_t device_bytes = 0;
  // > 0: the job runs on the backend's first device_span devices at once whatever admission
  // chooses (a product or determinant over several GPUs, core/multi_gpu/multi_gpu_backend.h):
  // admission reserves device_bytes on each of them and places the job on device 0, pinned or
  // not. 0: a job of one device.
  int device_span = 0;
  // The job fails with DEADLINE_EXCEEDED when it has not finished by then: dropped unrun if still
  // queued, cancelled if running.
  absl::Time deadline = absl::InfiniteFuture();
  JobWork work;
  // Optional, beside `work`: the same computation in a form that may run together with other
  // queued jobs of its key as one batched backend call (server/coalescing.h); `work` runs when
  // the job runs alone. Null: the job always runs alone.
  std::shared_ptr<CoalescibleWork> coalescible;
  // Where `work` leaves an asynchronous job's result (one of JobUpdate's result fields), kept
  // with the job after it finishes; null for a synchronous job, whose caller keeps its own.
  std::shared_ptr<const v1::JobUpdate> result;
  // Optional: how the job ended (see JobDone). A synchronous call finishes its RPC here.
  JobDone on_finished;
  // The client it belongs to ("" for the anonymous client): only it finds the job by id, and the
  // scheduler shares its workers fairly between clients.
  std::string owner;
  // The most jobs `owner` may have queued and running at once (its max_jobs quota); 0 = no quota.
  int owner_max_jobs = 0;
  // A deterministic request's device (an index into Backend::DeviceMemory()): the job starts
  // placed there, and admission places it nowhere else. JobControl::kAnyDevice: no pin.
  int pinned_device = JobControl::kAnyDevice;
  // The work computes on the host alone (no device stream, no device memory): when it is also
  // tiny (SchedulerOptions::inline_max_flops), Submit may run it at once on its caller's thread.
  bool runs_on_host = false;
};

// A job's state at one moment.
struct JobSnapshot {
  JobState state = JobState::kQueued;
  double progress = 0.0;                          // fraction done, 1 once succeeded
  absl::Duration queued = absl::ZeroDuration();   // waiting so far (or in all)
  absl::Duration running = absl::ZeroDuration();  // running so far (or in all)
  std::optional<absl::Duration> eta;              // time left, while running with progress
  absl::Status status;                            // when finished: OK or why not
};

class Job {
 public:
  // Made by Scheduler::Submit; `large` is its lane.
  Job(std::string id, JobSpec spec, bool large, absl::Time submitted);
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Random, unguessable for asynchronous jobs; empty for synchronous ones.
  const std::string& id() const { return id_; }
  const std::string& op() const { return op_; }
  const std::string& owner() const { return owner_; }
  double estimated_flops() const { return estimated_flops_; }
  uint64_t device_bytes() const { return device_bytes_; }
  // JobSpec::device_span.
  int device_span() const { return device_span_; }
  absl::Time deadline() const { return deadline_; }
  bool large() const { return large_; }
  // The device admission placed the job on (an index into Backend::DeviceMemory()), passed to
  // the backend through the job's JobControl; JobControl::kAnyDevice until placed.
  void PlaceOnDevice(int index) { control_.set_device_index(index); }
  int device_index() const { return control_.device_index(); }
  // JobSpec::pinned_device.
  int pinned_device() const { return pinned_device_; }
  // JobSpec::coalescible; null when the job always runs alone.
  CoalescibleWork* coalescible() const { return coalescible_.get(); }

  JobSnapshot Snapshot() const;
  JobState state() const;
  // Blocks until the job has finished or `until` has passed; true when it has finished.
  bool AwaitFinished(absl::Time until) const;
  // Blocks until the state is other than `seen` or `until` has passed; returns the state.
  JobState AwaitStateOtherThan(JobState seen, absl::Time until) const;
  // OK once succeeded; the error once failed or cancelled. REQUIRES: finished.
  absl::Status status() const;
  // The asynchronous job's result holder (JobSpec::result); read it only once the job has
  // succeeded, when it no longer changes. Null for a synchronous job.
  const std::shared_ptr<const v1::JobUpdate>& result() const { return result_; }
  // Calls `listener` after each later change of state, until the job has finished; nothing once
  // it has. The listener must stay safe to call that long (let it reach its target through
  // something the target can switch off).
  void AddStateListener(JobStateListener listener);

 private:
  friend class Scheduler;

  // ---- Called by the Scheduler only ----
  // Both return the listeners to call once the scheduler's lock is released.
  std::vector<JobStateListener> MarkRunning(absl::Time now);
  // Asks the running work to stop; the job will end with `reason` if the work returns CANCELLED.
  // Returns false when a stop was requested already.
  bool RequestStop(absl::Status reason);
  bool stop_requested() const;
  // Ends the job: status is what the work returned (or why it never ran).
  std::vector<JobStateListener> Finish(absl::Status status, absl::Time now);
  absl::Time submitted() const { return submitted_; }
  JobControl& control() { return control_; }
  // The work, taken out to run or to drop.
  JobWork TakeWork() { return std::move(work_); }
  // The on_finished hook, taken out to be run once.
  JobDone TakeOnFinished() { return std::move(on_finished_); }

  const std::string id_;
  const std::string op_;
  const std::string owner_;
  const double estimated_flops_;
  const uint64_t device_bytes_;
  const int device_span_;
  const absl::Time deadline_;
  const bool large_;
  const int pinned_device_;
  const absl::Time submitted_;
  const std::shared_ptr<const v1::JobUpdate> result_;
  const std::shared_ptr<CoalescibleWork> coalescible_;
  JobWork work_;         // touched by the scheduler under its lock, or by the one worker running it
  JobDone on_finished_;  // touched by the scheduler under its lock
  JobControl control_;

  mutable absl::Mutex mutex_;
  JobState state_ ABSL_GUARDED_BY(mutex_) = JobState::kQueued;
  absl::Time started_ ABSL_GUARDED_BY(mutex_) = absl::InfiniteFuture();
  absl::Time finished_ ABSL_GUARDED_BY(mutex_) = absl::InfiniteFuture();
  absl::Status stop_reason_ ABSL_GUARDED_BY(mutex_);  // OK until a stop is requested
  absl::Status status_ ABSL_GUARDED_BY(mutex_);
  std::vector<JobStateListener> listeners_ ABSL_GUARDED_BY(mutex_);  // dropped once finished
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_JOB_H_
