#include "server/scheduler.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace matrixd::server {
namespace {

// Runs the work; an exception must not take the worker (and the server) down.
absl::Status RunGuarded(const std::string& op, JobWork& work, JobControl& control) {
  try {
    return work(control);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(op, ": out of memory"));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(op, ": ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat(op, ": unknown exception"));
  }
}

absl::Status ShuttingDown() { return absl::UnavailableError("the server is shutting down"); }

absl::Status ExpiredWhileQueued(absl::string_view op) {
  return absl::DeadlineExceededError(
      absl::StrCat(op, ": the deadline passed while the job was queued; it never ran"));
}

// The calls that tell a job's end and its state changes: its listeners, then its on_finished hook.
absl::AnyInvocable<void()> Notification(std::vector<JobStateListener> listeners, JobDone done,
                                        absl::Status status) {
  return [listeners = std::move(listeners), done = std::move(done),
          status = std::move(status)]() mutable {
    for (const JobStateListener& listener : listeners) listener();
    if (done) done(status);
  };
}

// The same for a job that ended, told first to the observer (when not null) by its op and owner:
// one deferred call, so one allocation under the lock.
absl::AnyInvocable<void()> EndNotification(SchedulerObserver* observer, std::string op,
                                           std::string owner,
                                           std::vector<JobStateListener> listeners, JobDone done,
                                           absl::Status status) {
  return [observer, op = std::move(op), owner = std::move(owner), listeners = std::move(listeners),
          done = std::move(done), status = std::move(status)]() mutable {
    if (observer != nullptr) {
      observer->JobEnded(op, status);
      observer->ClientJobEnded(owner, status);
    }
    for (const JobStateListener& listener : listeners) listener();
    if (done) done(status);
  };
}

}  // namespace

// Runs a coalesced group (its members' CoalescibleWorks, the head's first) as one call on the
// head's device; an exception fails every member, as RunGuarded fails one job.
std::vector<absl::Status> Scheduler::RunGroupGuarded(
    const std::vector<std::shared_ptr<Job>>& group) {
  std::vector<CoalescibleWork*> members;
  std::vector<JobControl*> controls;
  members.reserve(group.size());
  controls.reserve(group.size());
  for (const std::shared_ptr<Job>& job : group) {
    members.push_back(job->coalescible());
    controls.push_back(&job->control());
  }
  JobControl control;
  control.set_device_index(group.front()->device_index());
  absl::Status failed;
  try {
    return members.front()->RunGroup(members, controls, control);
  } catch (const std::bad_alloc&) {
    failed = absl::ResourceExhaustedError(absl::StrCat(group.front()->op(), ": out of memory"));
  } catch (const std::exception& e) {
    failed = absl::InternalError(absl::StrCat(group.front()->op(), ": ", e.what()));
  } catch (...) {
    failed = absl::InternalError(absl::StrCat(group.front()->op(), ": unknown exception"));
  }
  return std::vector<absl::Status>(group.size(), failed);
}

Scheduler::NotifyingLock::NotifyingLock(Scheduler* scheduler) : scheduler_(scheduler) {
  scheduler_->mutex_.Lock();
}

Scheduler::NotifyingLock::~NotifyingLock() {
  std::vector<absl::AnyInvocable<void()>> deferred;
  deferred.swap(scheduler_->deferred_);
  scheduler_->mutex_.Unlock();
  for (absl::AnyInvocable<void()>& call : deferred) call();
}

absl::Status ValidateSchedulerOptions(const SchedulerOptions& options) {
  if (options.workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat("workers is ", options.workers, "; want >= 1"));
  }
  if (options.queue_depth < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("queue_depth is ", options.queue_depth, "; want >= 1"));
  }
  if (!(options.large_job_flops > 0) || std::isinf(options.large_job_flops)) {
    return absl::InvalidArgumentError(
        absl::StrCat("large_job_flops is ", options.large_job_flops, "; want a finite value > 0"));
  }
  if (absl::Status coalesce = ValidateCoalesceOptions(options.coalesce); !coalesce.ok()) {
    return coalesce;
  }
  if (!(options.inline_max_flops >= 0) || std::isinf(options.inline_max_flops)) {
    return absl::InvalidArgumentError(absl::StrCat("inline_max_flops is ", options.inline_max_flops,
                                                   "; want a finite value >= 0"));
  }
  if (options.job_ttl < absl::ZeroDuration() || options.job_ttl == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job_ttl is ", absl::FormatDuration(options.job_ttl), "; want a finite duration >= 0"));
  }
  return absl::OkStatus();
}

