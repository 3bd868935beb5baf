// The one queue every request goes through: a bounded queue in two lanes (small and large jobs, by
// estimated flops), a fixed pool of worker threads, deadlines and cancellation that reach queued
// and running jobs, and a registry that keeps asynchronous jobs findable by id until `job_ttl`
// after they finish.
//
// Scheduling: a free worker starts the oldest queued job it may start. Small jobs may run on any
// worker; large jobs on at most workers - 1 at a time (all of them when there is only one), so one
// worker is always left for small jobs and a long permanent cannot starve them. Each lane is FIFO
// and holds at most `queue_depth` waiting jobs. With an admission policy (device memory), only the
// head of each lane is considered, so a job that does not fit yet is not overtaken within its lane.
//
// Clients (JobSpec::owner): a lane's "head" is the oldest job of the client with the fewest jobs
// running, so one client's backlog never delays another client's jobs by more than the jobs
// already running. A client's queued and running jobs together are capped by its max_jobs quota
// (JobSpec::owner_max_jobs), and Find only finds a job for the client that submitted it.
//
// Coalescing (SchedulerOptions::coalesce, server/coalescing.h): when a worker takes a job that
// carries a CoalescibleWork, it also takes the jobs of the same key queued in its lane, oldest
// first, each admitted on the head's device like any job (up to max_group), and runs them as one
// group; with a window it waits up to that long for more, only while other jobs are queued or
// running. Members are running jobs from then on: Cancel and deadlines reach each one alone.
//
// Inline jobs (SchedulerOptions::inline_max_flops): a tiny host-side synchronous job is started
// and run inside Submit, as running as any other (Cancel, StopAll, WaitUntilIdle and the observer
// see it), and has ended when Submit returns.
//
// Notification: a job's on_finished hook (JobSpec) and its state listeners run after the
// scheduler's lock is released, on the thread that changed the job (a worker, the housekeeper,
// the caller of Submit or Cancel), so they may call back into the scheduler or into gRPC.
#ifndef MATRIXD_SERVER_SCHEDULER_H_
#define MATRIXD_SERVER_SCHEDULER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/job.h"

namespace matrixd::server {

// Sees every job's life, e.g. to export metrics. Each call must be quick and must not call back
// into the scheduler. QueueDepthChanged and GroupStarted are called with the scheduler's lock
// held; JobStarted, JobEnded and ClientJobEnded of a job that ran or was dropped right after the
// lock is released (off the lock every request takes), in the order of each job's events and
// before its on_finished, but for different jobs on several threads at once: an observer is
// thread-safe.
class SchedulerObserver {
 public:
  virtual ~SchedulerObserver() = default;
  // The number of jobs waiting to start (both lanes) is now `depth`.
  virtual void QueueDepthChanged(int /*depth*/) {}
  // `job` left the queue for a worker after waiting `waited`.
  virtual void JobStarted(const Job& /*job*/, absl::Duration /*waited*/) {}
  // A job of `op` ended with `status`: it ran, was dropped from the queue, or was refused at
  // submission (queue full, does not fit).
  virtual void JobEnded(absl::string_view /*op*/, const absl::Status& /*status*/) {}
  // The same, by the client the job belongs to (JobSpec::owner, "" for the anonymous client).
  virtual void ClientJobEnded(absl::string_view /*client*/, const absl::Status& /*status*/) {}
  // `size` (>= 2) jobs of `op` started as one coalesced group.
  virtual void GroupStarted(absl::string_view /*op*/, int /*size*/) {}
};

// Decides when a queued job may start, by a resource that jobs reserve (device memory). TryAdmit
// and Release are called with the scheduler's lock held, CheckFits without it (it may read only
// the spec and what does not change); the scheduler calls Release for every job it admitted.
class JobAdmission {
 public:
  virtual ~JobAdmission() = default;
  // At submission: an error (RESOURCE_EXHAUSTED for a job that could never fit) refuses the job.
  virtual absl::Status CheckFits(const JobSpec& /*spec*/) { return absl::OkStatus(); }
  // Before `job` starts: true reserves what it needs until Release(job) (and may place it with
  // job.PlaceOnDevice); false leaves it queued until some job is released.
  virtual bool TryAdmit(Job& job) = 0;
  virtual void Release(const Job& job) = 0;
};

struct SchedulerOptions {
  int workers = 2;                             // jobs running at once
  int queue_depth = 64;                        // waiting jobs per lane
  double large_job_flops = 1e10;               // estimated flops from which a job is large
  absl::Duration job_ttl = absl::Minutes(10);  // how long finished asynchronous jobs are kept
  SchedulerObserver* observer = nullptr;       // optional; must outlive the scheduler
  JobAdmission* admission = nullptr;           // optional; must outlive the scheduler
  CoalesceOptions coalesce = {};               // small jobs run together; off by default
  // A synchronous job with JobSpec::runs_on_host, at most this many estimated flops and no
  // coalescing runs on the thread that submits it, at once, without a worker hand-off (and
  // without taking a worker: its caller's thread is the one that waits); 0: every job queues.
  double inline_max_flops = 0.0;
};

// INVALID_ARGUMENT naming the option when one is out of range.
absl::Status ValidateSchedulerOptions(const SchedulerOptions& options);

class Scheduler {
 public:
  // Starts the workers. REQUIRES: ValidateSchedulerOptions(options).ok().
  explicit Scheduler(const SchedulerOptions& options);
  // Drops the queued jobs and stops the running ones (both end UNAVAILABLE), then joins the
  // workers: a running job's work must return.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a job. RESOURCE_EXHAUSTED at once when its lane already holds queue_depth jobs (or
  // admission refuses it, or its owner has owner_max_jobs jobs queued and running: the message
  // names the quota max_jobs), DEADLINE_EXCEEDED when spec.deadline has passed, INVALID_ARGUMENT
  // without work. `remember`: give it an id and keep it for Find until job_ttl after it finishes
  // (asynchronous jobs); otherwise the returned handle is the only one outside the scheduler.
  // spec.on_finished runs exactly once: with the error before Submit returns it, or when the
  // queued job ends (possibly before Submit returns; always before, for a job run inline).
  absl::StatusOr<std::shared_ptr<Job>> Submit(JobSpec spec, bool remember);

