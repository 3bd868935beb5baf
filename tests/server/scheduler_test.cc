// The scheduler on its own, with work that blocks until the test releases it: the bounded queue,
// the two lanes, deadlines, cancellation (and the release of a job's work), the registry's TTL,
// admission, exceptions and shutdown.
#include "server/scheduler.h"

#include <atomic>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// How long a test waits for something that should happen at once before it fails (generous:
// CI has 2 busy cores). Tests that check promptness measure against their own, tighter bounds.
constexpr absl::Duration kPatience = absl::Seconds(10);

// Work a test controls: it runs until released or cancelled and records what happened.
class Gate {
 public:
  JobWork Work(double progress = 0.0) {
    return [this, progress](JobControl& control) -> absl::Status {
      ran_ = true;
      control.ReportProgress(progress);
      started_.Notify();
      const absl::Time give_up = absl::Now() + kPatience;
      while (!released_.HasBeenNotified()) {
        if (control.cancelled()) return absl::CancelledError("work saw the cancel");
        if (absl::Now() > give_up) return absl::InternalError("never released");
        absl::SleepFor(absl::Milliseconds(1));
      }
      return absl::OkStatus();
    };
  }
  void Release() { released_.Notify(); }
  bool AwaitStarted() { return started_.WaitForNotificationWithTimeout(kPatience); }
  bool ran() const { return ran_.load(); }

 private:
  absl::Notification started_;
  absl::Notification released_;
  std::atomic<bool> ran_{false};
};

JobSpec Spec(JobWork work, double flops = 1.0, absl::Time deadline = absl::InfiniteFuture()) {
  JobSpec spec;
  spec.op = "test";
  spec.estimated_flops = flops;
  spec.deadline = deadline;
  spec.work = std::move(work);
  return spec;
}

JobWork Instant(absl::Status status = absl::OkStatus()) {
  return [status](JobControl&) { return status; };
}

// Submits and fails the test on an error.
std::shared_ptr<Job> MustSubmit(Scheduler& scheduler, JobSpec spec, bool remember = false) {
  absl::StatusOr<std::shared_ptr<Job>> job = scheduler.Submit(std::move(spec), remember);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *job : nullptr;
}

bool AwaitFinished(const Job& job) { return job.AwaitFinished(absl::Now() + kPatience); }

TEST(SchedulerOptionsTest, OutOfRangeValuesAreInvalidArgumentNamingTheOption) {
  const std::vector<std::pair<SchedulerOptions, std::string>> cases = {
      {{.workers = 0}, "workers"},
      {{.queue_depth = 0}, "queue_depth"},
      {{.large_job_flops = 0.0}, "large_job_flops"},
      {{.large_job_flops = std::numeric_limits<double>::quiet_NaN()}, "large_job_flops"},
      {{.job_ttl = absl::Seconds(-1)}, "job_ttl"},
      {{.job_ttl = absl::InfiniteDuration()}, "job_ttl"},
  };
  for (const auto& [options, name] : cases) {
    const absl::Status status = ValidateSchedulerOptions(options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(std::string(status.message()), HasSubstr(name));
  }
  EXPECT_TRUE(ValidateSchedulerOptions({}).ok());
}

TEST(SchedulerTest, RunsAJobAndReportsItsStatus) {
  Scheduler scheduler({.workers = 1});
  std::shared_ptr<Job> ok = MustSubmit(scheduler, Spec(Instant()));
  std::shared_ptr<Job> failed = MustSubmit(scheduler, Spec(Instant(absl::DataLossError("lost"))));
  ASSERT_TRUE(AwaitFinished(*ok));
  ASSERT_TRUE(AwaitFinished(*failed));
  EXPECT_EQ(ok->state(), JobState::kSucceeded);
  EXPECT_TRUE(ok->status().ok());
  EXPECT_EQ(ok->Snapshot().progress, 1.0);
  EXPECT_EQ(failed->state(), JobState::kFailed);
  EXPECT_EQ(failed->status(), absl::DataLossError("lost"));
}

TEST(SchedulerTest, FullLaneIsResourceExhaustedAtOnce) {
  Gate gate;
  Scheduler scheduler({.workers = 1, .queue_depth = 2});
  std::shared_ptr<Job> running = MustSubmit(scheduler, Spec(gate.Work()));
  ASSERT_TRUE(gate.AwaitStarted());
  std::shared_ptr<Job> first = MustSubmit(scheduler, Spec(Instant()));
  std::shared_ptr<Job> second = MustSubmit(scheduler, Spec(Instant()));
  EXPECT_EQ(scheduler.queued(), 2);

  const absl::Time start = absl::Now();
  absl::StatusOr<std::shared_ptr<Job>> refused = scheduler.Submit(Spec(Instant()), false);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(100));
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("queue is full"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("--queue_depth=2"));

  gate.Release();
  ASSERT_TRUE(AwaitFinished(*first));
  ASSERT_TRUE(AwaitFinished(*second));
  EXPECT_EQ(second->state(), JobState::kSucceeded);
  // Room again once the queue drains.
  std::shared_ptr<Job> later = MustSubmit(scheduler, Spec(Instant()));
  ASSERT_TRUE(AwaitFinished(*later));
}