Scheduler::Scheduler(const SchedulerOptions& options)
    : options_(options), large_limit_(std::max(options.workers - 1, 1)) {
  workers_.reserve(options_.workers);
  for (int w = 0; w < options_.workers; ++w) workers_.emplace_back([this] { WorkerLoop(); });
  housekeeper_ = std::thread([this] { HousekeepingLoop(); });
}

Scheduler::~Scheduler() {
  {
    NotifyingLock lock(this);
    stopping_ = true;
    StopAllLocked(ShuttingDown());
    work_changed_.SignalAll();
    expiry_changed_.SignalAll();
  }
  for (std::thread& worker : workers_) worker.join();
  housekeeper_.join();
}

absl::StatusOr<std::shared_ptr<Job>> Scheduler::Submit(JobSpec spec, bool remember) {
  if (!spec.work) {
    absl::Status refused = absl::InvalidArgumentError("a job needs work");
    if (spec.on_finished) spec.on_finished(refused);
    return refused;
  }
  const std::string op = spec.op;
  const absl::Time now = absl::Now();
  const bool large = spec.estimated_flops >= options_.large_job_flops;
  const bool run_here = RunsInline(spec, remember);
  const absl::Time deadline = spec.deadline;
  const int owner_max_jobs = spec.owner_max_jobs;
  // Off the lock every request takes: whether the job can ever fit (the spec and the devices'
  // capacities alone), and, for a synchronous job (no id to draw), the job itself.
  const absl::Status fits =
      options_.admission != nullptr ? options_.admission->CheckFits(spec) : absl::OkStatus();
  std::shared_ptr<Job> job;
  if (!remember) job = std::make_shared<Job>(std::string(), std::move(spec), large, now);
  // Valid through every refusal below (a remembered job's spec moves into its Job after them).
  const std::string& owner = job != nullptr ? job->owner() : spec.owner;
  auto refuse = [this, &op, &owner, &spec,
                 &job](absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (options_.observer != nullptr) {
      options_.observer->JobEnded(op, status);
      options_.observer->ClientJobEnded(owner, status);
    }
    JobDone done = job != nullptr ? job->TakeOnFinished() : std::move(spec.on_finished);
    if (done) DeferLocked(Notification({}, std::move(done), status));
    return status;
  };
  JobWork work;
  {
    NotifyingLock lock(this);
    if (stopping_) return refuse(ShuttingDown());
    if (!accepting_.ok()) return refuse(accepting_);
    if (deadline <= now) {
      return refuse(absl::DeadlineExceededError(
          absl::StrCat(op, ": the deadline passed before the job was queued")));
    }
    if (!fits.ok()) return refuse(fits);
    if (owner_max_jobs > 0) {
      const auto active = active_by_owner_.find(owner);
      if (active != active_by_owner_.end() && active->second >= owner_max_jobs) {
        return refuse(absl::ResourceExhaustedError(absl::StrCat(
            "quota max_jobs: ", owner.empty() ? "this client" : owner, " has ", active->second,
            " jobs queued or running, its most is ", owner_max_jobs, "; wait for one to finish")));
      }
    }
    std::deque<Queued>& lane = large ? large_ : small_;
    if (static_cast<int>(lane.size()) >= options_.queue_depth) {
      return refuse(absl::ResourceExhaustedError(absl::StrCat(
          "the job queue is full: ", lane.size(), " ", large ? "large" : "small",
          " jobs are waiting (--queue_depth=", options_.queue_depth, "); try again later")));
    }
    if (job == nullptr) {
      job = std::make_shared<Job>(NewIdLocked(), std::move(spec), large, now);
      registry_.emplace(job->id(), job);
    }
    ++active_by_owner_[job->owner()];
    if (run_here && (options_.admission == nullptr || options_.admission->TryAdmit(*job))) {
      MarkRunningLocked(job, now, /*tell_observer=*/false);
      work = job->TakeWork();
    } else {
      lane.push_back({next_sequence_++, job});
      if (options_.observer != nullptr) options_.observer->QueueDepthChanged(QueuedLocked());
      work_changed_.SignalAll();
      if (deadline != absl::InfiniteFuture()) expiry_changed_.Signal();
      return job;
    }
  }
  if (options_.observer != nullptr) options_.observer->JobStarted(*job, absl::ZeroDuration());
  // Run inline: as a worker runs a job, on this thread.
  absl::Status status = RunGuarded(op, work, job->control());
  work = nullptr;  // free the request before anyone sees the job finished
  NotifyingLock lock(this);
  EndRunningLocked(job, std::move(status));
  WakeWorkersLocked();
  return job;
}