  // The remembered job with this id, when it belongs to `owner`. NOT_FOUND when there is none
  // (never was, forgotten, or another client's: the same answer).
  absl::StatusOr<std::shared_ptr<Job>> Find(absl::string_view id,
                                            absl::string_view owner = {}) const;

  // Stops `job`: a queued job ends at once with `reason` and its work is destroyed unrun; a
  // running job's JobControl is cancelled, and it ends with `reason` when the work returns
  // CANCELLED (or with the work's own result if it finishes first). No effect on a finished job
  // or on a second call. REQUIRES: !reason.ok().
  void Cancel(Job& job, absl::Status reason);

  // Drain (MatrixServer::Drain). From now on Submit refuses every job with `reason`; queued and
  // running jobs go on. REQUIRES: !reason.ok().
  void StopAccepting(absl::Status reason);
  // OK while Submit takes jobs, else the reason given to StopAccepting.
  absl::Status accepting() const;
  // Blocks until no job is queued or running, or until `deadline`; true when none is left.
  bool WaitUntilIdle(absl::Time deadline) const;
  // Ends every queued job with `reason` (unrun) and asks every running one to stop with it, as
  // Cancel does; returns how many jobs that reached. REQUIRES: !reason.ok().
  int StopAll(absl::Status reason);

  int queued() const;
  int running() const;
  const SchedulerOptions& options() const { return options_; }

 private:
  struct Queued {
    uint64_t sequence;  // submission order across both lanes
    std::shared_ptr<Job> job;
  };

  // Holds mutex_; on release, runs the calls deferred while it was held (DeferLocked), outside
  // the lock.
  class ABSL_SCOPED_LOCKABLE NotifyingLock {
   public:
    explicit NotifyingLock(Scheduler* scheduler) ABSL_EXCLUSIVE_LOCK_FUNCTION(scheduler->mutex_);
    ~NotifyingLock() ABSL_UNLOCK_FUNCTION();
    NotifyingLock(const NotifyingLock&) = delete;
    NotifyingLock& operator=(const NotifyingLock&) = delete;

   private:
    Scheduler* const scheduler_;
  };