TEST(SchedulerTest, EachLaneHasItsOwnBound) {
  Gate gate;
  Scheduler scheduler({.workers = 1, .queue_depth = 1, .large_job_flops = 100.0});
  std::shared_ptr<Job> running = MustSubmit(scheduler, Spec(gate.Work()));
  ASSERT_TRUE(gate.AwaitStarted());
  std::shared_ptr<Job> large = MustSubmit(scheduler, Spec(Instant(), 1e6));
  // The large lane is full; the small lane still takes a job.
  EXPECT_EQ(scheduler.Submit(Spec(Instant(), 1e6), false).status().code(),
            absl::StatusCode::kResourceExhausted);
  std::shared_ptr<Job> small = MustSubmit(scheduler, Spec(Instant(), 1.0));
  gate.Release();
  ASSERT_TRUE(AwaitFinished(*large));
  ASSERT_TRUE(AwaitFinished(*small));
}

TEST(SchedulerTest, PassedDeadlineIsRefusedAtSubmission) {
  Scheduler scheduler({.workers = 1});
  absl::StatusOr<std::shared_ptr<Job>> job =
      scheduler.Submit(Spec(Instant(), 1.0, absl::Now() - absl::Milliseconds(1)), false);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(SchedulerTest, DeadlinePassingWhileQueuedDropsTheJobUnrun) {
  Gate blocker;
  Gate late;
  Scheduler scheduler({.workers = 1});
  std::shared_ptr<Job> running = MustSubmit(scheduler, Spec(blocker.Work()));
  ASSERT_TRUE(blocker.AwaitStarted());
  const absl::Time deadline = absl::Now() + absl::Milliseconds(50);
  std::shared_ptr<Job> job = MustSubmit(scheduler, Spec(late.Work(), 1.0, deadline));

  // Dropped near its deadline while the worker is still busy, not when the worker comes free.
  ASSERT_TRUE(AwaitFinished(*job));
  const absl::Time ended = absl::Now();
  EXPECT_GE(ended, deadline);
  EXPECT_LT(ended - deadline, absl::Seconds(1));
  EXPECT_EQ(running->state(), JobState::kRunning);
  EXPECT_EQ(job->state(), JobState::kFailed);
  EXPECT_EQ(job->status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(job->status().message()), HasSubstr("queued"));
  EXPECT_EQ(job->Snapshot().running, absl::ZeroDuration());
  EXPECT_EQ(scheduler.queued(), 0);
  blocker.Release();
  ASSERT_TRUE(AwaitFinished(*running));
  EXPECT_FALSE(late.ran());
}

TEST(SchedulerTest, DeadlinePassingWhileRunningStopsTheJob) {
  Gate gate;
  Scheduler scheduler({.workers = 1});
  std::shared_ptr<Job> job =
      MustSubmit(scheduler, Spec(gate.Work(), 1.0, absl::Now() + absl::Milliseconds(100)));
  ASSERT_TRUE(AwaitFinished(*job));
  EXPECT_TRUE(gate.ran());
  EXPECT_EQ(job->state(), JobState::kFailed);
  EXPECT_EQ(job->status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(job->status().message()), HasSubstr("running"));
}

TEST(SchedulerTest, CancellingAQueuedJobEndsItAtOnceAndFreesItsWork) {
  Gate blocker;
  Scheduler scheduler({.workers = 1});
  std::shared_ptr<Job> running = MustSubmit(scheduler, Spec(blocker.Work()));
  ASSERT_TRUE(blocker.AwaitStarted());
  // The work owns a buffer, as a queued request owns its matrices.
  auto buffer = std::make_shared<std::vector<double>>(1 << 16);
  std::weak_ptr<std::vector<double>> watch = buffer;
  std::atomic<bool> ran{false};
  std::shared_ptr<Job> job =
      MustSubmit(scheduler, Spec([buffer = std::move(buffer), &ran](JobControl&) {
                   ran = true;
                   return absl::OkStatus();
                 }));
  EXPECT_FALSE(watch.expired());

  scheduler.Cancel(*job, absl::CancelledError("not wanted"));
  EXPECT_EQ(job->state(), JobState::kCancelled);  // at once: no waiting for a worker
  EXPECT_EQ(job->status(), absl::CancelledError("not wanted"));
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(scheduler.queued(), 0);
  blocker.Release();
  ASSERT_TRUE(AwaitFinished(*running));
  EXPECT_FALSE(ran.load());
}

TEST(SchedulerTest, CancellingARunningJobStopsItAndFreesTheWorker) {
  Gate gate;
  Scheduler scheduler({.workers = 1});
  std::shared_ptr<Job> job = MustSubmit(scheduler, Spec(gate.Work()));
  ASSERT_TRUE(gate.AwaitStarted());
  scheduler.Cancel(*job, absl::CancelledError("stop it"));
  ASSERT_TRUE(AwaitFinished(*job));
  EXPECT_EQ(job->state(), JobState::kCancelled);
  // The reason given to Cancel, not the backend's plain "cancelled".
  EXPECT_EQ(job->status(), absl::CancelledError("stop it"));
  EXPECT_EQ(scheduler.running(), 0);
  std::shared_ptr<Job> next = MustSubmit(scheduler, Spec(Instant()));
  ASSERT_TRUE(AwaitFinished(*next));
  EXPECT_EQ(next->state(), JobState::kSucceeded);
}

TEST(SchedulerTest, StopAcceptingRefusesNewJobsWithTheReasonAndKeepsQueuedOnes) {
  Gate gate;
  Scheduler scheduler({.workers = 1});
  std::shared_ptr<Job> running = MustSubmit(scheduler, Spec(gate.Work()));
  ASSERT_TRUE(gate.AwaitStarted());
  std::shared_ptr<Job> queued = MustSubmit(scheduler, Spec(Instant()));
  EXPECT_TRUE(scheduler.accepting().ok());

  scheduler.StopAccepting(absl::UnavailableError("draining"));
  EXPECT_EQ(scheduler.accepting(), absl::UnavailableError("draining"));
  absl::Status told;
  JobSpec refused_spec = Spec(Instant());
  refused_spec.on_finished = [&told](const absl::Status& status) { told = status; };
  EXPECT_EQ(scheduler.Submit(std::move(refused_spec), false).status(),
            absl::UnavailableError("draining"));
  EXPECT_EQ(told, absl::UnavailableError("draining"));

  // What was queued and running before goes on to the end.
  EXPECT_FALSE(scheduler.WaitUntilIdle(absl::Now() + absl::Milliseconds(20)));
  gate.Release();
  EXPECT_TRUE(scheduler.WaitUntilIdle(absl::Now() + kPatience));
  EXPECT_EQ(running->state(), JobState::kSucceeded);
  EXPECT_EQ(queued->state(), JobState::kSucceeded);
}

TEST(SchedulerTest, StopAllEndsQueuedAndRunningJobsWithTheReason) {
  Gate gate;
  Scheduler scheduler({.workers = 1});
  std::shared_ptr<Job> running = MustSubmit(scheduler, Spec(gate.Work()));
  ASSERT_TRUE(gate.AwaitStarted());
  std::shared_ptr<Job> queued = MustSubmit(scheduler, Spec(Instant()));
  EXPECT_EQ(scheduler.StopAll(absl::UnavailableError("drain timeout")), 2);
  EXPECT_TRUE(scheduler.WaitUntilIdle(absl::Now() + kPatience));
  EXPECT_EQ(running->status(), absl::UnavailableError("drain timeout"));
  EXPECT_EQ(queued->status(), absl::UnavailableError("drain timeout"));
  EXPECT_EQ(scheduler.StopAll(absl::UnavailableError("again")), 0);
}

TEST(SchedulerTest, CancellingAFinishedJobChangesNothing) {
  Scheduler scheduler({.workers = 1});
  std::shared_ptr<Job> job = MustSubmit(scheduler, Spec(Instant()));
  ASSERT_TRUE(AwaitFinished(*job));
  scheduler.Cancel(*job, absl::CancelledError("too late"));
  EXPECT_EQ(job->state(), JobState::kSucceeded);
  EXPECT_TRUE(job->status().ok());
}

TEST(SchedulerTest, WorkThatFinishesDespiteACancelKeepsItsResult) {
  absl::Notification cancelled;
  absl::Notification go;
  Scheduler scheduler({.workers = 1});
  std::shared_ptr<Job> job = MustSubmit(scheduler, Spec([&](JobControl&) {
                                          go.WaitForNotification();
                                          return absl::OkStatus();
                                        }));
  while (job->state() != JobState::kRunning) absl::SleepFor(absl::Milliseconds(1));
  scheduler.Cancel(*job, absl::CancelledError("late"));
  go.Notify();
  ASSERT_TRUE(AwaitFinished(*job));
  EXPECT_EQ(job->state(), JobState::kSucceeded);
}

TEST(SchedulerTest, SmallJobIsNotStuckBehindLargeOnes) {
  Gate large_a;
  Gate large_b;
  Scheduler scheduler({.workers = 2, .large_job_flops = 100.0});
  std::shared_ptr<Job> first = MustSubmit(scheduler, Spec(large_a.Work(), 1e9));
  ASSERT_TRUE(large_a.AwaitStarted());
  std::shared_ptr<Job> second = MustSubmit(scheduler, Spec(large_b.Work(), 1e9));
  // With two workers, one large job at a time: the second waits although a worker is free...
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(second->state(), JobState::kQueued);
  // ...because that worker is kept for small jobs, which start at once.
  const absl::Time start = absl::Now();
  std::shared_ptr<Job> small = MustSubmit(scheduler, Spec(Instant(), 10.0));
  ASSERT_TRUE(AwaitFinished(*small));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(small->state(), JobState::kSucceeded);
  EXPECT_EQ(first->state(), JobState::kRunning);

  large_a.Release();
  ASSERT_TRUE(large_b.AwaitStarted());
  large_b.Release();
  ASSERT_TRUE(AwaitFinished(*second));
}

TEST(SchedulerTest, OneWorkerRunsLargeJobsToo) {
  Scheduler scheduler({.workers = 1, .large_job_flops = 100.0});
  std::shared_ptr<Job> large = MustSubmit(scheduler, Spec(Instant(), 1e9));
  ASSERT_TRUE(AwaitFinished(*large));
  EXPECT_EQ(large->state(), JobState::kSucceeded);
}

TEST(SchedulerTest, JobsStartInSubmissionOrderAcrossLanes) {
  Gate blocker;
  std::mutex mutex;
  std::vector<std::string> order;
  auto record = [&](std::string name) -> JobWork {
    return [&, name](JobControl&) {
      std::lock_guard<std::mutex> lock(mutex);
      order.push_back(name);
      return absl::OkStatus();
    };
  };
  Scheduler scheduler({.workers = 1, .large_job_flops = 100.0});
  std::shared_ptr<Job> running = MustSubmit(scheduler, Spec(blocker.Work()));
  ASSERT_TRUE(blocker.AwaitStarted());
  std::vector<std::shared_ptr<Job>> jobs = {
      MustSubmit(scheduler, Spec(record("large 1"), 1e9)),
      MustSubmit(scheduler, Spec(record("small 1"), 1.0)),
      MustSubmit(scheduler, Spec(record("large 2"), 1e9)),
      MustSubmit(scheduler, Spec(record("small 2"), 1.0)),
  };
  blocker.Release();
  for (const auto& job : jobs) ASSERT_TRUE(AwaitFinished(*job));
  EXPECT_THAT(order, ElementsAre("large 1", "small 1", "large 2", "small 2"));
}

TEST(SchedulerTest, SnapshotShowsProgressTimesAndEta) {
  Gate gate;
  Scheduler scheduler({.workers = 1});
  std::shared_ptr<Job> job = MustSubmit(scheduler, Spec(gate.Work(/*progress=*/0.25)));
  ASSERT_TRUE(gate.AwaitStarted());
  absl::SleepFor(absl::Milliseconds(40));
  const JobSnapshot snapshot = job->Snapshot();
  EXPECT_EQ(snapshot.state, JobState::kRunning);
  EXPECT_EQ(snapshot.progress, 0.25);
  EXPECT_GE(snapshot.running, absl::Milliseconds(40));
  ASSERT_TRUE(snapshot.eta.has_value());
  // A quarter done after `running`: three times as long again.
  EXPECT_NEAR(absl::ToDoubleSeconds(*snapshot.eta), 3 * absl::ToDoubleSeconds(snapshot.running),
              0.05);
  gate.Release();
  ASSERT_TRUE(AwaitFinished(*job));
  const JobSnapshot done = job->Snapshot();
  EXPECT_FALSE(done.eta.has_value());
  EXPECT_EQ(done.progress, 1.0);
  // Frozen once finished.
  absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(job->Snapshot().running, done.running);
}

TEST(SchedulerTest, RememberedJobsHaveDistinctUnguessableIds) {
  Scheduler scheduler({.workers = 1});
  std::shared_ptr<Job> a = MustSubmit(scheduler, Spec(Instant()), /*remember=*/true);
  std::shared_ptr<Job> b = MustSubmit(scheduler, Spec(Instant()), /*remember=*/true);
  std::shared_ptr<Job> anonymous = MustSubmit(scheduler, Spec(Instant()));
  EXPECT_THAT(a->id(), MatchesRegex("[0-9a-f]{32}"));
  EXPECT_NE(a->id(), b->id());
  EXPECT_EQ(anonymous->id(), "");
  absl::StatusOr<std::shared_ptr<Job>> found = scheduler.Find(a->id());
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->get(), a.get());
}