bool Scheduler::Coalesces(const CoalescibleWork* coalescible) const {
  return options_.coalesce.max_group > 1 && coalescible != nullptr &&
         coalescible->key().order <= options_.coalesce.max_order;
}

bool Scheduler::RunsInline(const JobSpec& spec, bool remember) const {
  return !remember && spec.runs_on_host && options_.inline_max_flops > 0 &&
         spec.estimated_flops <= options_.inline_max_flops && !Coalesces(spec.coalescible.get());
}

absl::StatusOr<std::shared_ptr<Job>> Scheduler::Find(absl::string_view id,
                                                     absl::string_view owner) const {
  absl::MutexLock lock(&mutex_);
  auto it = registry_.find(id);
  if (it == registry_.end() || it->second->owner() != owner) {
    return absl::NotFoundError(absl::StrCat("no job \"", id, "\": never submitted, or forgotten ",
                                            absl::FormatDuration(options_.job_ttl),
                                            " after it finished (--job_ttl)"));
  }
  return it->second;
}

void Scheduler::Cancel(Job& job, absl::Status reason) {
  NotifyingLock lock(this);
  // Job states change only under mutex_, so this reading stays true below.
  const JobState state = job.state();
  if (state == JobState::kQueued) {
    DropQueuedLocked(job, std::move(reason));
  } else if (state == JobState::kRunning) {
    job.RequestStop(std::move(reason));
  }
}

void Scheduler::StopAccepting(absl::Status reason) {
  absl::MutexLock lock(&mutex_);
  accepting_ = std::move(reason);
  accepting_ok_.store(accepting_.ok(), std::memory_order_release);
}

absl::Status Scheduler::accepting() const {
  if (accepting_ok_.load(std::memory_order_acquire)) return absl::OkStatus();
  absl::MutexLock lock(&mutex_);
  return accepting_;
}

bool Scheduler::WaitUntilIdle(absl::Time deadline) const {
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return QueuedLocked() == 0 && running_.empty();
  };
  absl::MutexLock lock(&mutex_);
  return mutex_.AwaitWithDeadline(absl::Condition(&idle), deadline);
}

int Scheduler::StopAll(absl::Status reason) {
  NotifyingLock lock(this);
  return StopAllLocked(reason);
}

int Scheduler::StopAllLocked(const absl::Status& reason) {
  const int reached = QueuedLocked() + static_cast<int>(running_.size());
  while (!small_.empty()) DropQueuedLocked(*small_.front().job, reason);
  while (!large_.empty()) DropQueuedLocked(*large_.front().job, reason);
  for (const std::shared_ptr<Job>& job : running_) job->RequestStop(reason);
  return reached;
}

int Scheduler::queued() const {
  absl::MutexLock lock(&mutex_);
  return QueuedLocked();
}

int Scheduler::running() const {
  absl::MutexLock lock(&mutex_);
  return static_cast<int>(running_.size());
}

void Scheduler::WorkerLoop() {
  std::vector<std::shared_ptr<Job>> group;
  std::vector<JobWork> works;
  std::vector<absl::Status> statuses;
  for (;;) {
    {
      NotifyingLock lock(this);
      std::shared_ptr<Job> job;
      // Jobs dropped on the way (expired heads) are told before this worker waits.
      while (!stopping_ && (job = TakeNextLocked()) == nullptr && deferred_.empty()) {
        work_changed_.Wait(&mutex_);
      }
      if (job == nullptr) {
        if (stopping_) return;
        continue;
      }
      group.push_back(std::move(job));
      if (Coalesces(group.front()->coalescible())) GatherGroupLocked(group);
      for (const std::shared_ptr<Job>& member : group) works.push_back(member->TakeWork());
    }
    if (group.size() == 1) {
      statuses.push_back(RunGuarded(group.front()->op(), works.front(), group.front()->control()));
    } else {
      statuses = RunGroupGuarded(group);
    }
    // Free the requests (and anything else the works hold) before anyone sees the jobs finished.
    works.clear();
    NotifyingLock lock(this);
    for (size_t i = 0; i < group.size(); ++i) EndRunningLocked(group[i], std::move(statuses[i]));
    group.clear();
    statuses.clear();
    // A worker slot for a large job, or admitted resources, came free.
    WakeWorkersLocked();
  }
}