  // Runs `call` once the current holder of mutex_ (a NotifyingLock) releases it.
  void DeferLocked(absl::AnyInvocable<void()> call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    deferred_.push_back(std::move(call));
  }
  void WorkerLoop();
  // Runs a coalesced group (its members' CoalescibleWorks, the head's first) as one call on the
  // head's device; an exception fails every member, as RunGuarded fails one job.
  static std::vector<absl::Status> RunGroupGuarded(const std::vector<std::shared_ptr<Job>>& group);
  void HousekeepingLoop();
  // The next job to run, taken off its lane and marked running; null when none may start now.
  std::shared_ptr<Job> TakeNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Takes `job` (at `position` in `lane`) off it and marks it running.
  void StartLocked(std::deque<Queued>& lane, size_t position, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Marks `job`, off every lane, running; tells the observer once the lock is released unless
  // `tell_observer` is false (the caller then does, off the lock).
  void MarkRunningLocked(std::shared_ptr<Job> job, absl::Time now, bool tell_observer = true)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Whether a job carrying `coalescible` (may be null) gathers a coalesced group when it runs.
  bool Coalesces(const CoalescibleWork* coalescible) const;
  // Whether Submit runs a job of `spec` itself (see SchedulerOptions::inline_max_flops).
  bool RunsInline(const JobSpec& spec, bool remember) const;
  // Adds to group (its head first) the queued jobs that may run with it, waiting up to the
  // coalescing window for more while the server is busy. May release mutex_ while it waits.
  void GatherGroupLocked(std::vector<std::shared_ptr<Job>>& group)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // GatherGroupLocked's one look at the head's lane.
  void TakePartnersLocked(std::vector<std::shared_ptr<Job>>& group)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // A running job's work returned `status`: frees its worker slot and admission, and ends it.
  void EndRunningLocked(const std::shared_ptr<Job>& job, absl::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // StopAll under the lock.
  int StopAllLocked(const absl::Status& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Removes a queued job from its lane and ends it with `status`, unrun.
  void DropQueuedLocked(Job& job, absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void FinishLocked(Job& job, absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Drops expired queued jobs, stops expired running ones, forgets expired finished ones;
  // returns when to look again.
  absl::Time ExpireLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  std::string NewIdLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // The position in `lane` of the job to start next from it: the oldest of the owner with the
  // fewest jobs running.
  size_t FairHeadLocked(const std::deque<Queued>& lane) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  int RunningOfLocked(const std::string& owner) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    const auto it = running_by_owner_.find(owner);
    return it == running_by_owner_.end() ? 0 : it->second;
  }
  int QueuedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return static_cast<int>(small_.size() + large_.size());
  }
  // After a job ended or left a lane: wakes the workers only when one may act on it (jobs are
  // queued, or a worker is gathering a group), not on every small request of an idle queue.
  void WakeWorkersLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (QueuedLocked() > 0 || gathering_ > 0) work_changed_.SignalAll();
  }

  const SchedulerOptions options_;
  const int large_limit_;  // large jobs running at once

  mutable absl::Mutex mutex_;
  absl::CondVar work_changed_;    // a job queued or finished, or stopping: workers look again
  absl::CondVar expiry_changed_;  // an earlier deadline or expiry, or stopping
  std::deque<Queued> small_ ABSL_GUARDED_BY(mutex_);
  std::deque<Queued> large_ ABSL_GUARDED_BY(mutex_);
  std::vector<std::shared_ptr<Job>> running_ ABSL_GUARDED_BY(mutex_);
  int running_large_ ABSL_GUARDED_BY(mutex_) = 0;
  int gathering_ ABSL_GUARDED_BY(mutex_) = 0;  // workers waiting for a group's partners
  // By owner: jobs queued or running (for max_jobs), and running (for fair share); an owner's
  // entry stays (at 0) once it has been seen.
  absl::flat_hash_map<std::string, int> active_by_owner_ ABSL_GUARDED_BY(mutex_);
  absl::flat_hash_map<std::string, int> running_by_owner_ ABSL_GUARDED_BY(mutex_);
  uint64_t next_sequence_ ABSL_GUARDED_BY(mutex_) = 0;
  absl::flat_hash_map<std::string, std::shared_ptr<Job>> registry_ ABSL_GUARDED_BY(mutex_);
  // (when to forget, id) of finished remembered jobs, in finishing order = expiry order.
  std::deque<std::pair<absl::Time, std::string>> expiries_ ABSL_GUARDED_BY(mutex_);
  absl::BitGen id_bits_ ABSL_GUARDED_BY(mutex_);
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  absl::Status accepting_ ABSL_GUARDED_BY(mutex_);  // OK, or why Submit refuses (draining)
  // accepting_.ok(), readable without mutex_: every request asks (accepting()), and the scheduler
  // lock was the most waited-for one of a small-request load (docs/benchmarks.md).
  std::atomic<bool> accepting_ok_{true};
  // Hooks and listeners of jobs that changed under the lock now held; empty whenever it is free.
  std::vector<absl::AnyInvocable<void()>> deferred_ ABSL_GUARDED_BY(mutex_);

  std::vector<std::thread> workers_;
  std::thread housekeeper_;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_SCHEDULER_H_