TEST(SchedulerTest, UnknownIdIsNotFound) {
  Scheduler scheduler({.workers = 1});
  EXPECT_EQ(scheduler.Find("0123456789abcdef0123456789abcdef").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(scheduler.Find("").status().code(), absl::StatusCode::kNotFound);
}

TEST(SchedulerTest, FinishedJobIsForgottenAfterItsTtl) {
  Gate gate;
  constexpr absl::Duration kTtl = absl::Milliseconds(100);
  Scheduler scheduler({.workers = 1, .job_ttl = kTtl});
  std::shared_ptr<Job> job = MustSubmit(scheduler, Spec(gate.Work()), /*remember=*/true);
  // Kept while it runs, however long: the TTL counts from the end.
  absl::SleepFor(2 * kTtl);
  EXPECT_TRUE(scheduler.Find(job->id()).ok());
  gate.Release();
  ASSERT_TRUE(AwaitFinished(*job));
  const absl::Time finished = absl::Now();
  EXPECT_TRUE(scheduler.Find(job->id()).ok());
  while (scheduler.Find(job->id()).ok() && absl::Now() - finished < kPatience) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  const absl::Duration kept = absl::Now() - finished;
  absl::Status gone = scheduler.Find(job->id()).status();
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(gone.message()), HasSubstr("--job_ttl"));
  EXPECT_GE(kept, kTtl - absl::Milliseconds(10));
  EXPECT_LT(kept, kTtl + absl::Seconds(1));
}