void Scheduler::EndRunningLocked(const std::shared_ptr<Job>& job, absl::Status status) {
  running_.erase(std::find(running_.begin(), running_.end(), job));
  if (job->large()) --running_large_;
  --running_by_owner_[job->owner()];  // kept at 0, as active_by_owner_ (FinishLocked)
  if (options_.admission != nullptr) options_.admission->Release(*job);
  FinishLocked(*job, std::move(status));
}

void Scheduler::GatherGroupLocked(std::vector<std::shared_ptr<Job>>& group) {
  const absl::Time until = absl::Now() + options_.coalesce.window;
  const auto full = [&] { return static_cast<int>(group.size()) >= options_.coalesce.max_group; };
  TakePartnersLocked(group);
  // Waiting pays only on a busy server: on an idle one a lone job starts at once.
  ++gathering_;
  while (!full() && !stopping_ && options_.coalesce.window > absl::ZeroDuration() &&
         (QueuedLocked() > 0 || running_.size() > group.size())) {
    const bool timed_out = work_changed_.WaitWithDeadline(&mutex_, until);
    TakePartnersLocked(group);
    if (timed_out) break;
  }
  --gathering_;
  if (group.size() > 1 && options_.observer != nullptr) {
    options_.observer->GroupStarted(group.front()->op(), static_cast<int>(group.size()));
  }
}

void Scheduler::TakePartnersLocked(std::vector<std::shared_ptr<Job>>& group) {
  const Job& head = *group.front();
  const CoalesceKey& key = head.coalescible()->key();
  std::deque<Queued>& lane = head.large() ? large_ : small_;
  const absl::Time now = absl::Now();
  for (size_t i = 0;
       i < lane.size() && static_cast<int>(group.size()) < options_.coalesce.max_group;) {
    Job& job = *lane[i].job;
    // An expired job is the housekeeper's (or TakeNextLocked's) to drop.
    if (job.coalescible() == nullptr || !(job.coalescible()->key() == key) ||
        job.deadline() <= now) {
      ++i;
      continue;
    }
    if (options_.admission != nullptr) {
      // As for a lane head: a partner that does not fit is not overtaken by the ones behind it.
      if (!options_.admission->TryAdmit(job)) break;
      if (job.device_index() != head.device_index()) {
        options_.admission->Release(job);
        break;
      }
    }
    group.push_back(lane[i].job);
    StartLocked(lane, i, now);
  }
}

std::shared_ptr<Job> Scheduler::TakeNextLocked() {
  const absl::Time now = absl::Now();
  // A head whose deadline passed goes now rather than at the housekeeper's next round.
  for (std::deque<Queued>* lane : {&small_, &large_}) {
    while (!lane->empty() && lane->front().job->deadline() <= now) {
      DropQueuedLocked(*lane->front().job, ExpiredWhileQueued(lane->front().job->op()));
    }
  }
  // The lanes' (fair) heads, oldest first; a large job only while fewer than large_limit_ run.
  std::deque<Queued>* candidates[2] = {nullptr, nullptr};
  size_t heads[2] = {0, 0};
  int count = 0;
  if (!small_.empty()) {
    heads[count] = FairHeadLocked(small_);
    candidates[count++] = &small_;
  }
  if (!large_.empty() && running_large_ < large_limit_) {
    heads[count] = FairHeadLocked(large_);
    candidates[count++] = &large_;
  }
  if (count == 2 && (*candidates[1])[heads[1]].sequence < (*candidates[0])[heads[0]].sequence) {
    std::swap(candidates[0], candidates[1]);
    std::swap(heads[0], heads[1]);
  }
  for (int c = 0; c < count; ++c) {
    std::deque<Queued>& lane = *candidates[c];
    std::shared_ptr<Job> job = lane[heads[c]].job;
    if (options_.admission != nullptr && !options_.admission->TryAdmit(*job)) continue;
    StartLocked(lane, heads[c], now);
    return job;
  }
  return nullptr;
}

void Scheduler::StartLocked(std::deque<Queued>& lane, size_t position, absl::Time now) {
  std::shared_ptr<Job> job = std::move(lane[position].job);
  lane.erase(lane.begin() + static_cast<std::ptrdiff_t>(position));
  if (options_.observer != nullptr) options_.observer->QueueDepthChanged(QueuedLocked());
  MarkRunningLocked(std::move(job), now);
}

void Scheduler::MarkRunningLocked(std::shared_ptr<Job> job, absl::Time now, bool tell_observer) {
  if (job->large()) ++running_large_;
  ++running_by_owner_[job->owner()];
  if (std::vector<JobStateListener> listeners = job->MarkRunning(now); !listeners.empty()) {
    DeferLocked(Notification(std::move(listeners), nullptr, absl::OkStatus()));
  }
  if (tell_observer && options_.observer != nullptr) {
    DeferLocked([observer = options_.observer, job, waited = now - job->submitted()] {
      observer->JobStarted(*job, waited);
    });
  }
  running_.push_back(std::move(job));
}

size_t Scheduler::FairHeadLocked(const std::deque<Queued>& lane) const {
  // One client (the common case, and every server without tokens): the plain FIFO head.
  size_t best = 0;
  int best_running = RunningOfLocked(lane.front().job->owner());
  for (size_t i = 1; i < lane.size() && best_running > 0; ++i) {
    const std::string& owner = lane[i].job->owner();
    if (owner == lane[best].job->owner()) continue;
    const int running = RunningOfLocked(owner);
    if (running < best_running) {
      best = i;
      best_running = running;
    }
  }
  return best;
}

void Scheduler::DropQueuedLocked(Job& job, absl::Status status) {
  std::deque<Queued>& lane = job.large() ? large_ : small_;
  auto it = std::find_if(lane.begin(), lane.end(),
                         [&job](const Queued& queued) { return queued.job.get() == &job; });
  if (it == lane.end()) return;
  std::shared_ptr<Job> keep = std::move(it->job);
  lane.erase(it);
  // Destroyed here, unrun: a dropped job frees its request at once.
  job.TakeWork() = nullptr;
  if (options_.observer != nullptr) options_.observer->QueueDepthChanged(QueuedLocked());
  FinishLocked(job, std::move(status));
  // A lane head changed: a job behind it may be startable now.
  WakeWorkersLocked();
}

void Scheduler::FinishLocked(Job& job, absl::Status status) {
  std::vector<JobStateListener> listeners = job.Finish(std::move(status), absl::Now());
  const absl::Status final_status = job.status();
  // An owner's entry stays at 0 when its last job ends (as absent reads): not erased and
  // inserted again on every request of a client with one job at a time.
  if (const auto active = active_by_owner_.find(job.owner()); active != active_by_owner_.end()) {
    --active->second;
  }
  JobDone done = job.TakeOnFinished();
  if (options_.observer != nullptr || !listeners.empty() || done) {
    DeferLocked(EndNotification(options_.observer, job.op(), job.owner(), std::move(listeners),
                                std::move(done), final_status));
  }
  if (!job.id().empty()) {
    expiries_.emplace_back(absl::Now() + options_.job_ttl, job.id());
    if (expiries_.size() == 1) expiry_changed_.Signal();
  }
}

absl::Time Scheduler::ExpireLocked(absl::Time now) {
  absl::Time next = absl::InfiniteFuture();
  for (std::deque<Queued>* lane : {&small_, &large_}) {
    std::vector<Job*> expired;
    for (const Queued& queued : *lane) {
      const absl::Time deadline = queued.job->deadline();
      if (deadline <= now) {
        expired.push_back(queued.job.get());
      } else {
        next = std::min(next, deadline);
      }
    }
    for (Job* job : expired) {
      DropQueuedLocked(*job, ExpiredWhileQueued(job->op()));
    }
  }
  for (const std::shared_ptr<Job>& job : running_) {
    const absl::Time deadline = job->deadline();
    if (deadline <= now) {
      job->RequestStop(absl::DeadlineExceededError(
          absl::StrCat(job->op(), ": the deadline passed while the job was running")));
    } else {
      next = std::min(next, deadline);
    }
  }
  while (!expiries_.empty() && expiries_.front().first <= now) {
    registry_.erase(expiries_.front().second);
    expiries_.pop_front();
  }
  if (!expiries_.empty()) next = std::min(next, expiries_.front().first);
  return next;
}

void Scheduler::HousekeepingLoop() {
  for (;;) {
    // Released after each round, so that the jobs it ended are told.
    NotifyingLock lock(this);
    if (stopping_) return;
    const absl::Time next = ExpireLocked(absl::Now());
    if (deferred_.empty()) expiry_changed_.WaitWithDeadline(&mutex_, next);
  }
}

std::string Scheduler::NewIdLocked() {
  // 128 random bits: ids are the only credential for Cancel, so they must not be guessable.
  for (;;) {
    std::string id = absl::StrFormat("%016x%016x", absl::Uniform<uint64_t>(id_bits_),
                                     absl::Uniform<uint64_t>(id_bits_));
    if (!registry_.contains(id)) return id;
  }
}

}  // namespace matrixd::server