TEST(SchedulerTest, ThrowingWorkFailsThatJobOnly) {
  Scheduler scheduler({.workers = 1});
  std::shared_ptr<Job> out_of_memory =
      MustSubmit(scheduler, Spec([](JobControl&) -> absl::Status { throw std::bad_alloc(); }));
  std::shared_ptr<Job> exploded = MustSubmit(scheduler, Spec([](JobControl&) -> absl::Status {
                                               throw std::runtime_error("kernel exploded");
                                             }));
  std::shared_ptr<Job> fine = MustSubmit(scheduler, Spec(Instant()));
  ASSERT_TRUE(AwaitFinished(*fine));
  ASSERT_TRUE(AwaitFinished(*out_of_memory));
  ASSERT_TRUE(AwaitFinished(*exploded));
  EXPECT_EQ(out_of_memory->status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(exploded->status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(exploded->status().message()), HasSubstr("kernel exploded"));
  EXPECT_EQ(fine->state(), JobState::kSucceeded);
}

TEST(SchedulerTest, WorkIsReleasedBeforeTheJobIsSeenFinished) {
  Scheduler scheduler({.workers = 1});
  auto buffer = std::make_shared<int>(7);
  std::weak_ptr<int> watch = buffer;
  std::shared_ptr<Job> job = MustSubmit(
      scheduler, Spec([buffer = std::move(buffer)](JobControl&) { return absl::OkStatus(); }));
  ASSERT_TRUE(AwaitFinished(*job));
  EXPECT_TRUE(watch.expired());
}

TEST(SchedulerTest, DestructionEndsQueuedAndRunningJobsUnavailable) {
  Gate gate;
  std::shared_ptr<Job> running;
  std::shared_ptr<Job> queued;
  {
    Scheduler scheduler({.workers = 1});
    running = MustSubmit(scheduler, Spec(gate.Work()));
    ASSERT_TRUE(gate.AwaitStarted());
    queued = MustSubmit(scheduler, Spec(Instant()));
  }
  EXPECT_EQ(running->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(queued->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(queued->status().message()), HasSubstr("shutting down"));
}

// Records what the scheduler tells it.
class RecordingObserver final : public SchedulerObserver {
 public:
  void QueueDepthChanged(int depth) override {
    std::lock_guard<std::mutex> lock(mutex_);
    depths_.push_back(depth);
  }
  void JobStarted(const Job& job, absl::Duration) override {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back("start " + job.op());
  }
  void JobEnded(absl::string_view op, const absl::Status& status) override {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(absl::StrCat("end ", op, " ", absl::StatusCodeToString(status.code())));
  }
  std::vector<int> depths() {
    std::lock_guard<std::mutex> lock(mutex_);
    return depths_;
  }
  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_;
  }

 private:
  std::mutex mutex_;
  std::vector<int> depths_;
  std::vector<std::string> events_;
};

TEST(SchedulerTest, ObserverSeesQueueDepthStartsAndEnds) {
  RecordingObserver observer;
  Gate gate;
  {
    Scheduler scheduler({.workers = 1, .queue_depth = 1, .observer = &observer});
    std::shared_ptr<Job> running = MustSubmit(scheduler, Spec(gate.Work()));
    ASSERT_TRUE(gate.AwaitStarted());
    std::shared_ptr<Job> queued = MustSubmit(scheduler, Spec(Instant()));
    EXPECT_FALSE(scheduler.Submit(Spec(Instant()), false).ok());  // full
    scheduler.Cancel(*queued, absl::CancelledError("no"));
    gate.Release();
    ASSERT_TRUE(AwaitFinished(*running));
  }
  EXPECT_THAT(observer.depths(), ElementsAre(1, 0, 1, 0));
  EXPECT_THAT(observer.events(), ElementsAre("start test", "end test RESOURCE_EXHAUSTED",
                                             "end test CANCELLED", "end test OK"));
}

// Admits jobs while their device_bytes fit in `capacity`.
class CountingAdmission final : public JobAdmission {
 public:
  explicit CountingAdmission(uint64_t capacity) : capacity_(capacity) {}
  absl::Status CheckFits(const JobSpec& spec) override {
    if (spec.device_bytes <= capacity_) return absl::OkStatus();
    return absl::ResourceExhaustedError("never fits");
  }
  bool TryAdmit(Job& job) override {
    if (used_ + job.device_bytes() > capacity_) return false;
    used_ += job.device_bytes();
    return true;
  }
  void Release(const Job& job) override { used_ -= job.device_bytes(); }
  uint64_t used() const { return used_; }

 private:
  const uint64_t capacity_;
  uint64_t used_ = 0;  // guarded by the scheduler's lock
};

TEST(SchedulerTest, AdmissionHoldsAJobQueuedUntilItFits) {
  CountingAdmission admission(100);
  Gate big;
  Gate second;
  Scheduler scheduler({.workers = 2, .admission = &admission});
  JobSpec first_spec = Spec(big.Work());
  first_spec.device_bytes = 80;
  std::shared_ptr<Job> first = MustSubmit(scheduler, std::move(first_spec));
  ASSERT_TRUE(big.AwaitStarted());
  JobSpec waiting_spec = Spec(second.Work());
  waiting_spec.device_bytes = 50;
  std::shared_ptr<Job> waiting = MustSubmit(scheduler, std::move(waiting_spec));
  absl::SleepFor(absl::Milliseconds(30));
  EXPECT_EQ(waiting->state(), JobState::kQueued);  // a worker is free, the memory is not

  big.Release();
  ASSERT_TRUE(second.AwaitStarted());
  second.Release();
  ASSERT_TRUE(AwaitFinished(*waiting));
  EXPECT_EQ(waiting->state(), JobState::kSucceeded);
  ASSERT_TRUE(AwaitFinished(*first));
  EXPECT_EQ(admission.used(), 0u);
}

TEST(SchedulerTest, AdmissionRefusesAJobThatNeverFitsAtSubmission) {
  CountingAdmission admission(100);
  Scheduler scheduler({.workers = 1, .admission = &admission});
  JobSpec spec = Spec(Instant());
  spec.device_bytes = 101;
  EXPECT_EQ(scheduler.Submit(std::move(spec), false).status(),
            absl::ResourceExhaustedError("never fits"));
}

// ---- Clients: ownership, the max_jobs quota, fair share ----

JobSpec ClientSpec(JobWork work, const std::string& owner, int max_jobs = 0) {
  JobSpec spec = Spec(std::move(work));
  spec.owner = owner;
  spec.owner_max_jobs = max_jobs;
  return spec;
}

TEST(SchedulerClients, AnotherClientsJobIsNotFound) {
  Scheduler scheduler({.workers = 1});
  absl::StatusOr<std::shared_ptr<Job>> job =
      scheduler.Submit(ClientSpec(Instant(), "alice"), /*remember=*/true);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(scheduler.Find((*job)->id(), "alice").ok());
  const absl::Status other = scheduler.Find((*job)->id(), "bob").status();
  EXPECT_EQ(other.code(), absl::StatusCode::kNotFound);
  // The same answer as for an id that never existed, naming no one.
  EXPECT_EQ(scheduler.Find("0123456789abcdef", "bob").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(other.message()), ::testing::Not(HasSubstr("alice")));
}

TEST(SchedulerClients, MaxJobsCountsQueuedAndRunningJobsOfOneClientOnly) {
  Scheduler scheduler({.workers = 1});
  Gate first;
  Gate second;
  ASSERT_TRUE(scheduler.Submit(ClientSpec(first.Work(), "alice", 2), false).ok());
  ASSERT_TRUE(scheduler.Submit(ClientSpec(second.Work(), "alice", 2), false).ok());
  ASSERT_TRUE(first.AwaitStarted());
  const absl::Status third = scheduler.Submit(ClientSpec(Instant(), "alice", 2), false).status();
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(third.message()), HasSubstr("quota max_jobs"));
  // Another client is not held to alice's quota.
  absl::StatusOr<std::shared_ptr<Job>> bob =
      scheduler.Submit(ClientSpec(Instant(), "bob", 2), false);
  EXPECT_TRUE(bob.ok()) << bob.status();
  // Once one of alice's jobs ends, she may submit again.
  first.Release();
  second.Release();
  ASSERT_TRUE(scheduler.WaitUntilIdle(absl::Now() + kPatience));
  EXPECT_TRUE(scheduler.Submit(ClientSpec(Instant(), "alice", 2), false).ok());
}

TEST(SchedulerClients, AClientWithABacklogDoesNotDelayAnotherClientsJob) {
  Scheduler scheduler({.workers = 2});
  Gate running_a;
  Gate running_b;
  ASSERT_TRUE(scheduler.Submit(ClientSpec(running_a.Work(), "alice"), false).ok());
  ASSERT_TRUE(scheduler.Submit(ClientSpec(running_b.Work(), "alice"), false).ok());
  ASSERT_TRUE(running_a.AwaitStarted());
  ASSERT_TRUE(running_b.AwaitStarted());
  std::mutex order_mutex;
  std::vector<std::string> order;
  const auto recording = [&](std::string name) -> JobWork {
    return [&, name](JobControl&) {
      std::lock_guard<std::mutex> lock(order_mutex);
      order.push_back(name);
      return absl::OkStatus();
    };
  };
  // alice's backlog first, then one job of bob's.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        scheduler.Submit(ClientSpec(recording(absl::StrCat("alice", i)), "alice"), false).ok());
  }
  ASSERT_TRUE(scheduler.Submit(ClientSpec(recording("bob"), "bob"), false).ok());
  // One worker comes free while alice still runs a job: bob's goes first.
  running_a.Release();
  const absl::Time give_up = absl::Now() + kPatience;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(order_mutex);
      if (!order.empty() || absl::Now() > give_up) break;
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  running_b.Release();
  ASSERT_TRUE(scheduler.WaitUntilIdle(absl::Now() + kPatience));
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0], "bob");
}

}  // namespace
}  // namespace matrixd::server
